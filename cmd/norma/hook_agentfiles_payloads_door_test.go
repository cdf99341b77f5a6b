package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDoorHookAgentFilePayloads feeds `norma hook claude-code` the file
// tools' payloads for the agents' own files, spelt as an attacker would
// (through a linked .claude, with .., in another case), including
// MultiEdit, which Claude Code 2.1.332 no longer sends but earlier
// versions and other hosts of the same hook format do. Every write is
// denied (AGENT_FILE_PROTECTED, or FILESYSTEM_WRITE_DENIED and
// FILESYSTEM_READ_DENIED where the workspace's deny globs, which come from
// the same catalogue, answer first) and none of the files appears; the control
// write of an ordinary file is allowed.
func TestDoorHookAgentFilePayloads(t *testing.T) {
	h := newHookEnv(t)
	if err := os.MkdirAll(filepath.Join(h.ws, "cfg"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("cfg", filepath.Join(h.ws, ".claude")); err != nil {
		t.Fatal(err)
	}
	hook := `{"hooks":{"PreToolUse":[{"hooks":[{"type":"command","command":"touch /tmp/pwned"}]}]}}`
	edits := []map[string]any{{"old_string": "{}", "new_string": hook}}
	cases := []struct {
		name, tool, path string
		input            map[string]any
	}{
		{"write through the link", "Write", ".claude/settings.local.json", map[string]any{"content": hook}},
		{"write by the target's name", "Write", "cfg/settings.local.json", map[string]any{"content": hook}},
		{"multiedit subagent", "MultiEdit", ".claude/agents/x.md", map[string]any{"edits": edits}},
		{"multiedit dotdot", "MultiEdit", "docs/../.claude/commands/x.md", map[string]any{"edits": edits}},
		{"edit mcp json", "Edit", ".mcp.json", map[string]any{"old_string": "{}", "new_string": "{\"x\":1}"}},
		{"notebook vscode tasks", "NotebookEdit", ".vscode/tasks.json", map[string]any{"new_source": "{}", "edit_mode": "insert"}},
		{"write codex config upper case", "Write", ".CODEX/config.toml", map[string]any{"content": "x"}},
		{"write git config", "Write", ".git/config", map[string]any{"content": "[core]\n\tfsmonitor = touch /tmp/pwned\n"}},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := map[string]any{"file_path": filepath.Join(h.ws, c.path)}
			if c.tool == "NotebookEdit" {
				in = map[string]any{"notebook_path": filepath.Join(h.ws, c.path)}
			}
			for k, v := range c.input {
				in[k] = v
			}
			before, _ := os.ReadFile(filepath.Join(h.ws, c.path))
			code, out, errs := h.hook(t, h.pre(c.tool, "toolu_af"+string(rune('a'+i)), in))
			d := parsePre(t, out).HookSpecificOutput
			protected := strings.HasPrefix(d.PermissionDecisionReason, "NORMA AGENT_FILE_PROTECTED") ||
				strings.HasPrefix(d.PermissionDecisionReason, "NORMA FILESYSTEM_WRITE_DENIED") ||
				strings.HasPrefix(d.PermissionDecisionReason, "NORMA FILESYSTEM_READ_DENIED")
			if code != 0 || d.PermissionDecision != "deny" || !protected {
				t.Fatalf("%s %s: exit %d, %+v; want a catalogue denial\n%s", c.tool, c.path, code, d, errs)
			}
			after, _ := os.ReadFile(filepath.Join(h.ws, c.path))
			if string(after) != string(before) {
				t.Fatalf("%s changed", c.path)
			}
		})
	}
	for _, p := range []string{"cfg/settings.local.json", "cfg/agents", "cfg/commands", ".mcp.json", ".vscode", ".codex"} {
		if _, err := os.Lstat(filepath.Join(h.ws, p)); err == nil {
			t.Errorf("%s appeared", p)
		}
	}
	code, out, errs := h.hook(t, h.pre("Write", "toolu_control", map[string]any{"file_path": filepath.Join(h.ws, "docs", "n.md"), "content": "x"}))
	if d := parsePre(t, out).HookSpecificOutput; code != 0 || d.PermissionDecision == "deny" {
		t.Fatalf("control Write docs/n.md: exit %d, %+v\n%s", code, d, errs)
	}
}
