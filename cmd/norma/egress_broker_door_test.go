package main

import (
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/norma-run/norma/sandbox/sandboxtest"
	"github.com/norma-run/norma/secret/secrettest"
)

// egressPlugin installs the egress test server (testdata/egressserver) as
// a plugin allowed to GET and POST /page on origin, with the vault value
// set, in a workspace that admits loopback; it returns home and the
// workspace.
func egressPlugin(t *testing.T, origin string, env []string) (home, ws string) {
	t.Helper()
	work := t.TempDir()
	home, ws = filepath.Join(work, "home"), filepath.Join(work, "ws")
	os.MkdirAll(ws, 0o755)
	set := exec.Command(normaBin(t), "--home", home, "secret", "set", "deploy_token")
	set.Stdin = strings.NewReader(egressVault + "\n")
	if out, err := set.CombinedOutput(); err != nil {
		t.Fatalf("secret set: %v\n%s", err, out)
	}
	pkg := filepath.Join(work, "pkg")
	os.MkdirAll(filepath.Join(pkg, "bin"), 0o755)
	server, err := os.ReadFile("testdata/egressserver/server.py")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(pkg, "bin", "server"), server, 0o755)
	perms := fmt.Sprintf(`permissions:
  network:
    requests:
      - {origin: %[1]q, methods: [GET, POST], paths: ["/page", "/page/{id}"]}
  process:
    spawn: deny
`, origin)
	os.WriteFile(filepath.Join(pkg, "manifest.yaml"), []byte("schema_version: 2\nid: com.example.egress\nversion: 1.0.0\nentrypoint: bin/server\ntools:\n"+
		"  - {name: fetch, risk: read, approval: never}\n  - {name: send, effects: {data: send, external_state: none}, approval: never}\n"+perms), 0o644)
	grant := filepath.Join(work, "grant.yaml")
	os.WriteFile(grant, []byte("schema_version: 2\nkind: grant\n"+perms), 0o644)
	if code, out, errs := doorEnv(t, env, "--home", home, "plugin", "install", "--dev", pkg, "--yes", "--grant", grant); code != 0 {
		t.Fatalf("install: exit %d\n%s%s", code, out, errs)
	}
	os.MkdirAll(filepath.Join(ws, ".norma"), 0o755)
	os.WriteFile(filepath.Join(ws, ".norma", "policy.yaml"), []byte("schema_version: 2\nkind: workspace\npermissions:\n  network:\n    allow_private: [\"127.0.0.1/32\"]\n"), 0o644)
	trustWorkspace(t, env, home, ws)
	return home, ws
}

// TestDoorEgressBroker: a plugin's tools, run by `norma run` in the
// sandbox, send through the broker (which terminates their TLS) to an
// allowed loopback HTTPS origin. A GET by the read-only fetch tool whose
// URL carries a vault value (as written or encoded), a token of each
// family or a card number is refused by the broker (403 SECRET_EGRESS or
// SENSITIVE_DATA_EGRESS, audited); a POST by the send tool, which sends
// data, is refused by the gate before the tool runs. The server receives
// no connection and no byte; then the benign twins reach it.
func TestDoorEgressBroker(t *testing.T) {
	sandboxtest.Require(t)
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("no /usr/bin/python3")
	}
	web := newCountedTLS(t)
	env := []string{"SSL_CERT_FILE=" + web.caFile, "XDG_CONFIG_HOME=" + t.TempDir()}
	home, ws := egressPlugin(t, web.origin, env)
	run := func(calls []string) (map[string]map[string]any, string) {
		t.Helper()
		script := "turns:\n  - tool_calls:\n" + strings.Join(calls, "") + "  - text: done\n"
		p := filepath.Join(t.TempDir(), "script.yaml")
		os.WriteFile(p, []byte(script), 0o644)
		code, out, errs := doorEnv(t, env, "--home", home, "run", "--provider", "scripted", "--script", p, "--workspace", ws, "--yes", "--json", "go")
		if code != 0 {
			t.Fatalf("run: exit %d\n%s%s", code, out, errs)
		}
		for _, c := range egressCases() {
			if len(c.Text) > 12 && strings.Contains(out+errs, c.Text) {
				t.Errorf("%s: the value is in the run's output", c.Name)
			}
		}
		return toolCalls(jsonLines(t, out)), out
	}
	fetch := func(id, u string) string {
		return fmt.Sprintf("      - {id: %s, name: mcp__com.example.egress__fetch, input: {url: %q}}\n", id, u)
	}
	send := func(id, u, body string) string {
		return fmt.Sprintf("      - {id: %s, name: mcp__com.example.egress__send, input: {url: %q, body: %q}}\n", id, u, body)
	}
	cases := egressCases()
	var calls []string
	for i, c := range cases {
		calls = append(calls, fetch(fmt.Sprintf("f%d", i), web.origin+"/page?q="+url.QueryEscape(c.Text)),
			send(fmt.Sprintf("s%d", i), web.origin+"/page", `{"note": `+fmt.Sprintf("%q", c.Text)+`}`))
	}
	got, _ := run(calls)
	for i, c := range cases {
		want := "SECRET_EGRESS"
		if c.Detector == "card-number" || c.Detector == "iban" {
			want = "SENSITIVE_DATA_EGRESS"
		}
		if f := got[fmt.Sprintf("f%d", i)]; f == nil || !strings.Contains(fmt.Sprint(f["result"]), "403 ") || !strings.Contains(fmt.Sprint(f["result"]), want) {
			t.Errorf("fetch %s: %v, want the broker's 403 %s", c.Name, f, want)
		}
		if s := got[fmt.Sprintf("s%d", i)]; s == nil || s["reason"] != want {
			t.Errorf("send %s: %v, want %s", c.Name, s, want)
		}
	}
	if b, n := web.bytes.Load(), web.conns.Load(); b != 0 || n != 0 {
		t.Fatalf("the server received %d bytes on %d connections: %q", b, n, web.got)
	}
	reasons := map[string]int{}
	for _, ev := range auditEvents(t, home) {
		if r, ok := ev["reason"].(string); ok {
			reasons[r]++
		}
	}
	if reasons["SECRET_EGRESS"] < len(cases) || reasons["SENSITIVE_DATA_EGRESS"] < 2 {
		t.Errorf("audited reasons %v", reasons)
	}

	calls = nil
	benign := secrettest.Benign()
	for i, s := range benign {
		calls = append(calls, fetch(fmt.Sprintf("f%d", i), web.origin+"/page?q="+url.QueryEscape(s.Text)),
			send(fmt.Sprintf("s%d", i), web.origin+"/page", s.Text))
	}
	calls = append(calls, send("img", web.origin+"/page/550e8400-e29b-41d4-a716-446655440000", secrettest.Image()))
	got, out := run(calls)
	for id, c := range got {
		if c["reason"] != "ALLOWED" || !strings.Contains(fmt.Sprint(c["result"]), "200 received") {
			t.Errorf("benign %s: %v", id, c)
		}
	}
	if len(got) != 2*len(benign)+1 {
		t.Errorf("%d calls ran, want %d\n%s", len(got), 2*len(benign)+1, out)
	}
	if web.conns.Load() == 0 {
		t.Fatal("the benign requests never reached the server")
	}
}
