package agenthook

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/norma-run/norma/capability"
)

func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "claude", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestClaudeParse maps real-shaped Claude Code 2.1.332 hook inputs to
// events and Norma calls.
func TestClaudeParse(t *testing.T) {
	tests := []struct {
		file      string
		kind      Kind
		tool      string // Norma's tool; "" when Call is nil
		input     string // Norma's input, as JSON
		inert     bool
		toolUseID string
	}{
		{"pre_read.json", BeforeTool, "Read", `{"limit":50,"offset":10,"path":"src/main.go"}`, false, "toolu_01Read"},
		{"pre_read_outside.json", BeforeTool, "Read", `{"path":"/etc/passwd"}`, false, "toolu_01ReadOut"},
		{"pre_write.json", BeforeTool, "Write", `{"content":"hello","path":"out/r.md"}`, false, "toolu_01Write"},
		{"pre_edit.json", BeforeTool, "Edit", `{"new_string":"y","old_string":"x","path":"a.go","replace_all":true}`, false, "toolu_01Edit"},
		{"pre_edit_create.json", BeforeTool, "Write", `{"content":"package x","path":"new.go"}`, false, "toolu_01EditNew"},
		{"pre_multiedit.json", BeforeTool, "MultiEdit", `{"edits":[{"new_string":"b","old_string":"a"}],"path":"a.go"}`, false, "toolu_01Multi"},
		{"pre_notebook.json", BeforeTool, "Write", `{"content":"print(1)","path":"n.ipynb"}`, false, "toolu_01Nb"},
		{"pre_glob.json", BeforeTool, "Glob", `{"path":"src","pattern":"**/*.go"}`, false, "toolu_01Glob"},
		{"pre_grep.json", BeforeTool, "Grep", `{"include":["*.go"],"path":".","pattern":"TODO"}`, false, "toolu_01Grep"},
		{"pre_ls.json", BeforeTool, "LS", `{"path":"docs"}`, false, "toolu_01LS"},
		{"pre_bash.json", BeforeTool, "Bash", `{"command":"git status","description":"Show working tree status","timeout_ms":120000}`, false, "toolu_01Bash"},
		{"pre_webfetch.json", BeforeTool, "WebFetch", `{"url":"http://10.0.0.1/admin"}`, false, "toolu_01Fetch"},
		{"pre_websearch.json", BeforeTool, "WebSearch", `{"query":"go 1.26 release notes"}`, false, "toolu_01Search"},
		{"pre_mcp.json", BeforeTool, "mcp__github__create_issue", `{"title":"t","body":"b"}`, false, "toolu_01Mcp"},
		{"pre_todo.json", BeforeTool, "", "", true, "toolu_01Todo"},
		{"pre_unmapped.json", BeforeTool, "", "", false, "toolu_01Workflow"},
		// Decided by the definition they start (definitions.go), then inert.
		{"pre_agent.json", BeforeTool, "", "", true, "toolu_01Agent"},
		{"pre_skill.json", BeforeTool, "", "", true, "toolu_01Skill"},
		{"pre_slash.json", BeforeTool, "", "", true, "toolu_01Slash"},
		{"perm_bash.json", PermissionRequest, "Bash", `{"command":"rm -rf build"}`, false, ""},
		{"post_read.json", AfterTool, "Read", `{"path":"a.go"}`, false, "toolu_01Read"},
		{"session_start.json", SessionStart, "", "", false, ""},
		{"session_end.json", SessionEnd, "", "", false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			e, err := Claude{}.Parse(readFixture(t, tt.file))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if e.Agent != ClaudeCode || e.Kind != tt.kind || e.Session != "0b8c6a52-4d1e-4f3a-9d7e-2a1c5e9b7f10" || e.Cwd != "/w/proj" ||
				e.PermissionMode != "default" || e.ToolUseID != tt.toolUseID || e.Inert != tt.inert {
				t.Fatalf("Parse = %+v", e)
			}
			if tt.tool == "" {
				if e.Call != nil {
					t.Fatalf("Call = %s %s, want none", e.Call.Tool, e.Call.Input)
				}
				return
			}
			if e.Call == nil || e.Call.Tool != tt.tool {
				t.Fatalf("Call = %+v, want tool %s", e.Call, tt.tool)
			}
			var got, want any
			json.Unmarshal(e.Call.Input, &got)
			json.Unmarshal([]byte(tt.input), &want)
			gb, _ := json.Marshal(got)
			wb, _ := json.Marshal(want)
			if string(gb) != string(wb) {
				t.Fatalf("Call input = %s, want %s", gb, wb)
			}
		})
	}
}

// TestClaudeParseRefuses: input that is not a complete hook event is an
// error with HOOK_INPUT_INVALID, never an event.
func TestClaudeParseRefuses(t *testing.T) {
	full := map[string]any{"session_id": "s", "cwd": "/w", "hook_event_name": "PreToolUse", "tool_name": "Read",
		"tool_input": map[string]any{"file_path": "/w/a"}, "tool_use_id": "t"}
	without := func(k string) []byte {
		m := map[string]any{}
		for x, v := range full {
			if x != k {
				m[x] = v
			}
		}
		b, _ := json.Marshal(m)
		return b
	}
	with := func(k string, v any) []byte {
		m := map[string]any{}
		for x, y := range full {
			m[x] = y
		}
		m[k] = v
		b, _ := json.Marshal(m)
		return b
	}
	tests := []struct {
		name string
		in   []byte
	}{
		{"empty", nil},
		{"garbage", []byte("\x00\xffnot json")},
		{"array", []byte(`[1,2]`)},
		{"null", []byte(`null`)},
		{"truncated", []byte(`{"session_id":"s","cwd":"/w"`)},
		{"no session_id", without("session_id")},
		{"no cwd", without("cwd")},
		{"relative cwd", with("cwd", "w")},
		{"no hook_event_name", without("hook_event_name")},
		{"unknown event", with("hook_event_name", "Stop")},
		{"no tool_name", without("tool_name")},
		{"no tool_input", without("tool_input")},
		{"tool_input not an object", with("tool_input", "cat .env")},
		{"tool_input null", with("tool_input", nil)},
		{"no tool_use_id", without("tool_use_id")},
		{"session_id a number", with("session_id", 7)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := Claude{}.Parse(tt.in)
			if err == nil {
				t.Fatalf("Parse(%q) = %+v, want an error", tt.in, e)
			}
			if r := capability.ReasonOf(err); r != capability.ReasonHookInputInvalid {
				t.Fatalf("Parse(%q) reason = %q (%v), want HOOK_INPUT_INVALID", tt.in, r, err)
			}
		})
	}
}

func claudeOut(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("answer %q is not a JSON object: %v", b, err)
	}
	return m
}

func hso(t *testing.T, m map[string]any) map[string]any {
	t.Helper()
	h, ok := m["hookSpecificOutput"].(map[string]any)
	if !ok {
		t.Fatalf("no hookSpecificOutput in %v", m)
	}
	return h
}

// TestClaudeRender: each event's answer in Claude Code's format.
func TestClaudeRender(t *testing.T) {
	allow := Verdict{Decision: capability.Decision{Mode: capability.Allow, Reason: capability.ReasonAllowed}, Message: "ok"}
	ask := Verdict{Decision: capability.Decision{Mode: capability.ApprovalRequired, Reason: capability.ReasonApprovalRequired}, Message: "asks"}
	den := Verdict{Decision: capability.Decision{Mode: capability.Deny, Reason: capability.ReasonFilesystemReadDenied}, Message: "no .env"}
	pre := Event{Kind: BeforeTool, Name: "PreToolUse"}
	for _, tt := range []struct {
		v        Verdict
		decision string
	}{{allow, "allow"}, {ask, "ask"}, {den, "deny"}} {
		out, exit := Claude{}.Render(pre, tt.v)
		h := hso(t, claudeOut(t, out))
		if exit != 0 || h["hookEventName"] != "PreToolUse" || h["permissionDecision"] != tt.decision ||
			!strings.HasPrefix(h["permissionDecisionReason"].(string), "NORMA "+string(tt.v.Decision.Reason)+": ") {
			t.Errorf("PreToolUse %s: exit %d, %s", tt.decision, exit, out)
		}
	}
	perm := Event{Kind: PermissionRequest, Name: "PermissionRequest"}
	out, exit := Claude{}.Render(perm, allow)
	if d := hso(t, claudeOut(t, out))["decision"].(map[string]any); exit != 0 || d["behavior"] != "allow" {
		t.Errorf("PermissionRequest allow: %d %s", exit, out)
	}
	out, exit = Claude{}.Render(perm, den)
	if d := hso(t, claudeOut(t, out))["decision"].(map[string]any); exit != 0 || d["behavior"] != "deny" || !strings.Contains(d["message"].(string), "FILESYSTEM_READ_DENIED") {
		t.Errorf("PermissionRequest deny: %d %s", exit, out)
	}
	// approval_required leaves it to the user: no decision.
	if out, exit = (Claude{}).Render(perm, ask); exit != 0 || len(claudeOut(t, out)) != 0 {
		t.Errorf("PermissionRequest ask: %d %s, want {}", exit, out)
	}
	post := Event{Kind: AfterTool, Name: "PostToolUse"}
	if out, exit = (Claude{}).Render(post, allow); exit != 0 || len(claudeOut(t, out)) != 0 {
		t.Errorf("PostToolUse allowed: %d %s, want {}", exit, out)
	}
	if out, exit = (Claude{}).Render(post, den); exit != 0 || claudeOut(t, out)["decision"] != "block" {
		t.Errorf("PostToolUse denied: %d %s, want decision block", exit, out)
	}
	start := Event{Kind: SessionStart, Name: "SessionStart"}
	if out, exit = (Claude{}).Render(start, allow); exit != 0 || hso(t, claudeOut(t, out))["additionalContext"] != "ok" {
		t.Errorf("SessionStart: %d %s", exit, out)
	}
	if out, exit = (Claude{}).Render(Event{Kind: SessionEnd, Name: "SessionEnd"}, allow); exit != 0 || len(claudeOut(t, out)) != 0 {
		t.Errorf("SessionEnd: %d %s", exit, out)
	}
}

// TestClaudeFail: a failure is a deny on stdout and exit 2, whatever the
// event.
func TestClaudeFail(t *testing.T) {
	out, exit := Claude{}.Fail(errors.New("boom"))
	m := claudeOut(t, out)
	h := hso(t, m)
	if exit != 2 || h["permissionDecision"] != "deny" || m["decision"] != "block" ||
		!strings.HasPrefix(h["permissionDecisionReason"].(string), "NORMA HOOK_DECIDE_FAILED: ") {
		t.Fatalf("Fail = %d %s", exit, out)
	}
}

// FuzzClaudeParse: no input makes the parser panic; what it accepts is a
// complete event whose answer renders as JSON.
func FuzzClaudeParse(f *testing.F) {
	ents, _ := os.ReadDir(filepath.Join("testdata", "claude"))
	for _, e := range ents {
		f.Add(readFixture(f, e.Name()))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		e, err := Claude{}.Parse(in)
		if err != nil {
			if capability.ReasonOf(err) != capability.ReasonHookInputInvalid {
				t.Fatalf("Parse error %v without HOOK_INPUT_INVALID", err)
			}
			return
		}
		if e.Session == "" || !filepath.IsAbs(e.Cwd) || e.Name == "" {
			t.Fatalf("Parse accepted an incomplete event %+v", e)
		}
		if e.Kind == BeforeTool && (e.Tool == "" || e.ToolUseID == "") {
			t.Fatalf("Parse accepted a tool event without tool or id: %+v", e)
		}
		if e.Call != nil && !json.Valid(e.Call.Input) {
			t.Fatalf("Call input %q is not JSON", e.Call.Input)
		}
		for _, m := range []capability.Mode{capability.Allow, capability.ApprovalRequired, capability.Deny} {
			out, _ := Claude{}.Render(e, Verdict{Decision: capability.Decision{Mode: m, Reason: capability.ReasonAllowed}})
			if !json.Valid(out) {
				t.Fatalf("Render = %q, not JSON", out)
			}
		}
	})
}

// TestClaudeProjectDir: with the project directory known, a cwd inside it
// is decided in the project, paths relative to it; a cwd outside it is
// its own workspace.
func TestClaudeProjectDir(t *testing.T) {
	in := []byte(`{"session_id":"s","cwd":"/w/proj/sub","hook_event_name":"PreToolUse","tool_name":"Read","tool_input":{"file_path":"/w/proj/sub/a.go"},"tool_use_id":"t"}`)
	e, err := Claude{ProjectDir: "/w/proj"}.Parse(in)
	if err != nil || e.Cwd != "/w/proj" || string(e.Call.Input) != `{"path":"sub/a.go"}` {
		t.Fatalf("Parse = %+v %s, %v", e, e.Call.Input, err)
	}
	e, err = Claude{ProjectDir: "/elsewhere"}.Parse(in)
	if err != nil || e.Cwd != "/w/proj/sub" || string(e.Call.Input) != `{"path":"a.go"}` {
		t.Fatalf("Parse with another project = %+v %s, %v", e, e.Call.Input, err)
	}
	// The shell is where an earlier command cd'd to: its command runs there.
	in = []byte(`{"session_id":"s","cwd":"/w/proj/it's","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"cat ../.env"},"tool_use_id":"t"}`)
	e, err = Claude{ProjectDir: "/w/proj"}.Parse(in)
	if err != nil || e.Cwd != "/w/proj" || string(e.Call.Input) != `{"command":"cd 'it'\\''s' \u0026\u0026 cat ../.env"}` {
		t.Fatalf("Parse of Bash in a subdirectory = %+v %s, %v", e, e.Call.Input, err)
	}
}
