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

// The Codex CLI and Gemini CLI hooks through the door: the real-shaped
// fixtures of agenthook/testdata, with their cwd set to a workspace whose
// .env holds the canary, piped into the built `norma hook codex|gemini`.

// agentFixture reads agenthook/testdata/NAME with its cwd set to ws.
func agentFixture(t *testing.T, name, ws string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "door", "agenthook", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	m["cwd"] = ws
	out, _ := json.Marshal(m)
	return out
}

// pipeHook runs `norma --home HOME hook AGENT` with in on stdin and the
// user settings of xdg, and returns its exit code, stdout and stderr.
func pipeHook(t *testing.T, home, xdg, agent string, in []byte) (int, string, string) {
	t.Helper()
	cmd := exec.Command(normaBin(t), "--home", home, "hook", agent)
	cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+xdg, "NORMA_MANAGED_SETTINGS="+filepath.Join(xdg, "none.yaml"))
	var out, errb bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(in), &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String()+errb.String(), runCanary) {
		t.Errorf("norma hook %s: the canary leaked:\n%s%s", agent, out.String(), errb.String())
	}
	return code, out.String(), errb.String()
}

// hookUserSettings is a user settings directory that allows `git status`.
func hookUserSettings(t *testing.T) string {
	t.Helper()
	xdg := t.TempDir()
	rtWrite(t, filepath.Join(xdg, "norma", "settings.yaml"), "permissions:\n  allow: [\"Bash(git status)\"]\n", 0o644)
	return xdg
}

// auditDecisions returns the capability decisions of home's audit log
// (after checking that the log verifies), as maps of their fields.
func auditDecisions(t *testing.T, home string) []map[string]any {
	t.Helper()
	if code, out, errs := door(t, "--home", home, "audit", "verify"); code != 0 {
		t.Fatalf("audit verify: exit %d\n%s%s", code, out, errs)
	}
	return auditEvents(t, home, "--type", "capability_decision")
}

// hasDecision reports whether ds holds a decision on tool by agent with
// the given outcome, reason and tool_use id (empty: any).
func hasDecision(ds []map[string]any, agent, tool, decision, reason, useID string) bool {
	for _, d := range ds {
		det, _ := d["detail"].(map[string]any)
		if d["principal"] == agent && d["tool"] == tool && d["decision"] == decision && d["reason"] == reason &&
			(useID == "" || det["tool_use_id"] == useID) && det["session"] != "" {
			return true
		}
	}
	return false
}

// TestDoorHookCodex: `cat .env` is denied with its reason code (the
// canary never shows), `git status` (allowed by a user rule) gets no
// decision (Codex's own policy applies), a patch that writes .env beside
// a harmless file is denied, a call Norma would ask about is denied with
// the message to approve it in Norma, and input that does not parse is a
// deny with exit 2; every decision is in the audit log with Codex's
// session and tool_use ids.
func TestDoorHookCodex(t *testing.T) {
	e := newRunEnv(t)
	xdg := hookUserSettings(t)
	env := string(mustRead(t, filepath.Join(e.ws, ".env")))

	code, out, _ := pipeHook(t, e.home, xdg, "codex", agentFixture(t, "codex/pre_bash_cat_env.json", e.ws))
	if code != 0 || !strings.Contains(out, `"permissionDecision":"deny"`) || !strings.Contains(out, "NORMA FILESYSTEM_READ_DENIED") {
		t.Errorf("cat .env: exit %d %s, want a deny with FILESYSTEM_READ_DENIED", code, out)
	}
	if code, out, _ := pipeHook(t, e.home, xdg, "codex", agentFixture(t, "codex/pre_bash_git_status.json", e.ws)); code != 0 || strings.TrimSpace(out) != "{}" {
		t.Errorf("git status: exit %d %s, want {} (no decision: allowed)", code, out)
	}
	code, out, _ = pipeHook(t, e.home, xdg, "codex", agentFixture(t, "codex/pre_apply_patch_env.json", e.ws))
	if code != 0 || !strings.Contains(out, `"permissionDecision":"deny"`) || !strings.Contains(out, "NORMA FILESYSTEM_WRITE_DENIED") {
		t.Errorf("patch of .env: exit %d %s, want a deny with FILESYSTEM_WRITE_DENIED", code, out)
	}
	// The patch's other file needs approval (a Write in default mode):
	// Codex cannot ask, so a patch of it alone is denied, saying so.
	code, out, _ = pipeHook(t, e.home, xdg, "codex", agentFixture(t, "codex/pre_apply_patch.json", e.ws))
	if code != 0 || !strings.Contains(out, `"permissionDecision":"deny"`) || !strings.Contains(out, "NORMA APPROVAL_REQUIRED") || !strings.Contains(out, "approve it in Norma") {
		t.Errorf("patch needing approval: exit %d %s, want a deny saying to approve in Norma", code, out)
	}
	code, out, errs := pipeHook(t, e.home, xdg, "codex", []byte(`{"hook_event_name":"PreToolUse","tool_name":"Bash"`))
	if code != 2 || !strings.Contains(out, `"permissionDecision":"deny"`) || !strings.Contains(errs, "NORMA HOOK_INPUT_INVALID") {
		t.Errorf("broken input: exit %d %s %s, want exit 2 with HOOK_INPUT_INVALID on stderr", code, out, errs)
	}
	if got := string(mustRead(t, filepath.Join(e.ws, ".env"))); got != env {
		t.Errorf(".env changed: %q", got)
	}

	ds := auditDecisions(t, e.home)
	for _, w := range []struct{ tool, decision, reason, id string }{
		{"Bash", "deny", "FILESYSTEM_READ_DENIED", "call_Q1xv7TtE0cWb1c2mYqv3aK8f"},
		{"Bash", "allow", "ALLOWED", "call_8fRkq2UeXn0p5Hs3VwJd1LbM"},
		{"Write", "approval_required", "APPROVAL_REQUIRED", "call_Hx2n8QsD5vKm1pTe6yWc0JbR"},
		{"Write", "deny", "FILESYSTEM_WRITE_DENIED", "call_Hx2n8QsD5vKm1pTe6yWc0JbR"},
	} {
		if !hasDecision(ds, "codex", w.tool, w.decision, w.reason, w.id) {
			t.Errorf("no audited %s %s %s for %s in %v", w.tool, w.decision, w.reason, w.id, ds)
		}
	}
}

// TestDoorHookGemini: Gemini CLI's BeforeTool through the door: `cat
// .env` denied, `git status` allowed, a write_file over .env denied, a web_fetch decided for every URL of
// its prompt; a broken input is exit 2.
func TestDoorHookGemini(t *testing.T) {
	e := newRunEnv(t)
	xdg := hookUserSettings(t)
	code, out, _ := pipeHook(t, e.home, xdg, "gemini", agentFixture(t, "gemini/before_shell_cat_env.json", e.ws))
	if code != 0 || !strings.Contains(out, `"decision":"deny"`) || !strings.Contains(out, "NORMA FILESYSTEM_READ_DENIED") {
		t.Errorf("cat .env: exit %d %s, want a deny with FILESYSTEM_READ_DENIED", code, out)
	}
	if code, out, _ := pipeHook(t, e.home, xdg, "gemini", agentFixture(t, "gemini/before_shell_git_status.json", e.ws)); code != 0 || !strings.Contains(out, `"decision":"allow"`) {
		t.Errorf("git status: exit %d %s, want allow", code, out)
	}
	write, _ := json.Marshal(map[string]any{"session_id": "g-1", "cwd": e.ws, "hook_event_name": "BeforeTool", "tool_name": "write_file",
		"tool_input": map[string]any{"file_path": filepath.Join(e.ws, ".env"), "content": "TOKEN=overwritten\n"}})
	code, out, _ = pipeHook(t, e.home, xdg, "gemini", write)
	if code != 0 || !strings.Contains(out, `"decision":"deny"`) || !strings.Contains(out, "NORMA FILESYSTEM_WRITE_DENIED") {
		t.Errorf("write_file .env: exit %d %s, want a deny with FILESYSTEM_WRITE_DENIED", code, out)
	}
	// A web_fetch is decided URL by URL: with a public address's /docs
	// granted, a prompt naming it alone is allowed, and one naming a
	// private address beside it is denied. (A host name would be resolved
	// to decide, and this machine is offline: it would be
	// NETWORK_RESOLVE_FAILED.)
	netXDG := t.TempDir()
	rtWrite(t, filepath.Join(netXDG, "norma", "settings.yaml"), "permissions:\n  allow: [WebFetch]\nnetwork:\n  requests:\n"+
		"    - {origin: \"https://93.184.216.34\", methods: [GET], paths: [/docs]}\n", 0o644)
	fetch := func(prompt string) []byte {
		b, _ := json.Marshal(map[string]any{"session_id": "g-1", "cwd": e.ws, "hook_event_name": "BeforeTool", "tool_name": "web_fetch",
			"tool_input": map[string]any{"prompt": prompt}})
		return b
	}
	if code, out, _ := pipeHook(t, e.home, netXDG, "gemini", fetch("Summarize https://93.184.216.34/docs")); code != 0 || !strings.Contains(out, `"decision":"allow"`) {
		t.Errorf("web_fetch of a granted URL: exit %d %s, want allow", code, out)
	}
	code, out, _ = pipeHook(t, e.home, netXDG, "gemini", fetch("Compare https://93.184.216.34/docs with http://10.0.0.5/admin"))
	if code != 0 || !strings.Contains(out, `"decision":"deny"`) || !strings.Contains(out, "NORMA NETWORK_DESTINATION_DENIED") || !strings.Contains(out, "10.0.0.5") {
		t.Errorf("web_fetch naming a private address: exit %d %s, want a deny of 10.0.0.5 with NETWORK_DESTINATION_DENIED", code, out)
	}
	code, out, errs := pipeHook(t, e.home, xdg, "gemini", []byte(`{"hook_event_name":"BeforeTool"}`))
	if code != 2 || !strings.Contains(out, `"decision":"deny"`) || !strings.Contains(errs, "NORMA HOOK_INPUT_INVALID") {
		t.Errorf("broken input: exit %d %s %s, want exit 2 with HOOK_INPUT_INVALID on stderr", code, out, errs)
	}
	if got := string(mustRead(t, filepath.Join(e.ws, ".env"))); !strings.Contains(got, runCanary) {
		t.Errorf(".env changed: %q", got)
	}
	ds := auditDecisions(t, e.home)
	for _, w := range []struct{ tool, decision, reason string }{
		{"Bash", "deny", "FILESYSTEM_READ_DENIED"}, {"Bash", "allow", "ALLOWED"}, {"Write", "deny", "FILESYSTEM_WRITE_DENIED"},
		{"WebFetch", "allow", "ALLOWED"}, {"WebFetch", "deny", "NETWORK_DESTINATION_DENIED"},
	} {
		if !hasDecision(ds, "gemini", w.tool, w.decision, w.reason, "") {
			t.Errorf("no audited %s %s %s in %v", w.tool, w.decision, w.reason, ds)
		}
	}
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
