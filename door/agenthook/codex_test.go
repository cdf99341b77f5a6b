package agenthook

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/norma-run/norma/capability"
)

// fixture reads testdata/NAME.
func fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// call is an expected Norma call: its tool and its input as JSON.
type call struct {
	tool, input string
}

// sameJSON reports whether a and b are the same JSON value.
func sameJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatalf("not JSON: %s", a)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatalf("not JSON: %s", b)
	}
	return reflect.DeepEqual(x, y)
}

// checkCalls compares e's calls (Call, then More) with want.
func checkCalls(t *testing.T, name string, e Event, want []call) {
	t.Helper()
	var got []Call
	if e.Call != nil {
		got = append(got, *e.Call)
	}
	got = append(got, e.More...)
	if len(got) != len(want) {
		t.Fatalf("%s: %d calls %+v, want %d %v", name, len(got), got, len(want), want)
	}
	for i, w := range want {
		if got[i].Tool != w.tool || !sameJSON(t, got[i].Input, []byte(w.input)) {
			t.Errorf("%s: call %d = %s %s, want %s %s", name, i, got[i].Tool, got[i].Input, w.tool, w.input)
		}
	}
}

// TestCodexParse maps real-shaped Codex hook inputs to Norma calls: Bash
// as Bash, every file an apply_patch touches as a Write of it (an add, an
// update, its move's destination, a deletion), an MCP tool as the plugin
// tool of the same name, with the session and tool_use ids carried over.
func TestCodexParse(t *testing.T) {
	for _, tt := range []struct {
		file      string
		kind      Kind
		tool, use string
		calls     []call
	}{
		{"pre_bash_cat_env.json", BeforeTool, "Bash", "call_Q1xv7TtE0cWb1c2mYqv3aK8f", []call{{"Bash", `{"command":"cat .env"}`}}},
		{"pre_bash_git_status.json", BeforeTool, "Bash", "call_8fRkq2UeXn0p5Hs3VwJd1LbM", []call{{"Bash", `{"command":"git status"}`}}},
		{"pre_apply_patch.json", BeforeTool, "apply_patch", "call_Zp4m9YtB2qWc7nLs0xKe3RvA", []call{
			{"Write", `{"path":"src/hello.txt","content":"hello\nworld\n"}`},
			{"Write", `{"path":"README.md","content":""}`},
			{"Write", `{"path":"docs/README.md","content":"new line\n"}`},
			{"Write", `{"path":"old/notes.txt","content":""}`},
		}},
		{"pre_apply_patch_env.json", BeforeTool, "apply_patch", "call_Hx2n8QsD5vKm1pTe6yWc0JbR", []call{
			{"Write", `{"path":"notes.txt","content":"harmless\n"}`},
			{"Write", `{"path":".env","content":"API_KEY=stolen\n"}`},
		}},
		{"pre_mcp.json", BeforeTool, "mcp__fs__read_text_file", "call_Vb7c3NqL9xRt2mKs5eWp1HdY", []call{{"mcp__fs__read_text_file", `{"path":"/home/dev/project/README.md"}`}}},
		{"post_bash.json", AfterTool, "Bash", "call_8fRkq2UeXn0p5Hs3VwJd1LbM", []call{{"Bash", `{"command":"git status"}`}}},
		{"session_start.json", SessionStart, "", "", nil},
	} {
		e, err := CodexCLI{}.Parse(fixture(t, "codex/"+tt.file))
		if err != nil {
			t.Fatalf("%s: Parse: %v", tt.file, err)
		}
		if e.Agent != Codex || e.Kind != tt.kind || e.Tool != tt.tool || e.ToolUseID != tt.use ||
			e.Session != "019a7c1e-5d2b-7f10-9a4e-3c2b1d0e9f88" || e.Cwd != "/home/dev/project" {
			t.Errorf("%s: Parse = %+v, want %s %s %s in the fixture's session and cwd", tt.file, e, tt.kind, tt.tool, tt.use)
		}
		checkCalls(t, tt.file, e, tt.calls)
	}
}

// TestCodexParseRefuses: input Norma cannot decide is an error (rendered
// as a deny), never a call with no Norma counterpart.
func TestCodexParseRefuses(t *testing.T) {
	base := `"session_id":"s","cwd":"/p","hook_event_name":"PreToolUse","tool_use_id":"c"`
	for _, in := range []string{
		`not json`,
		`{"session_id":"s","cwd":"/p","tool_name":"Bash","tool_input":{"command":"ls"},"tool_use_id":"c"}`,
		`{"session_id":"s","cwd":"/p","hook_event_name":"Stop"}`,
		`{"cwd":"/p","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls"},"tool_use_id":"c"}`,
		`{"session_id":"s","cwd":"rel","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls"},"tool_use_id":"c"}`,
		`{"session_id":"s","cwd":"/p","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls"}}`,
		`{` + base + `,"tool_input":{"command":"ls"}}`,
		`{` + base + `,"tool_name":"Bash","tool_input":"ls"}`,
		`{` + base + `,"tool_name":"Bash","tool_input":{"command":["ls"]}}`,
		`{` + base + `,"tool_name":"Bash","tool_input":{"command":""}}`,
		`{` + base + `,"tool_name":"apply_patch","tool_input":{"command":"*** Begin Patch\n*** End Patch\n"}}`,
		`{` + base + `,"tool_name":"apply_patch","tool_input":{"command":"*** Begin Patch\n***Add File: x\n+y\n*** End Patch\n"}}`,
		`{` + base + `,"tool_name":"apply_patch","tool_input":{"command":"*** Begin Patch\n*** Add File: \n+y\n*** End Patch\n"}}`,
		`{` + base + `,"tool_name":"apply_patch","tool_input":{"command":"*** Begin Patch\n*** Move to: x\n*** End Patch\n"}}`,
	} {
		e, err := CodexCLI{}.Parse([]byte(in))
		ce, ok := err.(*capability.Error)
		if !ok || ce.Decision.Reason != capability.ReasonHookInputInvalid {
			t.Errorf("Parse(%q) = %+v, %v; want a HOOK_INPUT_INVALID error", in, e, err)
		}
	}
	// A tool Norma has no mapping for is no call: the decider refuses it
	// by name unless a rule names it.
	e, err := CodexCLI{}.Parse([]byte(`{` + base + `,"tool_name":"web_search","tool_input":{"query":"x"}}`))
	if err != nil || e.Call != nil || len(e.More) != 0 || e.Inert {
		t.Errorf("unmapped tool: Parse = %+v, %v; want no call", e, err)
	}
}

var (
	allowV = Verdict{Decision: capability.Decision{Mode: capability.Allow, Reason: capability.ReasonAllowed}, Message: "allowed by Norma's policy"}
	askV   = Verdict{Decision: capability.Decision{Mode: capability.ApprovalRequired, Reason: capability.ReasonApprovalRequired}, Message: "asks"}
	denyV  = Verdict{Decision: capability.Decision{Mode: capability.Deny, Reason: capability.ReasonFilesystemReadDenied}, Message: ".env is denied"}
)

// TestCodexRender: Codex honours only a deny, so an allow is no decision
// (a bare "allow" is rejected by Codex), and an approval is a deny that
// says where to approve it; a refused call's reason carries its code.
func TestCodexRender(t *testing.T) {
	pre := Event{Agent: Codex, Kind: BeforeTool, Name: "PreToolUse"}
	for _, tt := range []struct {
		e    Event
		v    Verdict
		want string
	}{
		{pre, allowV, `{}`},
		{pre, denyV, `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"NORMA FILESYSTEM_READ_DENIED: .env is denied"}}`},
		{Event{Kind: AfterTool, Name: "PostToolUse"}, denyV, `{"decision":"block","reason":"NORMA FILESYSTEM_READ_DENIED: .env is denied"}`},
		{Event{Kind: AfterTool, Name: "PostToolUse"}, allowV, `{}`},
		{Event{Kind: SessionStart, Name: "SessionStart"}, Verdict{Message: "ctx"}, `{"hookSpecificOutput":{"hookEventName":"SessionStart","additionalContext":"ctx"}}`},
	} {
		out, exit := CodexCLI{}.Render(tt.e, tt.v)
		if exit != 0 || !sameJSON(t, out, []byte(tt.want)) {
			t.Errorf("Render(%s, %s) = %s exit %d, want %s exit 0", tt.e.Kind, tt.v.Decision.Mode, out, exit, tt.want)
		}
	}
	out, exit := CodexCLI{}.Render(pre, askV)
	var ans struct {
		HookSpecificOutput struct{ PermissionDecision, PermissionDecisionReason string }
	}
	json.Unmarshal(out, &ans)
	if r := ans.HookSpecificOutput.PermissionDecisionReason; exit != 0 || ans.HookSpecificOutput.PermissionDecision != "deny" ||
		!strings.HasPrefix(r, "NORMA APPROVAL_REQUIRED: ") || !strings.Contains(r, "approve it in Norma") {
		t.Errorf("Render(approval_required) = %s exit %d, want a deny saying to approve in Norma", out, exit)
	}
	out, exit = CodexCLI{}.Fail(invalid("broken"))
	json.Unmarshal(out, &ans)
	if exit != 2 || ans.HookSpecificOutput.PermissionDecision != "deny" || !strings.HasPrefix(ans.HookSpecificOutput.PermissionDecisionReason, "NORMA HOOK_INPUT_INVALID") {
		t.Errorf("Fail = %s exit %d, want a deny and exit 2", out, exit)
	}
}

// recorder is a Decider that answers by the call's tool and input and
// records what it was asked.
type recorder struct {
	verdict func(c *Call) Verdict
	asked   []Call
}

func (r *recorder) Decide(_ context.Context, e Event) Verdict {
	if len(e.More) != 0 {
		panic("DecideAll passed More on")
	}
	r.asked = append(r.asked, *e.Call)
	return r.verdict(e.Call)
}

// TestDecideAll: a patch is allowed only when every file is; one denied
// file denies it, an approval beats an allow, and the files after a deny
// are not asked.
func TestDecideAll(t *testing.T) {
	e, err := CodexCLI{}.Parse(fixture(t, "codex/pre_apply_patch.json"))
	if err != nil {
		t.Fatal(err)
	}
	by := func(path string, v Verdict) func(c *Call) Verdict {
		return func(c *Call) Verdict {
			if strings.Contains(string(c.Input), `"`+path+`"`) {
				return v
			}
			return allowV
		}
	}
	for _, tt := range []struct {
		name  string
		v     func(c *Call) Verdict
		want  capability.Mode
		asked int
	}{
		{"all allowed", func(*Call) Verdict { return allowV }, capability.Allow, 4},
		{"move destination denied", by("docs/README.md", denyV), capability.Deny, 3},
		{"deleted file denied", by("old/notes.txt", denyV), capability.Deny, 4},
		{"first file asks", by("src/hello.txt", askV), capability.ApprovalRequired, 4},
	} {
		r := &recorder{verdict: tt.v}
		v := DecideAll(t.Context(), r, e)
		if v.Decision.Mode != tt.want || len(r.asked) != tt.asked {
			t.Errorf("%s: DecideAll = %s after %d calls, want %s after %d", tt.name, v.Decision.Mode, len(r.asked), tt.want, tt.asked)
		}
	}
}

// patchSeeds are apply_patch envelopes: the fixtures' and the shapes
// Codex's parser accepts.
var patchSeeds = []string{
	// An add, an update with a move, and a delete.
	"*** Begin Patch\n*** Add File: a.txt\n+x\n*** Update File: b.txt\n*** Move to: c.txt\n@@\n-y\n+z\n*** Delete File: d.txt\n*** End Patch\n",
	// The heredoc form a shell call wraps around it.
	"apply_patch <<'EOF'\n*** Begin Patch\n*** Update File: src/main.go\n@@ func main() {\n-\tprintln(1)\n+\tprintln(2)\n*** End of File\n*** End Patch\nEOF\n",
	// Indented headers and CRLF line ends.
	"*** Begin Patch\r\n  *** Add File: w.txt\r\n+1\r\n*** End Patch\r\n",
	// Content lines that look like headers.
	"*** Begin Patch\n*** Add File: x\n+*** Delete File: y\n*** End Patch\n",
	// An absolute path and one with a parent step.
	"*** Begin Patch\n*** Add File: /etc/passwd\n+r\n*** Update File: ../out.txt\n@@\n+s\n*** End Patch\n",
}

// FuzzPatchTargets: every header line with a path is a target (nothing a
// patch writes is missed), and a patch that yields no error names at
// least one file.
func FuzzPatchTargets(f *testing.F) {
	for _, s := range patchSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, patch string) {
		targets, err := patchTargets(patch)
		if err != nil {
			if _, ok := err.(*capability.Error); !ok {
				t.Fatalf("error %T is not a *capability.Error", err)
			}
			return
		}
		if len(targets) == 0 {
			t.Fatal("no error and no target")
		}
		have := map[string]bool{}
		for _, tg := range targets {
			have[tg.Path] = true
		}
		for _, line := range strings.Split(patch, "\n") {
			tl := strings.TrimSpace(line)
			for _, m := range patchMarkers {
				if rest, ok := strings.CutPrefix(tl, m.prefix); ok && !have[strings.TrimSpace(rest)] {
					t.Fatalf("header %q is not among the targets %+v", tl, targets)
				}
			}
		}
	})
}

// FuzzCodexParse: Parse never panics; what it accepts is an event of
// Codex in an absolute cwd, whose tool events name a tool, and which every
// verdict renders as JSON.
func FuzzCodexParse(f *testing.F) {
	for _, name := range []string{"pre_bash_cat_env", "pre_bash_git_status", "pre_apply_patch", "pre_apply_patch_env", "pre_mcp", "post_bash", "session_start"} {
		f.Add(fixture(f, "codex/"+name+".json"))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		e, err := CodexCLI{}.Parse(in)
		if err != nil {
			return
		}
		checkParsed(t, e, Codex)
		for _, v := range []Verdict{allowV, askV, denyV} {
			out, exit := CodexCLI{}.Render(e, v)
			if exit != 0 || !json.Valid(out) {
				t.Fatalf("Render = %q exit %d", out, exit)
			}
		}
	})
}

// checkParsed checks what every codec's accepted event must hold.
func checkParsed(t *testing.T, e Event, a Agent) {
	t.Helper()
	if e.Agent != a || e.Session == "" || !filepath.IsAbs(e.Cwd) {
		t.Fatalf("accepted %+v", e)
	}
	if (e.Kind == BeforeTool || e.Kind == AfterTool) && e.Tool == "" {
		t.Fatalf("a tool event with no tool: %+v", e)
	}
	if e.Call == nil && len(e.More) != 0 {
		t.Fatalf("More with no Call: %+v", e)
	}
	for _, c := range append([]Call{}, e.More...) {
		if c.Tool == "" || !json.Valid(c.Input) {
			t.Fatalf("bad call %+v", c)
		}
	}
}
