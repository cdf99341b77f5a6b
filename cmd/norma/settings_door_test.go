package main

import (
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// settingsFile holds deny, ask and allow rules, a PreToolUse hook that
// blocks, one that rewrites, a WebFetch destination and the mode. %[1]s is
// the TLS server's origin.
const settingsFile = `permissions:
  allow: ["Write(out/**)", "Bash(echo settings-ok)"]
  ask: ["Read(docs/private/**)"]
  deny: ["Read(secrets/**)", "Bash(rm:*)"]
  defaultMode: dontAsk
hooks:
  PreToolUse:
    - matcher: "Read"
      hooks:
        - {type: command, command: "$CLAUDE_PROJECT_DIR/.norma/hooks/block.sh", timeout: 10}
    - matcher: "Write"
      hooks:
        - {type: command, command: "./.norma/hooks/rewrite.sh"}
network:
  requests:
    - {origin: "%[1]s", methods: [GET], paths: ["/page"]}
  allow_private: ["127.0.0.1/32"]
`

const blockHook = `#!/bin/sh
in=$(cat)
case "$in" in
*blocked*) echo "the settings hook refuses blocked files" >&2; exit 2 ;;
esac
exit 0
`

const rewriteHook = `#!/bin/sh
cat >/dev/null
printf '{"hookSpecificOutput":{"hookEventName":"PreToolUse","updatedInput":{"path":"out/a.md","content":"rewritten by the hook"}}}'
`

// tlsWeb is a loopback TLS server recording the paths it is asked for, and
// a CA file the norma process trusts it by (SSL_CERT_FILE).
type tlsWeb struct {
	origin, caFile string
	mu             sync.Mutex
	paths          []string
}

func newTLSWeb(t *testing.T) *tlsWeb {
	w := &tlsWeb{}
	srv := httptest.NewTLSServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w.mu.Lock()
		w.paths = append(w.paths, r.URL.Path)
		w.mu.Unlock()
		fmt.Fprint(rw, "fetched over TLS")
	}))
	t.Cleanup(srv.Close)
	w.origin = srv.URL
	w.caFile = filepath.Join(t.TempDir(), "ca.pem")
	pemData := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(w.caFile, pemData, 0o644); err != nil {
		t.Fatal(err)
	}
	return w
}

func (w *tlsWeb) asked() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.paths...)
}

// TestDoorSettings: one settings file, through the built binary. A typo is
// reported with its file, line and column and runs nothing; then every
// rule and hook takes effect in `run --json`, and `policy explain` gives
// the same answer for every call.
func TestDoorSettings(t *testing.T) {
	e := newRunEnv(t)
	web := newTLSWeb(t)
	env := []string{"SSL_CERT_FILE=" + web.caFile, "XDG_CONFIG_HOME=" + t.TempDir()}
	for name, body := range map[string]string{
		".norma/hooks/block.sh": blockHook, ".norma/hooks/rewrite.sh": rewriteHook,
		"docs/blocked.md": "b\n", "docs/private/p.md": "p\n", "secrets/key": "k\n",
	} {
		p := filepath.Join(e.ws, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	settingsPath := filepath.Join(e.ws, ".norma", "settings.yaml")
	good := fmt.Sprintf(settingsFile, web.origin)

	// A typo: a precise error, and nothing runs.
	os.WriteFile(settingsPath, []byte(strings.Replace(good, "  ask:", "  aks:", 1)), 0o644)
	code, out, errs := doorEnv(t, env, "--home", e.home, "run", "--workspace", e.ws, "--provider", "scripted",
		"--script", e.script(t, "turns:\n  - text: hi\n"), "--json", "go")
	want := settingsPath + `:3:3: permissions.aks: unknown field "aks" (did you mean "ask"?)`
	if code != exitFailed || !strings.Contains(errs, want) || strings.Contains(out, "session_started") {
		t.Fatalf("typo: exit %d, want %d and %q\nstdout %s\nstderr %s", code, exitFailed, want, out, errs)
	}

	os.WriteFile(settingsPath, []byte(good), 0o644)
	// Workspace hooks run only once trusted.
	if code, out, errs := doorEnv(t, env, "--home", e.home, "hooks", "trust", "--workspace", e.ws); code != 0 || strings.Count(out, "trusted ") != 2 {
		t.Fatalf("hooks trust: exit %d\n%s%s", code, out, errs)
	}
	trustWorkspace(t, env, e.home, e.ws)
	calls := []struct{ id, tool, input, decision, reason string }{
		{"allowed-write", "Write", `{"path":"out/a.md","content":"from the model"}`, "allow", "ALLOWED"},
		{"no-rule-write", "Write", `{"path":"b.md","content":"x"}`, "deny", "MODE_DENIED"},
		{"ask-rule", "Read", `{"path":"docs/private/p.md"}`, "deny", "MODE_DENIED"},
		{"deny-rule", "Read", `{"path":"secrets/key"}`, "deny", "RULE_DENIED"},
		{"hook-block", "Read", `{"path":"docs/blocked.md"}`, "deny", "HOOK_BLOCKED"},
		{"plain-read", "Read", `{"path":"docs/intro.md"}`, "allow", "ALLOWED"},
		{"allow-bash", "Bash", `{"command":"echo settings-ok"}`, "allow", "ALLOWED"},
		{"deny-bash", "Bash", `{"command":"rm -rf docs"}`, "deny", "RULE_DENIED"},
		{"fetch", "WebFetch", `{"url":"` + web.origin + `/page"}`, "allow", "ALLOWED"},
		{"fetch-other", "WebFetch", `{"url":"` + web.origin + `/admin"}`, "deny", "NETWORK_PATH_DENIED"},
	}
	var script strings.Builder
	script.WriteString("turns:\n  - tool_calls:\n")
	for _, c := range calls {
		fmt.Fprintf(&script, "      - {id: %s, name: %s, input: %s}\n", c.id, c.tool, c.input)
	}
	script.WriteString("  - text: done\n")
	code, out, errs = doorEnv(t, env, "--home", e.home, "run", "--workspace", e.ws, "--provider", "scripted",
		"--script", e.script(t, script.String()), "--json", "go")
	if code != 0 {
		t.Fatalf("run: exit %d\n%s%s", code, out, errs)
	}
	events := jsonLines(t, out)
	if events[0]["mode"] != "dontAsk" {
		t.Errorf("the settings' defaultMode was not used: %v", events[0])
	}
	got := toolCalls(events)
	for _, c := range calls {
		ran := got[c.id]
		if ran == nil || ran["decision"] != c.decision || ran["reason"] != c.reason {
			t.Errorf("run %s: %v, want %s %s", c.id, ran, c.decision, c.reason)
		}
		code, out, errs := doorEnv(t, env, "--home", e.home, "policy", "explain", "--workspace", e.ws,
			"--tool", c.tool, "--input", c.input, "--json")
		var ex map[string]any
		if code != 0 || json.Unmarshal([]byte(out), &ex) != nil {
			t.Errorf("explain %s: exit %d %s%s", c.id, code, out, errs)
			continue
		}
		if ex["decision"] != c.decision || ex["reason"] != c.reason {
			t.Errorf("explain %s = %v %v, want %s %s", c.id, ex["decision"], ex["reason"], c.decision, c.reason)
		}
	}
	// The rewrite took effect: the file holds the hook's content.
	if b, err := os.ReadFile(filepath.Join(e.ws, "out", "a.md")); err != nil || string(b) != "rewritten by the hook" {
		t.Errorf("out/a.md = %q, %v; want the hook's rewrite", b, err)
	}
	if _, err := os.Stat(filepath.Join(e.ws, "b.md")); err == nil {
		t.Error("a denied write reached the disk")
	}
	if p := web.asked(); len(p) != 1 || p[0] != "/page" {
		t.Errorf("the TLS server saw %v, want exactly /page", p)
	}
	// `settings show` names the file and line of each rule.
	code, out, _ = doorEnv(t, env, "--home", e.home, "settings", "show", "--workspace", e.ws)
	if code != 0 || !strings.Contains(out, `"Read(secrets/**)"`) || !strings.Contains(out, settingsPath+":4:") {
		t.Errorf("settings show: exit %d\n%s", code, out)
	}
}

// TestDoorUntrustedHookDenies: a workspace hook whose program is not
// trusted (or changed after trust) denies the calls it gates; nothing runs.
func TestDoorUntrustedHookDenies(t *testing.T) {
	e := newRunEnv(t)
	env := []string{"XDG_CONFIG_HOME=" + t.TempDir()}
	os.MkdirAll(filepath.Join(e.ws, ".norma", "hooks"), 0o755)
	hookPath := filepath.Join(e.ws, ".norma", "hooks", "ok.sh")
	os.WriteFile(hookPath, []byte("#!/bin/sh\nexit 0\n"), 0o755)
	os.WriteFile(filepath.Join(e.ws, ".norma", "settings.yaml"), []byte(`permissions:
  allow: ["Write(out/**)"]
hooks:
  PreToolUse:
    - matcher: "Write"
      hooks:
        - {type: command, command: "./.norma/hooks/ok.sh"}
`), 0o644)
	trustWorkspace(t, env, e.home, e.ws)
	script := e.script(t, "turns:\n  - tool_calls:\n      - {id: w, name: Write, input: {path: out/x.md, content: x}}\n  - text: done\n")
	check := func(label, wantReason string, wantFile bool) {
		t.Helper()
		os.Remove(filepath.Join(e.ws, "out", "x.md"))
		code, out, errs := doorEnv(t, env, "--home", e.home, "run", "--workspace", e.ws, "--provider", "scripted", "--script", script, "--json", "go")
		if code != 0 {
			t.Fatalf("%s: exit %d\n%s%s", label, code, out, errs)
		}
		if c := toolCalls(jsonLines(t, out))["w"]; c == nil || c["reason"] != wantReason {
			t.Errorf("%s: %v, want reason %s", label, c, wantReason)
		}
		if _, err := os.Stat(filepath.Join(e.ws, "out", "x.md")); (err == nil) != wantFile {
			t.Errorf("%s: file written = %v, want %v", label, err == nil, wantFile)
		}
	}
	check("untrusted", "HOOK_FAILED", false)
	if code, out, errs := doorEnv(t, env, "--home", e.home, "hooks", "trust", "--workspace", e.ws); code != 0 {
		t.Fatalf("trust: %d %s%s", code, out, errs)
	}
	check("trusted", "ALLOWED", true)
	os.WriteFile(hookPath, []byte("#!/bin/sh\n# changed after trust\nexit 0\n"), 0o755)
	check("changed", "HOOK_FAILED", false)
}

// TestDoorAgentCannotWriteSettings: the agent can neither write nor read
// the workspace's settings files, with a tool or with the shell, so it
// cannot grant itself rules for the next run.
func TestDoorAgentCannotWriteSettings(t *testing.T) {
	e := newRunEnv(t)
	env := []string{"XDG_CONFIG_HOME=" + t.TempDir()}
	os.MkdirAll(filepath.Join(e.ws, ".norma"), 0o755)
	script := e.script(t, `turns:
  - tool_calls:
      - {id: w1, name: Write, input: {path: .norma/settings.local.yaml, content: "permissions: {allow: [\"Bash(rm:*)\"]}"}}
      - {id: w2, name: Write, input: {path: .norma/settings.yaml, content: "permissions: {allow: [\"Bash(rm:*)\"]}"}}
      - {id: b1, name: Bash, input: {command: "echo 'permissions: {allow: [Bash(rm:*)]}' > .norma/settings.local.yaml"}}
  - text: done
`)
	code, out, errs := doorEnv(t, env, "--home", e.home, "run", "--workspace", e.ws, "--provider", "scripted",
		"--script", script, "--json", "--yes", "go")
	if code != 0 {
		t.Fatalf("run: exit %d\n%s%s", code, out, errs)
	}
	calls := toolCalls(jsonLines(t, out))
	for _, id := range []string{"w1", "w2", "b1"} {
		if c := calls[id]; c == nil || c["reason"] != "FILESYSTEM_WRITE_DENIED" {
			t.Errorf("%s: %v, want FILESYSTEM_WRITE_DENIED", id, c)
		}
	}
	for _, f := range []string{"settings.yaml", "settings.local.yaml"} {
		if _, err := os.Stat(filepath.Join(e.ws, ".norma", f)); err == nil {
			t.Errorf(".norma/%s was written", f)
		}
	}
}

// TestDoorHookInterpreterRefused: a workspace hook may not name a host
// interpreter with workspace text as its argument — trusting /bin/sh's
// content would let any script run. Trust refuses it, and a run refuses
// to start with it; nothing runs.
func TestDoorHookInterpreterRefused(t *testing.T) {
	e := newRunEnv(t)
	env := []string{"XDG_CONFIG_HOME=" + t.TempDir()}
	os.MkdirAll(filepath.Join(e.ws, ".norma"), 0o755)
	marker := filepath.Join(e.ws, "ran")
	os.WriteFile(filepath.Join(e.ws, "x.sh"), []byte("touch "+marker+"\n"), 0o644)
	os.WriteFile(filepath.Join(e.ws, ".norma", "settings.yaml"), []byte(`hooks:
  SessionStart:
    - hooks:
        - {type: command, command: "/bin/sh ./x.sh"}
`), 0o644)
	trustWorkspace(t, env, e.home, e.ws) // the user accepts the file; the hook is still refused
	if code, out, errs := doorEnv(t, env, "--home", e.home, "hooks", "trust", "--workspace", e.ws); code != exitFailed || !strings.Contains(errs, "must be a file in the workspace") {
		t.Errorf("hooks trust: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs := doorEnv(t, env, "--home", e.home, "run", "--workspace", e.ws, "--provider", "scripted",
		"--script", e.script(t, "turns:\n  - text: hi\n"), "--json", "go")
	if code != exitFailed || !strings.Contains(errs, "must be a file in the workspace") {
		t.Errorf("run: exit %d\n%s%s", code, out, errs)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the workspace script ran")
	}
}
