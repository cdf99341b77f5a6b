package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestDoorApprovalPreviewRedacted: a headless run asks to Edit a line two
// lines below a token (the diff's context shows it) and a vault secret.
// The approval is stored with its preview: the run's --json event,
// `approvals list`, `approvals show` (text and --json) and every file of
// the state directory hold the masks, never the values. (norma run once
// built its approval service without the run's redactor.)
func TestDoorApprovalPreviewRedacted(t *testing.T) {
	e := newRunEnv(t)
	vault := "VAULT-" + runCanary + "-41c9e0"
	gh := "gh" + "p_" + "Zq4W9xR2mT7vL1nB8kC3pY6dF0sH5jG2aE9u"
	set := exec.Command(normaBin(t), "--home", e.home, "secret", "set", "db_password")
	set.Stdin = strings.NewReader(vault + "\n")
	if out, err := set.CombinedOutput(); err != nil {
		t.Fatalf("secret set: %v\n%s", err, out)
	}
	if err := os.WriteFile(filepath.Join(e.ws, "notes.txt"), []byte("token: "+gh+"\npassword: "+vault+"\nversion: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	script := e.script(t, `turns:
  - tool_calls:
      - {id: e1, name: Edit, input: {path: notes.txt, old_string: "version: 1", new_string: "version: 2"}}
  - text: "Done."
`)
	code, out, errs := door(t, "--home", e.home, "run", "--workspace", e.ws, "--script", script, "--json", "--approval-wait", "0s", "bump")
	if code != 0 {
		t.Fatalf("run: exit %d\n%s%s", code, out, errs)
	}
	leaks := func(where, s string) {
		t.Helper()
		for _, c := range []string{gh, vault} {
			if strings.Contains(s, c) {
				t.Errorf("%s holds %q", where, c)
			}
		}
	}
	leaks("the run's output", out+errs)
	ids := pendingIDs(t, e.home)
	if len(ids) != 1 {
		t.Fatalf("pending approvals %v, want the Edit's", ids)
	}
	_, list, _ := door(t, "--home", e.home, "approvals", "list", "--json")
	leaks("approvals list", list)
	_, text, _ := door(t, "--home", e.home, "approvals", "show", ids[0])
	_, js, _ := door(t, "--home", e.home, "approvals", "show", ids[0], "--json")
	leaks("approvals show", text+js)
	if !strings.Contains(text, "version: 2") || !strings.Contains(text, "[REDACTED:github-token]") || !strings.Contains(text, "[REDACTED:db_password]") {
		t.Errorf("approvals show lacks the diff with its masks:\n%s", text)
	}
	stateFiles(e.home, leaks)
	if b, _ := os.ReadFile(filepath.Join(e.ws, "notes.txt")); !strings.Contains(string(b), "version: 1") {
		t.Errorf("the Edit ran before approval: %s", b)
	}
}

// TestDoorProxyApprovalPreviewRedacted is the same for `norma mcp proxy`:
// a client without elicitation calls a server's tool that a settings rule
// makes ask, with a token and a vault secret in its arguments. The
// request is stored pending; its preview, the proxy's answer and every
// file of the state directory hold the masks, never the values. (The
// proxy once built its approval service without the run's redactor.)
func TestDoorProxyApprovalPreviewRedacted(t *testing.T) {
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("no /usr/bin/python3")
	}
	e := newRunEnv(t)
	vault := "VAULT-" + runCanary + "-5d2e71"
	gh := "gh" + "p_" + "Rk7T2wQ9nB4xL8mV1cZ6pH3jF5sD0aG9yE2u"
	set := exec.Command(normaBin(t), "--home", e.home, "secret", "set", "db_password")
	set.Stdin = strings.NewReader(vault + "\n")
	if out, err := set.CombinedOutput(); err != nil {
		t.Fatalf("secret set: %v\n%s", err, out)
	}
	src := t.TempDir()
	echoServer(t, src, "echo-server")
	add := exec.Command(normaBin(t), "--home", e.home, "mcp", "add", "echo", "--workspace", e.ws, "--grant", grantFile(t, "  {}\n"), "--yes", "--", "./echo-server")
	add.Dir = src
	if code, out, errs := doorCmd(t, add); code != 0 {
		t.Fatalf("mcp add: exit %d\n%s%s", code, out, errs)
	}
	settings := filepath.Join(t.TempDir(), "settings.yaml")
	if err := os.WriteFile(settings, []byte("permissions:\n  ask: [\"mcp__echo__echo\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	args, _ := json.Marshal(map[string]any{"text": "token: " + gh + "\npassword: " + vault})
	in := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":` + string(args) + `}}
`
	cmd := exec.Command(normaBin(t), "--home", e.home, "mcp", "proxy", "--settings", settings, "echo")
	cmd.Dir, cmd.Stdin = e.ws, &slowReader{lines: strings.SplitAfter(in, "\n")}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("proxy: %v\n%s", err, stderr.String())
	}
	leaks := func(where, s string) {
		t.Helper()
		for _, c := range []string{gh, vault} {
			if strings.Contains(s, c) {
				t.Errorf("%s holds %q", where, c)
			}
		}
	}
	leaks("the proxy's output", stdout.String()+stderr.String())
	if strings.Contains(stdout.String(), "echo: token") {
		t.Errorf("the call ran without approval:\n%s", stdout.String())
	}
	ids := pendingIDs(t, e.home)
	if len(ids) != 1 {
		t.Fatalf("pending approvals %v, want the echo call's\n%s%s", ids, stdout.String(), stderr.String())
	}
	_, list, _ := door(t, "--home", e.home, "approvals", "list", "--json")
	_, text, _ := door(t, "--home", e.home, "approvals", "show", ids[0])
	_, js, _ := door(t, "--home", e.home, "approvals", "show", ids[0], "--json")
	leaks("approvals list and show", list+text+js)
	if !strings.Contains(text, "[REDACTED:github-token]") || !strings.Contains(text, "[REDACTED:db_password]") {
		t.Errorf("approvals show lacks the arguments with their masks:\n%s", text)
	}
	stateFiles(e.home, leaks)
}

// TestDoorHookApprovalRedacted is the same for `norma hook claude-code`:
// an Edit two lines below a token, which the hook answers "ask" (Claude
// Code asks the person). The answer names the reason, never the token,
// and no file of the state directory holds it: the hook's audit events
// carry names, hashes and codes, and pass the same redactor.
func TestDoorHookApprovalRedacted(t *testing.T) {
	h := newHookEnv(t)
	gh := "gh" + "p_" + "Wm3K8vT1qZ6nR9xB2cL5pY7dH0sF4jG8aE1u"
	os.WriteFile(filepath.Join(h.ws, "notes.txt"), []byte("token: "+gh+"\nsecond line\nversion: 1\n"), 0o644)
	in := h.pre("Edit", "toolu_redact", map[string]any{"file_path": filepath.Join(h.ws, "notes.txt"),
		"old_string": "token: " + gh + "\nsecond line\nversion: 1", "new_string": "token: " + gh + "\nsecond line\nversion: 2"})
	code, out, errs := h.hook(t, in)
	if code != 0 {
		t.Fatalf("hook: exit %d\n%s%s", code, out, errs)
	}
	if d := parsePre(t, out).HookSpecificOutput.PermissionDecision; d != "ask" {
		t.Errorf("decision %q, want ask\n%s", d, out)
	}
	leaks := func(where, s string) {
		t.Helper()
		if strings.Contains(s, gh) {
			t.Errorf("%s holds the token", where)
		}
	}
	leaks("the hook's answer", out+errs)
	_, q, _ := door(t, "--home", h.home, "audit", "query", "--json")
	leaks("audit query", q)
	stateFiles(h.home, leaks)
	if b, _ := os.ReadFile(filepath.Join(h.ws, "notes.txt")); !strings.Contains(string(b), "version: 1") {
		t.Errorf("the file changed: %s", b)
	}
}
