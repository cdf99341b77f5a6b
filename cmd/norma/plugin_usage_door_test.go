package main

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/norma-run/norma/manifest"
	"github.com/norma-run/norma/plugin"
	"github.com/norma-run/norma/sandbox/sandboxtest"
	"github.com/norma-run/norma/store"
)

// snapshotTree maps every file under dir to its contents.
func snapshotTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		if d.Type().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			out[p] = string(b)
		}
		return nil
	})
	return out
}

// TestDoorPluginUsage: a plugin declares two network entries, two
// read globs, two secrets and three tools; a `norma run` (scripted
// provider, real sandbox and broker, a loopback API) uses one entry, one
// secret and two tools. `plugin usage` then lists exactly the network
// entry, the secret, the tool and the external writes nothing used, says
// the history is too short to call them unused, shows the globs as not
// observable (the sandbox enforces them, no event shows a use) and
// suggests a manifest that parses, narrows and widens nothing; a path in
// the manifest with a bidi override and an escape sequence is printed
// escaped. The plugin's files, grant and state are byte for byte what
// they were. The install and the removal left consent records in the
// store.
func TestDoorPluginUsage(t *testing.T) {
	sandboxtest.Require(t)
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("no /usr/bin/python3")
	}
	var mu sync.Mutex
	var auth []string
	var paths []string
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auth, paths = append(auth, r.Header.Get("Authorization")), append(paths, r.Method+" "+r.URL.Path)
		mu.Unlock()
		fmt.Fprint(w, "item-body-3e1f")
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	origin := "http://" + ln.Addr().String()

	work, ws := t.TempDir(), t.TempDir()
	home := filepath.Join(work, "home")
	vault := "VAULT-" + runCanary + "-a81c"
	for _, s := range []string{"api_token", "spare_token"} {
		set := exec.Command(normaBin(t), "--home", home, "secret", "set", s)
		set.Stdin = strings.NewReader(vault + "\n")
		if out, err := set.CombinedOutput(); err != nil {
			t.Fatalf("secret set: %v\n%s", err, out)
		}
	}
	pkg := filepath.Join(work, "pkg")
	os.MkdirAll(filepath.Join(pkg, "bin"), 0o755)
	server, err := os.ReadFile("testdata/usageserver/server.py")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(pkg, "bin", "server"), server, 0o755)
	const evil = `/items/\u202e\e[31mred` // YAML escapes: a bidi override and ESC
	perms := fmt.Sprintf(`permissions:
  filesystem:
    read: ["workspace://docs/**", "workspace://src/**"]
  network:
    requests:
      - {origin: %[1]q, methods: [GET], paths: ["/items/{id}"]}
      - {origin: %[1]q, methods: [POST], paths: ["%[2]s"]}
  secrets:
    - {name: api_token, purpose: %[1]q, inject_as: brokered_header, env: API_TOKEN}
    - {name: spare_token, purpose: "https://spare.example.invalid", inject_as: brokered_header, env: SPARE_TOKEN}
  process:
    spawn: deny
  external_writes:
    default: approval_required
`, origin, evil)
	id := "com.example.usage"
	os.WriteFile(filepath.Join(pkg, "manifest.yaml"), []byte("schema_version: 2\nid: "+id+"\nversion: 1.0.0\nentrypoint: bin/server\ntools:\n"+
		"  - {name: fetch, risk: read, approval: never}\n  - {name: read, risk: read, approval: never}\n  - {name: post, risk: external_write, approval: per_action}\n"+perms), 0o644)
	grant := filepath.Join(work, "grant.yaml")
	os.WriteFile(grant, []byte("schema_version: 2\nkind: grant\n"+perms), 0o644)
	if code, out, errs := door(t, "--home", home, "plugin", "install", "--dev", pkg, "--yes", "--grant", grant); code != 0 {
		t.Fatalf("install: exit %d\n%s%s", code, out, errs)
	}
	os.MkdirAll(filepath.Join(ws, ".norma"), 0o755)
	os.WriteFile(filepath.Join(ws, ".norma", "policy.yaml"), []byte("schema_version: 2\nkind: workspace\npermissions:\n  network:\n    allow_private: [\"127.0.0.1/32\"]\n"), 0o644)
	trustWorkspace(t, nil, home, ws)
	os.MkdirAll(filepath.Join(ws, "docs"), 0o755)
	os.WriteFile(filepath.Join(ws, "docs", "a.md"), []byte("doc-body-77c2"), 0o644)

	script := filepath.Join(work, "script.yaml")
	os.WriteFile(script, []byte(fmt.Sprintf("turns:\n  - tool_calls:\n      - {id: f, name: mcp__%[1]s__fetch, input: {url: %[2]q}}\n"+
		"      - {id: r, name: mcp__%[1]s__read, input: {path: %[3]q}}\n  - text: done\n", id, origin+"/items/7", filepath.Join(ws, "docs", "a.md"))), 0o644)
	code, out, errs := door(t, "--home", home, "run", "--provider", "scripted", "--script", script, "--workspace", ws, "--yes", "--json", "go")
	calls := toolCalls(jsonLines(t, out))
	if code != 0 || !strings.Contains(fmt.Sprint(calls["f"]["result"]), "200 item-body-3e1f") || !strings.Contains(fmt.Sprint(calls["r"]["result"]), "doc-body-77c2") {
		t.Fatalf("run: exit %d\n%s%s", code, out, errs)
	}
	mu.Lock()
	if !slices.Equal(paths, []string{"GET /items/7"}) || !slices.Equal(auth, []string{"Bearer " + vault}) {
		t.Fatalf("the API saw %q with %q; want one GET with the real token", paths, auth)
	}
	mu.Unlock()

	pdir := filepath.Join(home, "plugins", id)
	before := snapshotTree(t, pdir)
	code, jout, errs := door(t, "--home", home, "plugin", "usage", id, "--json")
	if code != 0 {
		t.Fatalf("plugin usage --json: exit %d\n%s%s", code, jout, errs)
	}
	checkJSONKeys(t, "plugin usage --json", jout)
	var rep struct {
		NotUsed         []string `json:"not_used"`
		HistoryComplete bool     `json:"history_complete"`
		Suggested       string   `json:"suggested_manifest"`
		Entries         []struct {
			ID         string
			Observable bool
			Uses       int
		}
	}
	if err := json.Unmarshal([]byte(jout), &rep); err != nil {
		t.Fatalf("%v\n%s", err, jout)
	}
	// Tools are normalized in name order: fetch, post, read.
	wantNotUsed := []string{"permissions.network.requests[1].methods[0].paths[0]", "permissions.secrets[1]", "permissions.external_writes.default", "tools[1]"}
	if !slices.Equal(rep.NotUsed, wantNotUsed) || rep.HistoryComplete {
		t.Errorf("not used %q (history complete %v); want exactly %q and an incomplete history", rep.NotUsed, rep.HistoryComplete, wantNotUsed)
	}
	for _, e := range rep.Entries {
		if strings.HasPrefix(e.ID, "permissions.filesystem.") && (e.Observable || e.Uses != 0) {
			t.Errorf("%s: observable %v uses %d; the sandbox enforces globs, no event can show a use", e.ID, e.Observable, e.Uses)
		}
	}
	installed, err := manifest.ParseFile(filepath.Join(pdir, "1.0.0", "manifest.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	sug, err := manifest.Parse("suggested.yaml", []byte(rep.Suggested))
	if err != nil {
		t.Fatalf("the suggested manifest does not parse: %v\n%s", err, rep.Suggested)
	}
	if d := manifest.Diff(installed, sug); len(d.Added)+len(d.Widened) != 0 || len(d.Removed) == 0 {
		t.Errorf("suggestion delta %+v; want only removals", d)
	}
	p := sug.Permissions
	if len(p.Network.Requests) != 1 || p.Network.Requests[0].Methods[0] != "GET" || len(p.Secrets) != 1 || p.Secrets[0].Name != "api_token" ||
		len(p.Filesystem.Read) != 2 || len(sug.Tools) != 2 || p.ExternalWrites.Default != "deny" {
		t.Errorf("suggested manifest:\n%s", rep.Suggested)
	}

	code, text, errs := door(t, "--home", home, "plugin", "usage", id)
	if code != 0 {
		t.Fatalf("plugin usage: exit %d\n%s%s", code, text, errs)
	}
	for _, want := range append(wantNotUsed, "too short to call it unused", "not used in the history so far",
		"not observable", "workspace://docs/**", "workspace://src/**", `/items/\u202e\x1b[31mred`, "suggested manifest", "diff:", "-      name: spare_token") {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	if strings.ContainsAny(text, "\x1b\u202e") {
		t.Errorf("a plugin-controlled escape reached the terminal unescaped:\n%q", text)
	}
	if after := snapshotTree(t, pdir); !maps.Equal(before, after) {
		t.Errorf("plugin usage changed the plugin's files")
	}
	// The broker's decision names the entry it matched.
	declared := 0
	for _, e := range auditEvents(t, home, "--plugin", id, "--type", "capability_decision") {
		if d, _ := e["detail"].(map[string]any); d["declared"] == "plugin:permissions.network.requests[0].paths[0]" && d["method"] == "GET" {
			declared++
		}
	}
	if declared != 1 {
		t.Errorf("%d net.request decisions name plugin:permissions.network.requests[0].paths[0] for GET, want 1", declared)
	}

	// The install and the removal are consent records in the store, with
	// what the grant held, who and where.
	if code, out, errs := door(t, "--home", home, "plugin", "remove", id); code != 0 {
		t.Fatalf("remove: exit %d\n%s%s", code, out, errs)
	}
	db, err := store.Open(t.Context(), filepath.Join(home, store.FileName))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	recs, err := db.Consents(t.Context(), plugin.ConsentFilter{Plugin: id})
	if err != nil {
		t.Fatal(err)
	}
	hostname, _ := os.Hostname()
	if len(recs) != 2 || recs[0].Action != plugin.ConsentInstall || recs[1].Action != plugin.ConsentRevoke ||
		recs[0].Host != hostname || recs[0].Who != plugin.DefaultWho() || recs[0].ManifestDigest != installed.Digest() ||
		!slices.Equal(recs[0].Granted[plugin.GroupSecrets], []string{"api_token", "spare_token"}) || len(recs[1].Granted) != 0 {
		t.Errorf("consent records: %+v", recs)
	}
	// Once removed there is nothing to report on; a window of no days is
	// a usage error.
	if code, out, errs := door(t, "--home", home, "plugin", "usage", id); code != exitFailed || !strings.Contains(errs, "PLUGIN_NOT_INSTALLED") {
		t.Errorf("usage of a removed plugin: exit %d\n%s%s", code, out, errs)
	}
	if code, out, errs := door(t, "--home", home, "plugin", "usage", id, "--days", "0"); code != exitUsage {
		t.Errorf("--days 0: exit %d\n%s%s", code, out, errs)
	}
}
