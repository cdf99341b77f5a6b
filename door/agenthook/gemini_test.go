package agenthook

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/norma-run/norma/capability"
)

// TestGeminiParse maps real-shaped Gemini CLI hook inputs to Norma calls
// through the Claude Code tool of the same purpose: the shell as Bash
// (after a cd to its dir_path), the file tools as Read, Write, Edit,
// Glob, Grep and LS with workspace paths, web_fetch as a WebFetch of
// every URL of its prompt, an MCP tool by its mcp_context.
func TestGeminiParse(t *testing.T) {
	for _, tt := range []struct {
		file  string
		kind  Kind
		inert bool
		calls []call
	}{
		{"before_shell_cat_env.json", BeforeTool, false, []call{{"Bash", `{"command":"cat .env"}`}}},
		{"before_shell_git_status.json", BeforeTool, false, []call{{"Bash", `{"command":"git status"}`}}},
		{"before_shell_dir.json", BeforeTool, false, []call{{"Bash", `{"command":"cd 'sub' && cat ../.env"}`}}},
		{"before_read_file.json", BeforeTool, false, []call{{"Read", `{"path":"src/main.go"}`}}},
		{"before_write_file.json", BeforeTool, false, []call{{"Write", `{"path":"out/report.md","content":"# Report\n"}`}}},
		{"before_replace.json", BeforeTool, false, []call{{"Edit", `{"path":"src/main.go","old_string":"hello","new_string":"hi","replace_all":false}`}}},
		{"before_glob.json", BeforeTool, false, []call{{"Glob", `{"pattern":"**/*.go","path":"src"}`}}},
		{"before_grep_search.json", BeforeTool, false, []call{{"Grep", `{"pattern":"TODO","path":"src","include":["*.go"]}`}}},
		{"before_search_file_content.json", BeforeTool, false, []call{{"Grep", `{"pattern":"TODO","path":"src","include":["*.go"]}`}}},
		{"before_list_directory.json", BeforeTool, false, []call{{"LS", `{"path":"src"}`}}},
		{"before_web_fetch.json", BeforeTool, false, []call{
			{"WebFetch", `{"url":"https://example.com/docs"}`},
			{"WebFetch", `{"url":"http://10.0.0.5/admin."}`},
			{"WebFetch", `{"url":"http://10.0.0.5/admin"}`},
		}},
		{"before_mcp.json", BeforeTool, false, []call{{"mcp__fs__read_text_file", `{"path":"/home/dev/project/README.md"}`}}},
		{"before_write_todos.json", BeforeTool, true, nil},
		{"after_shell.json", AfterTool, false, []call{{"Bash", `{"command":"git status"}`}}},
		{"session_start.json", SessionStart, false, nil},
	} {
		e, err := GeminiCLI{}.Parse(fixture(t, "gemini/"+tt.file))
		if err != nil {
			t.Fatalf("%s: Parse: %v", tt.file, err)
		}
		if e.Agent != Gemini || e.Kind != tt.kind || e.Inert != tt.inert ||
			e.Session != "5f0d8c1a-2b7e-4c39-9a61-0e4d3f2b8c17" || e.Cwd != "/home/dev/project" {
			t.Errorf("%s: Parse = %+v, want %s (inert %v) in the fixture's session and cwd", tt.file, e, tt.kind, tt.inert)
		}
		checkCalls(t, tt.file, e, tt.calls)
	}
}

// TestGeminiParseRefuses: input Norma cannot decide is an error.
func TestGeminiParseRefuses(t *testing.T) {
	base := `"session_id":"s","cwd":"/p","hook_event_name":"BeforeTool"`
	for _, in := range []string{
		`[]`,
		`{"session_id":"s","cwd":"/p","hook_event_name":"BeforeModel"}`,
		`{"cwd":"/p","hook_event_name":"BeforeTool","tool_name":"read_file","tool_input":{"file_path":"x"}}`,
		`{"session_id":"s","cwd":"p","hook_event_name":"BeforeTool","tool_name":"read_file","tool_input":{"file_path":"x"}}`,
		`{` + base + `,"tool_input":{}}`,
		`{` + base + `,"tool_name":"read_file"}`,
		`{` + base + `,"tool_name":"run_shell_command","tool_input":{"command":""}}`,
		`{` + base + `,"tool_name":"web_fetch","tool_input":{"prompt":"no link here"}}`,
		`{` + base + `,"tool_name":"x","tool_input":{},"mcp_context":{"server_name":"fs"}}`,
		// One parameter under two spellings: which one runs depends on
		// the release.
		`{` + base + `,"tool_name":"read_file","tool_input":{"file_path":"a.txt","absolute_path":"/p/.env"}}`,
		`{` + base + `,"tool_name":"write_file","tool_input":{"file_path":"a.txt","path":".env","content":"x"}}`,
		`{` + base + `,"tool_name":"run_shell_command","tool_input":{"command":"ls","dir_path":".","directory":"/"}}`,
		`{` + base + `,"tool_name":"list_directory","tool_input":{"dir_path":".","path":"/"}}`,
	} {
		e, err := GeminiCLI{}.Parse([]byte(in))
		ce, ok := err.(*capability.Error)
		if !ok || ce.Decision.Reason != capability.ReasonHookInputInvalid {
			t.Errorf("Parse(%q) = %+v, %v; want a HOOK_INPUT_INVALID error", in, e, err)
		}
	}
	for _, tool := range []string{"read_many_files", "save_memory"} {
		e, err := GeminiCLI{}.Parse([]byte(`{` + base + `,"tool_name":"` + tool + `","tool_input":{"include":["a"]}}`))
		if err != nil || e.Call != nil || e.Inert {
			t.Errorf("unmapped %s: Parse = %+v, %v; want no call, not inert", tool, e, err)
		}
	}
}

// TestGeminiRender: a deny is decision deny with the coded reason (what
// Gemini tells the model), an approval a deny that says where to approve,
// an allow leaves the call to Gemini's own policy; a failure is exit 2.
func TestGeminiRender(t *testing.T) {
	pre := Event{Agent: Gemini, Kind: BeforeTool, Name: "BeforeTool"}
	for _, tt := range []struct {
		e    Event
		v    Verdict
		want string
	}{
		{pre, allowV, `{"decision":"allow"}`},
		{pre, denyV, `{"decision":"deny","reason":"NORMA FILESYSTEM_READ_DENIED: .env is denied"}`},
		{Event{Kind: AfterTool, Name: "AfterTool"}, denyV, `{"decision":"deny","reason":"NORMA FILESYSTEM_READ_DENIED: .env is denied"}`},
		{Event{Kind: AfterTool, Name: "AfterTool"}, allowV, `{}`},
		{Event{Kind: SessionEnd, Name: "SessionEnd"}, allowV, `{}`},
	} {
		out, exit := GeminiCLI{}.Render(tt.e, tt.v)
		if exit != 0 || !sameJSON(t, out, []byte(tt.want)) {
			t.Errorf("Render(%s, %s) = %s exit %d, want %s exit 0", tt.e.Kind, tt.v.Decision.Mode, out, exit, tt.want)
		}
	}
	var ans geminiDecision
	out, exit := GeminiCLI{}.Render(pre, askV)
	json.Unmarshal(out, &ans)
	if exit != 0 || ans.Decision != "deny" || !strings.HasPrefix(ans.Reason, "NORMA APPROVAL_REQUIRED: ") || !strings.Contains(ans.Reason, "approve it in Norma") {
		t.Errorf("Render(approval_required) = %s exit %d, want a deny saying to approve in Norma", out, exit)
	}
	out, exit = GeminiCLI{}.Fail(invalid("broken"))
	json.Unmarshal(out, &ans)
	if exit != 2 || ans.Decision != "deny" || !strings.HasPrefix(ans.Reason, "NORMA HOOK_INPUT_INVALID") {
		t.Errorf("Fail = %s exit %d, want a deny and exit 2", out, exit)
	}
}

// FuzzGeminiParse: Parse never panics; what it accepts is an event of
// Gemini CLI in an absolute cwd, whose tool events name a tool, and which
// every verdict renders as JSON. A web_fetch it accepts is decided as at
// least one URL.
func FuzzGeminiParse(f *testing.F) {
	for _, name := range []string{"before_shell_cat_env", "before_shell_dir", "before_read_file", "before_write_file", "before_replace",
		"before_glob", "before_grep_search", "before_list_directory", "before_web_fetch", "before_mcp", "after_shell", "session_start"} {
		f.Add(fixture(f, "gemini/"+name+".json"))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		e, err := GeminiCLI{}.Parse(in)
		if err != nil {
			return
		}
		checkParsed(t, e, Gemini)
		if e.Kind == BeforeTool && e.Tool == "web_fetch" && e.Call == nil {
			t.Fatalf("a web_fetch with no URL decided: %+v", e)
		}
		for _, v := range []Verdict{allowV, askV, denyV} {
			out, exit := GeminiCLI{}.Render(e, v)
			if exit != 0 || !json.Valid(out) {
				t.Fatalf("Render = %q exit %d", out, exit)
			}
		}
	})
}
