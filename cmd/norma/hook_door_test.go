package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/norma-run/norma/sandbox/sandboxtest"
)

// hookEnv is a user's machine for `norma hook claude-code`: a state
// directory, user settings, a workspace with a secret and a symlink out of
// it, and a loopback web server that records what it is asked.
type hookEnv struct {
	home, cfg, ws, outside string
	web                    *webServer
	env                    []string
}

func newHookEnv(t *testing.T) *hookEnv {
	t.Helper()
	h := &hookEnv{home: t.TempDir(), cfg: t.TempDir(), outside: filepath.Join(t.TempDir(), "outside.txt"), web: newWebServer(t)}
	h.ws, _ = filepath.EvalSymlinks(t.TempDir())
	os.WriteFile(filepath.Join(h.ws, ".env"), []byte("TOKEN="+runCanary), 0o600)
	os.WriteFile(filepath.Join(h.ws, "a.txt"), []byte("hello"), 0o644)
	os.MkdirAll(filepath.Join(h.ws, "secrets"), 0o755)
	os.WriteFile(h.outside, []byte(runCanary), 0o600)
	os.Symlink(h.outside, filepath.Join(h.ws, "notes.md"))
	git := exec.Command("git", "init", "-q", h.ws)
	if out, err := git.CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	// The user lets git status run and WebFetch reach the loopback
	// server, and denies writes under secrets/.
	os.MkdirAll(filepath.Join(h.cfg, "norma"), 0o755)
	st := fmt.Sprintf(`permissions:
  allow: ["Bash(git status:*)"]
  deny: ["Write(secrets/**)"]
network:
  requests:
    - {origin: %q, methods: [GET], paths: ["/page"]}
`, h.web.origin)
	os.WriteFile(filepath.Join(h.cfg, "norma", "settings.yaml"), []byte(st), 0o644)
	h.env = []string{"NORMA_HOME=" + h.home, "XDG_CONFIG_HOME=" + h.cfg, "HOME=" + t.TempDir()}
	return h
}

// hook runs `norma hook claude-code` with in on stdin.
func (h *hookEnv) hook(t *testing.T, in []byte) (int, string, string) {
	t.Helper()
	cmd := exec.Command(normaBin(t), "hook", "claude-code")
	cmd.Env = append(os.Environ(), h.env...)
	cmd.Dir = h.ws
	cmd.Stdin = bytes.NewReader(in)
	return doorCmd(t, cmd)
}

func (h *hookEnv) pre(tool, id string, input map[string]any) []byte {
	b, _ := json.Marshal(map[string]any{"session_id": "sess-door", "transcript_path": "/tmp/t.jsonl", "cwd": h.ws, "prompt_id": "p1",
		"permission_mode": "default", "effort": "medium", "hook_event_name": "PreToolUse", "tool_name": tool, "tool_input": input, "tool_use_id": id})
	return b
}

type preAnswer struct {
	HookSpecificOutput struct {
		HookEventName            string `json:"hookEventName"`
		PermissionDecision       string `json:"permissionDecision"`
		PermissionDecisionReason string `json:"permissionDecisionReason"`
	} `json:"hookSpecificOutput"`
}

func parsePre(t *testing.T, out string) preAnswer {
	t.Helper()
	var a preAnswer
	if err := json.Unmarshal([]byte(out), &a); err != nil {
		t.Fatalf("answer %q is not JSON: %v", out, err)
	}
	return a
}

// auditEvents are the events of the state directory, by `norma audit
// query --json`.
func (h *hookEnv) auditEvents(t *testing.T) []map[string]any {
	t.Helper()
	return auditEvents(t, h.home)
}

// TestDoorHookClaudeAttacks drives the built binary as Claude Code's
// PreToolUse hook with the five attacks: each answer, exit code
// and audit event (with the session and tool_use ids), and that nothing
// happened; then the audit chain verifies.
func TestDoorHookClaudeAttacks(t *testing.T) {
	sandboxtest.Require(t)
	h := newHookEnv(t)
	attacks := []struct {
		name, tool, id string
		input          map[string]any
		decision       string
		reason         string
	}{
		{"cat .env", "Bash", "toolu_cat_env", map[string]any{"command": "cat .env", "description": "Show env"}, "deny", "FILESYSTEM_READ_DENIED"},
		{"Read of a symlink out of the workspace", "Read", "toolu_symlink", map[string]any{"file_path": filepath.Join(h.ws, "notes.md")}, "deny", "PATH_ESCAPE"},
		{"Write into a denied path", "Write", "toolu_write", map[string]any{"file_path": filepath.Join(h.ws, "secrets", "k.txt"), "content": "x"}, "deny", "RULE_DENIED"},
		{"Write of .env", "Write", "toolu_write_env", map[string]any{"file_path": filepath.Join(h.ws, ".env"), "content": "x"}, "deny", "FILESYSTEM_WRITE_DENIED"},
		{"git status", "Bash", "toolu_git", map[string]any{"command": "git status"}, "allow", "ALLOWED"},
		{"WebFetch to a private IP", "WebFetch", "toolu_fetch", map[string]any{"url": h.web.origin + "/page", "prompt": "summarize"}, "deny", "NETWORK_PRIVATE_ADDRESS"},
	}
	for _, a := range attacks {
		t.Run(a.name, func(t *testing.T) {
			code, out, errs := h.hook(t, h.pre(a.tool, a.id, a.input))
			ans := parsePre(t, out)
			if code != 0 || ans.HookSpecificOutput.HookEventName != "PreToolUse" || ans.HookSpecificOutput.PermissionDecision != a.decision ||
				!strings.HasPrefix(ans.HookSpecificOutput.PermissionDecisionReason, "NORMA "+a.reason) {
				t.Fatalf("exit %d, answer %s, stderr %s; want %s %s", code, out, errs, a.decision, a.reason)
			}
			var found bool
			for _, e := range h.auditEvents(t) {
				d, _ := e["detail"].(map[string]any)
				if e["type"] == "capability_decision" && d["tool_use_id"] == a.id {
					found = true
					if d["session"] != "sess-door" || d["agent"] != "claude-code" || e["reason"] != a.reason || e["decision"] != a.decision {
						t.Fatalf("audit event %v", e)
					}
				}
			}
			if !found {
				t.Fatalf("no audit event for %s", a.id)
			}
		})
	}
	// Nothing happened: deciding ran nothing, wrote nothing, sent nothing.
	if b, _ := os.ReadFile(filepath.Join(h.ws, ".env")); string(b) != "TOKEN="+runCanary {
		t.Fatalf(".env changed: %q", b)
	}
	if _, err := os.Stat(filepath.Join(h.ws, "secrets", "k.txt")); err == nil {
		t.Fatal("the denied write happened")
	}
	if h.web.asked("/page") {
		t.Fatal("the private address was asked")
	}
	if code, out, errs := doorEnv(t, h.env, "audit", "verify"); code != 0 {
		t.Fatalf("audit verify: %d %s %s", code, out, errs)
	}
}

// TestDoorHookClaudeFailsClosed: garbage, incomplete input and a broken
// state are a deny on stdout and exit 2 with the reason on stderr, never
// exit 0 with allow.
func TestDoorHookClaudeFailsClosed(t *testing.T) {
	sandboxtest.Require(t)
	h := newHookEnv(t)
	read := h.pre("Read", "toolu_1", map[string]any{"file_path": filepath.Join(h.ws, "a.txt")})
	// The control: the same call is allowed when nothing is broken.
	if code, out, _ := h.hook(t, read); code != 0 || parsePre(t, out).HookSpecificOutput.PermissionDecision != "allow" {
		t.Fatalf("control: %d %s", code, out)
	}
	noTool, _ := json.Marshal(map[string]any{"session_id": "s", "cwd": h.ws, "hook_event_name": "PreToolUse", "tool_use_id": "t"})
	tests := []struct {
		name   string
		in     []byte
		breaks func(t *testing.T, h *hookEnv)
		reason string
	}{
		{"garbage stdin", []byte("\x00\x01 not json {{"), nil, "HOOK_INPUT_INVALID"},
		{"empty stdin", nil, nil, "HOOK_INPUT_INVALID"},
		{"missing tool_name", noTool, nil, "HOOK_INPUT_INVALID"},
		{"broken settings", read, func(t *testing.T, h *hookEnv) {
			os.WriteFile(filepath.Join(h.cfg, "norma", "settings.yaml"), []byte("permissions: [: broken"), 0o644)
		}, "HOOK_DECIDE_FAILED"},
		{"state directory is a file", read, func(t *testing.T, h *hookEnv) {
			f := filepath.Join(t.TempDir(), "state")
			os.WriteFile(f, nil, 0o600)
			h.env = append(h.env, "NORMA_HOME="+f)
		}, "HOOK_DECIDE_FAILED"},
		{"audit database is garbage", read, func(t *testing.T, h *hookEnv) {
			os.WriteFile(filepath.Join(h.home, "norma.db"), bytes.Repeat([]byte("garbage!"), 1024), 0o600)
		}, "HOOK_DECIDE_FAILED"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := h
			if tt.breaks != nil {
				h = newHookEnv(t)
				tt.breaks(t, h)
			}
			code, out, errs := h.hook(t, tt.in)
			ans := parsePre(t, out)
			if code != 2 || ans.HookSpecificOutput.PermissionDecision != "deny" || !strings.Contains(errs, "NORMA "+tt.reason) {
				t.Fatalf("exit %d, stdout %s, stderr %q; want exit 2, deny, %s on stderr", code, out, errs, tt.reason)
			}
		})
	}
	if code, out, errs := doorEnv(t, h.env, "audit", "verify"); code != 0 {
		t.Fatalf("audit verify: %d %s %s", code, out, errs)
	}
}

// TestDoorHookInstall: install writes Norma's entries with this binary's
// path and keeps the rest; twice is once; without a terminal it needs
// --yes; uninstall restores the file.
func TestDoorHookInstall(t *testing.T) {
	home, state := t.TempDir(), t.TempDir()
	path := filepath.Join(home, ".claude", "settings.json")
	os.MkdirAll(filepath.Dir(path), 0o755)
	orig := "{\n  \"model\": \"opus\",\n  \"hooks\": {\n    \"Stop\": [\n      {\n        \"hooks\": [\n          {\n            \"type\": \"command\",\n            \"command\": \"notify-send done\"\n          }\n        ]\n      }\n    ]\n  }\n}\n"
	os.WriteFile(path, []byte(orig), 0o644)
	env := []string{"HOME=" + home, "NORMA_HOME=" + state}
	code, out, errs := doorEnv(t, env, "hook", "install", "claude-code")
	if code != exitConsent || !strings.Contains(errs, "--yes") || !strings.Contains(out, "+") {
		t.Fatalf("install without a terminal: %d %s %s", code, out, errs)
	}
	if b, _ := os.ReadFile(path); string(b) != orig {
		t.Fatal("install without --yes wrote the file")
	}
	code, out, errs = doorEnv(t, env, "hook", "install", "claude-code", "--yes")
	if code != 0 || !strings.Contains(out, "PreToolUse") || !strings.Contains(out, "wrote "+path) {
		t.Fatalf("install: %d %s %s", code, out, errs)
	}
	b, _ := os.ReadFile(path)
	want := normaBin(t) + " --home " + state + " hook claude-code"
	var st struct {
		Model string
		Hooks map[string][]struct {
			Hooks []struct{ Command string }
		}
	}
	if err := json.Unmarshal(b, &st); err != nil || st.Model != "opus" || st.Hooks["Stop"][0].Hooks[0].Command != "notify-send done" {
		t.Fatalf("settings after install: %v\n%s", err, b)
	}
	for _, ev := range []string{"PreToolUse", "PermissionRequest", "PostToolUse", "SessionStart", "SessionEnd"} {
		if g := st.Hooks[ev]; len(g) != 1 || g[0].Hooks[0].Command != want {
			t.Fatalf("%s = %+v, want %q", ev, g, want)
		}
	}
	if code, out, _ = doorEnv(t, env, "hook", "install", "claude-code", "--yes"); code != 0 || !strings.Contains(out, "nothing to change") {
		t.Fatalf("second install: %d %s", code, out)
	}
	if b2, _ := os.ReadFile(path); string(b2) != string(b) {
		t.Fatal("the second install changed the file")
	}
	if code, out, errs = doorEnv(t, env, "hook", "uninstall", "claude-code", "--yes"); code != 0 {
		t.Fatalf("uninstall: %d %s %s", code, out, errs)
	}
	if b, _ := os.ReadFile(path); string(b) != orig {
		t.Fatalf("uninstall did not restore the file:\n%s", b)
	}
	// Project scope writes PROJECT/.claude/settings.json, created.
	proj := t.TempDir()
	if code, out, errs = doorEnv(t, env, "hook", "install", "claude-code", "--scope", "project", "--project", proj, "--yes"); code != 0 {
		t.Fatalf("install --scope project: %d %s %s", code, out, errs)
	}
	if b, err := os.ReadFile(filepath.Join(proj, ".claude", "settings.json")); err != nil || !strings.Contains(string(b), want) {
		t.Fatalf("project settings: %v %s", err, b)
	}
}
