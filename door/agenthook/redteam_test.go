package agenthook

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/sandbox/sandboxtest"
)

// dotDotWorld is a hook world with ws/up, a symbolic link to a directory
// beside the secret outside the workspace: ws/up/../secret.txt is, to the
// kernel, the secret; read lexically it is ws/secret.txt.
func dotDotWorld(t *testing.T) (*hookWorld, string) {
	t.Helper()
	w := newHookWorld(t)
	d := filepath.Join(filepath.Dir(w.outside), "d")
	must(t, os.Mkdir(d, 0o755))
	must(t, os.Symlink(d, filepath.Join(w.ws, "up")))
	must(t, os.Mkdir(filepath.Join(w.ws, "sub"), 0o755))
	lit := w.ws + "/up/../secret.txt" // not filepath.Join: it cleans
	// The attack is real: the literal path, as the agent's tool hands it
	// to the kernel, reaches the secret outside the workspace.
	if b, err := os.ReadFile(lit); err != nil || string(b) != canary {
		t.Fatalf("the kernel does not read %s as the secret: %q %v", lit, b, err)
	}
	return w, lit
}

// TestEngineDotDotAfterSymlink: a path whose ".." follows a symbolic link
// out of the workspace is decided as what the agent's tool reaches (the
// secret outside), not as the lexically cleaned path inside, for each
// agent's tools; a ".." after a real directory is still decided inside.
func TestEngineDotDotAfterSymlink(t *testing.T) {
	sandboxtest.Require(t)
	w, lit := dotDotWorld(t)
	ctx := context.Background()
	gem := func(tool string, in any) []byte {
		b, _ := json.Marshal(map[string]any{"session_id": "g1", "cwd": w.ws, "hook_event_name": "BeforeTool", "tool_name": tool, "tool_input": in})
		return b
	}
	codex := func(patch string) []byte {
		b, _ := json.Marshal(map[string]any{"session_id": "c1", "cwd": w.ws, "hook_event_name": "PreToolUse", "tool_name": "apply_patch",
			"tool_input": map[string]any{"command": patch}, "tool_use_id": "call_1"})
		return b
	}
	tests := []struct {
		name  string
		codec Codec
		in    []byte
		allow bool
	}{
		{"claude Read", Claude{}, w.pre("Read", "t1", map[string]any{"file_path": lit}), false},
		{"claude Read, two links", Claude{}, w.pre("Read", "t2", map[string]any{"file_path": w.ws + "/up/../d/../secret.txt"}), false},
		{"claude Grep", Claude{}, w.pre("Grep", "t3", map[string]any{"pattern": "CANARY", "path": w.ws + "/up/.."}), false},
		{"claude Write", Claude{}, w.pre("Write", "t4", map[string]any{"file_path": w.ws + "/up/../new.txt", "content": "x"}), false},
		{"gemini read_file, relative", GeminiCLI{}, gem("read_file", map[string]any{"file_path": "up/../secret.txt"}), false},
		{"codex apply_patch, relative", CodexCLI{}, codex("*** Begin Patch\n*** Add File: up/../new.txt\n+x\n*** End Patch\n"), false},
		// A ".." after a directory of the workspace stays inside it.
		{"claude Read sub/../a.txt", Claude{}, w.pre("Read", "t5", map[string]any{"file_path": w.ws + "/sub/../a.txt"}), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, exit := Handle(ctx, tt.codec, w.eng, tt.in)
			s := string(out)
			switch {
			case tt.allow && (exit != 0 || strings.Contains(s, "deny")):
				t.Fatalf("exit %d %s; want allowed", exit, s)
			case !tt.allow && (exit != 0 || !strings.Contains(s, `"deny"`) || !strings.Contains(s, "NORMA "+string(capability.ReasonPathEscape))):
				t.Fatalf("exit %d %s; want a PATH_ESCAPE deny", exit, s)
			}
			if strings.Contains(s, canary) {
				t.Fatalf("the answer holds the canary: %s", s)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(w.outside), "new.txt")); err == nil {
		t.Fatal("deciding wrote a file")
	}
}

// TestEngineGlobPatternOutside: a Glob whose pattern leaves the
// workspace ("../", an absolute pattern, a ".." past a wildcard) is
// refused at the decision, with PATH_ESCAPE: the agent runs the search
// itself, so a decision on its path alone would let it list the
// directory above the workspace. Norma's own Glob refuses the same
// patterns, by the same check.
func TestEngineGlobPatternOutside(t *testing.T) {
	sandboxtest.Require(t)
	w := newHookWorld(t)
	outsideDir := filepath.Dir(w.outside)
	rel, err := filepath.Rel(w.ws, outsideDir)
	must(t, err)
	for i, tt := range []struct {
		in    map[string]any
		allow bool
	}{
		{map[string]any{"pattern": rel + "/*"}, false},
		{map[string]any{"pattern": outsideDir + "/*"}, false},
		{map[string]any{"pattern": "*/../../*"}, false},
		{map[string]any{"pattern": "**/*.txt", "path": w.ws}, true},
		{map[string]any{"pattern": w.ws + "/*.txt"}, true},
	} {
		d, reason, code := decide(t, w.eng, w.pre("Glob", fmt.Sprintf("g%d", i), tt.in))
		switch {
		case code != 0:
			t.Errorf("%v: exit %d", tt.in, code)
		case tt.allow && d != "allow":
			t.Errorf("%v: %s %s, want allow", tt.in, d, reason)
		case !tt.allow && (d != "deny" || !strings.HasPrefix(reason, "NORMA "+string(capability.ReasonPathEscape))):
			t.Errorf("%v: %s %s, want a PATH_ESCAPE deny", tt.in, d, reason)
		}
	}
}

// TestEngineGeminiTwoSpellings: a Gemini CLI read_file that names a
// harmless file under one spelling of its path parameter and the secret
// under another is refused (exit 2, HOOK_INPUT_INVALID), not allowed on
// the spelling Norma happened to read first.
func TestEngineGeminiTwoSpellings(t *testing.T) {
	sandboxtest.Require(t)
	w := newHookWorld(t)
	in, _ := json.Marshal(map[string]any{"session_id": "g1", "cwd": w.ws, "hook_event_name": "BeforeTool", "tool_name": "read_file",
		"tool_input": map[string]any{"file_path": "a.txt", "absolute_path": filepath.Join(w.ws, ".env")}})
	out, exit := Handle(context.Background(), GeminiCLI{}, w.eng, in)
	var a struct{ Decision, Reason string }
	if err := json.Unmarshal(out, &a); err != nil || exit != 2 || a.Decision != "deny" ||
		!strings.HasPrefix(a.Reason, "NORMA "+string(capability.ReasonHookInputInvalid)) {
		t.Fatalf("exit %d %s; want exit 2 and a HOOK_INPUT_INVALID deny", exit, out)
	}
	if strings.Contains(string(out), canary) {
		t.Fatalf("the answer holds the canary: %s", out)
	}
}

// TestEngineInertLeavesUserDialog: in plan mode the model calls
// ExitPlanMode, whose plan the user approves in Claude Code's dialog, and
// AskUserQuestion, which the user answers. Norma has nothing against
// either, but a Norma "allow" (PreToolUse) or behavior allow
// (PermissionRequest) would answer for the user and leave plan mode
// unapproved; the answer is no decision at all, and the engine's allow
// is still audited. A Bash call Norma allows keeps its allow.
func TestEngineInertLeavesUserDialog(t *testing.T) {
	sandboxtest.Require(t)
	w := newHookWorld(t)
	ctx := context.Background()
	for i, tt := range []struct {
		event, tool string
		input       any
	}{
		{"PreToolUse", "ExitPlanMode", map[string]any{"plan": "rewrite everything"}},
		{"PermissionRequest", "ExitPlanMode", map[string]any{"plan": "rewrite everything"}},
		{"PreToolUse", "AskUserQuestion", map[string]any{"questions": []any{}}},
		{"PermissionRequest", "AskUserQuestion", map[string]any{"questions": []any{}}},
	} {
		id := fmt.Sprintf("toolu_p%d", i)
		if tt.event == "PermissionRequest" {
			id = ""
		}
		out, exit := Handle(ctx, Claude{}, w.eng, w.input(tt.event, tt.tool, id, "plan", tt.input))
		if exit != 0 || strings.TrimSpace(string(out)) != "{}" {
			t.Errorf("%s %s: exit %d %s; want no decision", tt.event, tt.tool, exit, out)
		}
		ev := w.sink.Events()
		if last := ev[len(ev)-1]; last.Reason != string(capability.ReasonAllowed) || last.Detail["agent_tool"] != tt.tool {
			t.Errorf("%s %s: audit event %+v", tt.event, tt.tool, last)
		}
	}
	gin, _ := json.Marshal(map[string]any{"session_id": "g1", "cwd": w.ws, "hook_event_name": "BeforeTool", "tool_name": "exit_plan_mode",
		"tool_input": map[string]any{"plan_path": "plan.md"}})
	if out, exit := Handle(ctx, GeminiCLI{}, w.eng, gin); exit != 0 || strings.TrimSpace(string(out)) != "{}" {
		t.Errorf("gemini exit_plan_mode: exit %d %s; want no decision", exit, out)
	}
	d, reason, code := decide(t, w.eng, w.input("PreToolUse", "Bash", "toolu_b", "default", map[string]any{"command": "git status"}))
	if code != 0 || d != "allow" {
		t.Fatalf("git status: exit %d %s %s; want allow", code, d, reason)
	}
}

// TestEngineCaseKeys: a hook input with two keys equal but for case is
// refused (exit 2, HOOK_INPUT_INVALID). encoding/json fills a field from
// either key, the last winning, where the agent reads the exact one: the
// Claude Code input below would be decided as TodoWrite (inert, allowed)
// and run as Bash, the Codex one decided as `git status` (allowed) and
// run as `cat .env`.
func TestEngineCaseKeys(t *testing.T) {
	sandboxtest.Require(t)
	w := newHookWorld(t)
	for _, tt := range []struct {
		name  string
		codec Codec
		in    string
	}{
		{"claude tool_name", Claude{}, `{"session_id":"s","cwd":%q,"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"cat .env"},"tool_use_id":"t1","Tool_Name":"TodoWrite"}`},
		{"codex command", CodexCLI{}, `{"session_id":"s","cwd":%q,"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"cat .env","COMMAND":"git status"},"tool_use_id":"t1"}`},
		{"gemini mcp_context", GeminiCLI{}, `{"session_id":"s","cwd":%q,"hook_event_name":"BeforeTool","tool_name":"t","tool_input":{},"mcp_context":{"server_name":"nope","Server_Name":"ok","tool_name":"tool"}}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, exit := Handle(context.Background(), tt.codec, w.eng, []byte(fmt.Sprintf(tt.in, w.ws)))
			if exit != 2 || !strings.Contains(string(out), `"deny"`) || !strings.Contains(string(out), "NORMA "+string(capability.ReasonHookInputInvalid)) {
				t.Fatalf("exit %d %s; want exit 2 and a HOOK_INPUT_INVALID deny", exit, out)
			}
		})
	}
	if n := len(w.sink.Events()); n != 0 {
		t.Fatalf("%d decisions recorded; want none", n)
	}
}

// TestEngineGrepReadsTree: Claude Code's Grep of a directory reads every
// file under it (ripgrep; the real Claude Code printed .env's line to the
// model), so an agent's Grep is decided on each of them: a Grep over a
// tree that holds .env is FILESYSTEM_READ_DENIED, naming it; a Grep of a
// subtree without denied files is allowed; .git is not entered (ripgrep
// does not search it) and a link out is not followed; a tree with more
// files than Norma checks is HOOK_SEARCH_TOO_WIDE.
func TestEngineGrepReadsTree(t *testing.T) {
	sandboxtest.Require(t)
	w := newHookWorld(t)
	must(t, os.MkdirAll(filepath.Join(w.ws, "src", "deep"), 0o755))
	must(t, os.WriteFile(filepath.Join(w.ws, "src", "deep", "a.go"), []byte("package a"), 0o644))
	must(t, os.MkdirAll(filepath.Join(w.ws, "cfg"), 0o755))
	must(t, os.WriteFile(filepath.Join(w.ws, "cfg", ".env.local"), []byte("TOKEN="+canary), 0o600))
	must(t, os.MkdirAll(filepath.Join(w.ws, "src", ".git", "hooks"), 0o755))
	must(t, os.WriteFile(filepath.Join(w.ws, "src", ".git", "hooks", "pre-commit"), []byte("#!/bin/sh"), 0o755))
	must(t, os.Symlink(filepath.Dir(w.outside), filepath.Join(w.ws, "src", "out")))
	for i, tt := range []struct {
		in       map[string]any
		decision string
		reason   capability.Reason
		names    string
	}{
		{map[string]any{"pattern": "TOKEN", "path": w.ws}, "deny", capability.ReasonFilesystemReadDenied, ""},
		{map[string]any{"pattern": "TOKEN"}, "deny", capability.ReasonFilesystemReadDenied, ""},
		{map[string]any{"pattern": "TOKEN", "path": filepath.Join(w.ws, "cfg")}, "deny", capability.ReasonFilesystemReadDenied, "cfg/.env.local"},
		{map[string]any{"pattern": "package", "path": filepath.Join(w.ws, "src")}, "allow", capability.ReasonAllowed, ""},
	} {
		d, reason, code := decide(t, w.eng, w.pre("Grep", fmt.Sprintf("gr%d", i), tt.in))
		if code != 0 || d != tt.decision || !strings.HasPrefix(reason, "NORMA "+string(tt.reason)) || !strings.Contains(reason, tt.names) {
			t.Errorf("Grep %v: exit %d %s %s; want %s %s", tt.in, code, d, reason, tt.decision, tt.reason)
		}
		if strings.Contains(reason, canary) {
			t.Fatalf("the answer holds the canary: %s", reason)
		}
	}
	// Too many files to decide: refused, not allowed unchecked.
	wide := filepath.Join(w.ws, "wide")
	must(t, os.Mkdir(wide, 0o755))
	for i := range 20001 {
		must(t, os.WriteFile(filepath.Join(wide, fmt.Sprintf("f%d", i)), nil, 0o644))
	}
	d, reason, code := decide(t, w.eng, w.pre("Grep", "gr-wide", map[string]any{"pattern": "x", "path": wide}))
	if code != 0 || d != "deny" || !strings.HasPrefix(reason, "NORMA "+string(capability.ReasonHookSearchTooWide)) {
		t.Errorf("Grep of 20001 files: exit %d %s %s; want a HOOK_SEARCH_TOO_WIDE deny", code, d, reason)
	}
}
