package main

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/norma-run/norma/sandbox/sandboxtest"
)

// confinedAnswer is a PreToolUse answer with its updated input.
type confinedAnswer struct {
	HookSpecificOutput struct {
		PermissionDecision string          `json:"permissionDecision"`
		UpdatedInput       json.RawMessage `json:"updatedInput"`
	} `json:"hookSpecificOutput"`
}

// claudeBash runs command as Claude Code's shell runs a Bash call: a real
// bash in the workspace, with the hook's environment.
func (h *hookEnv) claudeBash(t *testing.T, command string) (string, int) {
	t.Helper()
	b := exec.Command("/bin/bash", "--norc", "--noprofile", "-c", command)
	b.Dir, b.Env = h.ws, append(os.Environ(), h.env...)
	out, err := b.CombinedOutput()
	code := 0
	if ee, ok := errors.AsType[*exec.ExitError](err); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("bash -c %q: %v", command, err)
	}
	return string(out), code
}

// TestDoorHookClaudeConfinesBash: with a user rule Bash(cat:*), commands
// whose files the analysis cannot see (x=.env; cat $x; y=.e; cat ${y}nv) are
// allowed, and the built hook's answer carries an updatedInput whose
// command, run by a real bash as Claude Code runs it, runs them inside
// Norma's sandbox: the canary of .env is never printed, while the same
// commands unwrapped do print it (the attack is real). cat README.md and
// git status still work, a command from a subdirectory of the project
// runs there, the other fields of the input are kept, and
// agentHooks.confineBash: false in the user's settings turns it off.
func TestDoorHookClaudeConfinesBash(t *testing.T) {
	sandboxtest.Require(t)
	h := newHookEnv(t)
	if err := os.WriteFile(filepath.Join(h.ws, "README.md"), []byte("the readme\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	userSettings := filepath.Join(h.cfg, "norma", "settings.yaml")
	if err := os.WriteFile(userSettings, []byte("permissions:\n  allow: [\"Bash(cat:*)\", \"Bash(git status:*)\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	wrapped := func(t *testing.T, id, command string) (string, map[string]any) {
		t.Helper()
		code, out, errs := h.hook(t, h.pre("Bash", id, map[string]any{"command": command, "timeout": 30000, "description": "d"}))
		var a confinedAnswer
		if err := json.Unmarshal([]byte(out), &a); err != nil || code != 0 {
			t.Fatalf("%q: exit %d, answer %s, stderr %s", command, code, out, errs)
		}
		if a.HookSpecificOutput.PermissionDecision != "allow" {
			t.Fatalf("%q: answer %s, want allow", command, out)
		}
		var in map[string]any
		if err := json.Unmarshal(a.HookSpecificOutput.UpdatedInput, &in); err != nil {
			t.Fatalf("%q: no updatedInput in %s", command, out)
		}
		if in["timeout"] != 30000.0 || in["description"] != "d" {
			t.Errorf("%q: updatedInput %s lost the other fields", command, a.HookSpecificOutput.UpdatedInput)
		}
		c, _ := in["command"].(string)
		if !strings.Contains(c, " hook exec --workspace ") {
			t.Fatalf("%q: updatedInput command %q", command, c)
		}
		return c, in
	}
	c, _ := wrapped(t, "toolu_readme", "cat README.md")
	if out, code := h.claudeBash(t, c); code != 0 || out != "the readme\n" {
		t.Errorf("confined cat README.md: exit %d, %q", code, out)
	}
	c, _ = wrapped(t, "toolu_git", "git status")
	if out, code := h.claudeBash(t, c); code != 0 || !strings.Contains(out, "branch") {
		t.Errorf("confined git status: exit %d, %q", code, out)
	}
	for i, attack := range []string{"x=.env; cat $x", "y=.e; cat ${y}nv"} {
		if out, _ := h.claudeBash(t, attack); !strings.Contains(out, runCanary) {
			t.Fatalf("unconfined %q did not read .env (%q): the attack is not real", attack, out)
		}
		c, _ := wrapped(t, "toolu_attack"+string(rune('0'+i)), attack)
		out, code := h.claudeBash(t, c)
		if strings.Contains(out, runCanary) {
			t.Errorf("confined %q printed the canary: %q", attack, out)
		}
		if code == 0 || code == exitNotRun {
			t.Errorf("confined %q: exit %d, want cat's failure (%q)", attack, code, out)
		}
	}
	// Claude Code's shell in a subdirectory of the project: the wrapper
	// runs the command there, in the project's sandbox.
	sub := filepath.Join(h.ws, "sub")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sub, "s.txt"), []byte("the sub file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	in, _ := json.Marshal(map[string]any{"session_id": "sess-door", "cwd": sub, "hook_event_name": "PreToolUse", "tool_name": "Bash",
		"tool_input": map[string]any{"command": "cat s.txt; x=../.env; cat $x"}, "tool_use_id": "toolu_sub", "permission_mode": "default"})
	hk := exec.Command(normaBin(t), "hook", "claude-code")
	hk.Env, hk.Dir, hk.Stdin = append(os.Environ(), append(h.env, "CLAUDE_PROJECT_DIR="+h.ws)...), sub, strings.NewReader(string(in))
	out, err := hk.Output()
	var sa confinedAnswer
	if err != nil || json.Unmarshal(out, &sa) != nil || sa.HookSpecificOutput.PermissionDecision == "deny" {
		t.Fatalf("subdirectory: %v, answer %s", err, out)
	}
	var sin struct {
		Command string `json:"command"`
	}
	if err := json.Unmarshal(sa.HookSpecificOutput.UpdatedInput, &sin); err != nil {
		t.Fatalf("subdirectory: no updatedInput in %s", out)
	}
	b := exec.Command("/bin/bash", "--norc", "--noprofile", "-c", sin.Command)
	b.Dir, b.Env = sub, append(os.Environ(), h.env...)
	got, _ := b.CombinedOutput()
	if !strings.HasPrefix(string(got), "the sub file\n") || strings.Contains(string(got), runCanary) {
		t.Errorf("subdirectory: confined %q printed %q", sin.Command, got)
	}
	// Turned off in the user's settings: the command runs as sent.
	if err := os.WriteFile(userSettings, []byte("permissions:\n  allow: [\"Bash(cat:*)\"]\nagentHooks:\n  confineBash: false\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, offOut, _ := h.hook(t, h.pre("Bash", "toolu_off", map[string]any{"command": "cat README.md"}))
	out = []byte(offOut)
	var a confinedAnswer
	if err := json.Unmarshal([]byte(out), &a); err != nil || a.HookSpecificOutput.PermissionDecision != "allow" || a.HookSpecificOutput.UpdatedInput != nil {
		t.Errorf("confineBash false: answer %s, want allow without updatedInput", out)
	}
}

// TestDoorHookExecFailsClosed: norma hook exec runs nothing when it
// cannot build the sandbox of the workspace it is given (exit 125).
func TestDoorHookExecFailsClosed(t *testing.T) {
	h := newHookEnv(t)
	marker := filepath.Join(t.TempDir(), "ran")
	for _, ws := range []string{filepath.Join(h.ws, "missing"), "relative/ws"} {
		code, _, errs := doorEnv(t, h.env, "hook", "exec", "--workspace", ws, "--", "touch "+marker)
		if code != exitNotRun || !strings.Contains(errs, "the command was not run") {
			t.Errorf("workspace %q: exit %d, stderr %q; want %d", ws, code, errs, exitNotRun)
		}
		if _, err := os.Lstat(marker); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("workspace %q: the command ran (%v)", ws, err)
		}
	}
}
