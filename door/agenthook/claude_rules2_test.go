package agenthook

import (
	"os"
	"path/filepath"
	"testing"
)

// TestEngineUnmappedToolModes: a tool Norma has no mapping for (an MCP
// server of the agent's) is decided by the rules naming it, and in
// dontAsk what would ask is denied, as Claude Code denies it
// (differential row 9).
func TestEngineUnmappedToolModes(t *testing.T) {
	w := newHookWorld(t)
	must(t, os.WriteFile(filepath.Join(w.userDir, "settings.yaml"),
		[]byte("permissions:\n  allow: [\"mcp__kb\"]\n  ask: [\"mcp__kb__create_entities\"]\n"), 0o644))
	for _, tt := range []struct {
		mode, tool, want string
	}{
		{"default", "mcp__kb__create_entities", "ask"},
		{"dontAsk", "mcp__kb__create_entities", "deny"},
		{"default", "mcp__kb__read_graph", "allow"},
		{"dontAsk", "mcp__kb__read_graph", "allow"},
		{"dontAsk", "mcp__other__x", "deny"},
	} {
		out, exit := Handle(t.Context(), Claude{}, w.eng, w.input("PreToolUse", tt.tool, "toolu_m", tt.mode, map[string]any{"x": 1}))
		if d, reason, _ := answer(t, out, exit); d != tt.want {
			t.Errorf("%s %s = %s (%s), want %s", tt.mode, tt.tool, d, reason, tt.want)
		}
	}
}
