package agenthook

// The Gemini CLI hook protocol, from its hooks reference
// (https://geminicli.com/docs/hooks/reference, docs/hooks/reference.md of
// google-gemini/gemini-cli), its hook types
// (packages/core/src/hooks/types.ts) and its tool declarations
// (packages/core/src/tools/definitions/base-declarations.ts,
// docs/tools/file-system.md, docs/tools/shell.md, docs/tools/web-fetch.md):
//
//   - stdin is one JSON object: session_id, transcript_path, cwd,
//     hook_event_name and timestamp; BeforeTool and AfterTool add
//     tool_name, tool_input and, for an MCP tool, mcp_context
//     (server_name, tool_name); AfterTool adds tool_response. There is no
//     tool call id: the audit record carries the session and the time.
//   - BeforeTool blocks with decision "deny" (or "block") and a reason,
//     which Gemini sends to the model as the tool's error; any other
//     answer leaves the call to Gemini's own policy. Exit 2 blocks too,
//     with stderr as the reason; any other exit code is a warning and the
//     call goes on, so a refusal is never left to one.
//   - AfterTool's deny replaces the tool's output with the reason.
//   - SessionStart may add hookSpecificOutput.additionalContext;
//     SessionEnd is advisory.
//
// Recent Gemini CLI releases also honour decision "ask" in BeforeTool (a
// forced confirmation), but the reference documents only deny as
// effective there and a release without it runs the call: Norma renders
// approval_required as a deny that says to approve the call in Norma.

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"github.com/norma-run/norma/capability"
)

// GeminiCLI is the codec of Gemini CLI's command hooks.
type GeminiCLI struct{}

// Agent returns Gemini.
func (GeminiCLI) Agent() Agent { return Gemini }

// geminiInput is Gemini CLI's hook input. Fields Norma does not use
// (transcript_path, timestamp, ...) are tolerated and ignored.
type geminiInput struct {
	SessionID     string          `json:"session_id"`
	Cwd           string          `json:"cwd"`
	HookEventName string          `json:"hook_event_name"`
	ToolName      string          `json:"tool_name"`
	ToolInput     json.RawMessage `json:"tool_input"`
	ToolResponse  json.RawMessage `json:"tool_response"`
	MCPContext    *struct {
		ServerName string `json:"server_name"`
		ToolName   string `json:"tool_name"`
	} `json:"mcp_context"`
}

// geminiKinds maps the Gemini CLI events Norma answers to Norma's.
var geminiKinds = map[string]Kind{
	"BeforeTool":   BeforeTool,
	"AfterTool":    AfterTool,
	"SessionStart": SessionStart,
	"SessionEnd":   SessionEnd,
}

// geminiInert are Gemini CLI's tools with no effect outside the agent's
// own state: its todo list, questions to its user, plan mode, its topic.
var geminiInert = map[string]bool{
	"write_todos": true, "ask_user": true, "enter_plan_mode": true, "exit_plan_mode": true, "update_topic": true,
}

// Parse reads one Gemini CLI hook input. session_id, an absolute cwd and a
// known hook_event_name are required; the tool events also need tool_name
// and an object tool_input.
func (GeminiCLI) Parse(in []byte) (Event, error) {
	var gi geminiInput
	if err := decodeInput(in, &gi); err != nil {
		return Event{}, err
	}
	kind, ok := geminiKinds[gi.HookEventName]
	switch {
	case gi.HookEventName == "":
		return Event{}, invalid("the hook input has no hook_event_name")
	case !ok:
		return Event{}, invalid("Norma does not answer the Gemini CLI %q hook event", gi.HookEventName)
	case gi.SessionID == "":
		return Event{}, invalid("the hook input has no session_id")
	case gi.Cwd == "" || !filepath.IsAbs(gi.Cwd):
		return Event{}, invalid("the hook input has no absolute cwd")
	}
	e := Event{Agent: Gemini, Kind: kind, Name: gi.HookEventName, Session: gi.SessionID, Cwd: filepath.Clean(gi.Cwd)}
	if kind == SessionStart || kind == SessionEnd {
		return e, nil
	}
	switch {
	case gi.ToolName == "":
		return Event{}, invalid("the %s hook input has no tool_name", gi.HookEventName)
	case !isObject(gi.ToolInput):
		return Event{}, invalid("the %s hook input has no tool_input object", gi.HookEventName)
	}
	e.Tool, e.Input, e.Response = gi.ToolName, gi.ToolInput, gi.ToolResponse
	if mc := gi.MCPContext; mc != nil {
		// An MCP tool: Norma names it mcp__SERVER__TOOL, as the installed
		// plugin's tool; Gemini's own name for it may differ.
		if mc.ServerName == "" || mc.ToolName == "" {
			return Event{}, invalid("the %s hook input has an mcp_context with no server_name or tool_name", gi.HookEventName)
		}
		calls, err := claudeCalls(e.Cwd, "mcp__"+mc.ServerName+"__"+mc.ToolName, gi.ToolInput)
		if err != nil {
			return Event{}, err
		}
		e.Call = &calls[0]
		return e, nil
	}
	if geminiInert[gi.ToolName] {
		e.Inert = true
		return e, nil
	}
	calls, err := geminiCalls(e.Cwd, gi.ToolName, gi.ToolInput)
	if err != nil {
		return Event{}, err
	}
	if len(calls) > 0 {
		e.Call, e.More = &calls[0], calls[1:]
	}
	return e, nil
}

// geminiTools map a Gemini CLI tool's input onto the Claude Code tool of
// the same purpose, whose mapping to Norma's tools (claude_map.go) then
// applies, so that both agents' calls are decided alike. Gemini has
// renamed parameters over its releases (path → file_path, dir_path): the
// spelling given is read, and an input that gives two is refused (see
// geminiArgs.first).
var geminiTools = map[string]func(a *geminiArgs) (string, map[string]any, error){
	"run_shell_command": func(a *geminiArgs) (string, map[string]any, error) {
		cmd, _ := a.in["command"].(string)
		if cmd == "" {
			return "", nil, invalid("the run_shell_command tool_input has no command string")
		}
		// The command runs in dir_path (relative to the project root) when
		// one is given: decided as the same line after a cd there.
		if dir := a.firstString("dir_path", "directory"); dir != "" && filepath.Clean(dir) != "." {
			cmd = inDir(dir, cmd)
		}
		out := map[string]any{"command": cmd}
		if b, ok := a.in["is_background"].(bool); ok {
			out["run_in_background"] = b
		}
		return "Bash", out, nil
	},
	"read_file": func(a *geminiArgs) (string, map[string]any, error) {
		return "Read", map[string]any{"file_path": a.first("file_path", "absolute_path", "path")}, nil
	},
	"write_file": func(a *geminiArgs) (string, map[string]any, error) {
		return "Write", map[string]any{"file_path": a.first("file_path", "path"), "content": a.in["content"]}, nil
	},
	"replace": func(a *geminiArgs) (string, map[string]any, error) {
		out := map[string]any{"file_path": a.first("file_path", "path"), "old_string": a.in["old_string"], "new_string": a.in["new_string"]}
		if b, ok := a.in["allow_multiple"].(bool); ok {
			out["replace_all"] = b
		}
		return "Edit", out, nil
	},
	"glob": func(a *geminiArgs) (string, map[string]any, error) {
		return "Glob", withPath(map[string]any{"pattern": a.in["pattern"]}, a.first("dir_path", "path")), nil
	},
	"search_file_content": geminiGrep,
	"grep_search":         geminiGrep,
	"list_directory": func(a *geminiArgs) (string, map[string]any, error) {
		out := withPath(map[string]any{}, a.first("dir_path", "path"))
		if ig, ok := a.in["ignore"].([]any); ok {
			out["ignore"] = ig
		}
		return "LS", out, nil
	},
	"google_web_search": func(a *geminiArgs) (string, map[string]any, error) {
		return "WebSearch", map[string]any{"query": a.in["query"]}, nil
	},
}

func geminiGrep(a *geminiArgs) (string, map[string]any, error) {
	out := withPath(map[string]any{"pattern": a.in["pattern"]}, a.first("dir_path", "path"))
	if g := a.firstString("include_pattern", "include"); g != "" {
		out["glob"] = g
	}
	return "Grep", out, nil
}

// geminiCalls maps one Gemini CLI tool call to Norma calls: web_fetch to a
// WebFetch of every URL its prompt names, the tools of geminiTools through
// their Claude Code counterparts, and any other tool to no call (the
// decider refuses it unless the user's rules name it).
func geminiCalls(cwd, tool string, input json.RawMessage) ([]Call, error) {
	var in map[string]any
	d := json.NewDecoder(strings.NewReader(string(input)))
	d.UseNumber()
	if err := d.Decode(&in); err != nil || in == nil {
		return nil, invalid("the %s tool_input is not a JSON object", tool)
	}
	if tool == "web_fetch" {
		prompt, _ := in["prompt"].(string)
		urls := promptURLs(prompt)
		if len(urls) == 0 {
			return nil, invalid("the web_fetch prompt names no http(s) URL")
		}
		var calls []Call
		for _, u := range urls {
			c, err := claudeCalls(cwd, "WebFetch", map[string]any{"url": u})
			if err != nil {
				return nil, err
			}
			calls = append(calls, c...)
		}
		return calls, nil
	}
	if strings.HasPrefix(tool, "mcp__") {
		return claudeCalls(cwd, tool, input)
	}
	m, ok := geminiTools[tool]
	if !ok {
		return nil, nil
	}
	a := &geminiArgs{tool: tool, in: in}
	name, out, err := m(a)
	if err == nil {
		err = a.err
	}
	if err != nil {
		return nil, err
	}
	return claudeCalls(cwd, name, out)
}

// urlInPrompt finds the URLs of a web_fetch prompt as Gemini CLI does
// (every http:// or https:// run up to whitespace). It matches the scheme
// in any case, more than Gemini fetches: a URL Norma decides and Gemini
// skips costs nothing, the other way round would be a fetch unseen.
// urlInPrompt is compiled on first use (start-up cost of every hook).
var urlInPrompt = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)https?://[^\s]+`) })

// promptURLs lists the URLs of a web_fetch prompt: each run as it stands
// and, when a sentence's punctuation ends it, also without that
// punctuation, so that whichever of the two Gemini fetches is decided.
func promptURLs(prompt string) []string {
	var out []string
	for _, u := range urlInPrompt().FindAllString(prompt, -1) {
		out = append(out, u)
		if t := strings.TrimRight(u, ".,;:!?)]}>'\""); t != u && strings.Contains(t, "://") {
			out = append(out, t)
		}
	}
	return out
}

// geminiArgs is a Gemini CLI tool's input, read by its mappings.
type geminiArgs struct {
	tool string
	in   map[string]any
	err  error // the first parameter given under two spellings
}

// first returns the value of whichever of keys, the spellings of one
// parameter across Gemini CLI releases, the input has. An input that has
// more than one of them is refused (a.err): the release that runs the
// call reads one of them, Norma cannot know which, and deciding on the
// other would let {"file_path": "a.txt", "absolute_path": ".env"} read
// the file it never decided.
func (a *geminiArgs) first(keys ...string) any {
	var v any
	var got []string
	for _, k := range keys {
		if x, ok := a.in[k]; ok {
			if got == nil {
				v = x
			}
			got = append(got, k)
		}
	}
	if len(got) > 1 && a.err == nil {
		a.err = invalid("the %s tool_input gives one parameter twice, as %s: Norma cannot tell which one Gemini CLI uses",
			a.tool, strings.Join(got, " and "))
	}
	return v
}

func (a *geminiArgs) firstString(keys ...string) string {
	s, _ := a.first(keys...).(string)
	return s
}

// withPath sets out["path"] to p when one is given.
func withPath(out map[string]any, p any) map[string]any {
	if s, ok := p.(string); p != nil && !(ok && s == "") {
		out["path"] = p
	}
	return out
}

// inDir is cmd as run in directory dir: the same line after a cd there,
// which the gate follows (shellcmd.Names).
func inDir(dir, cmd string) string {
	return "cd " + shellQuote(dir) + " && " + cmd
}

// shellQuote quotes s as one Bash word.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Render writes Norma's verdict as Gemini CLI reads it, with exit 0.
func (GeminiCLI) Render(e Event, v Verdict) ([]byte, int) {
	var out any = struct{}{}
	switch e.Kind {
	case BeforeTool:
		switch {
		case noObjection(e, v):
			// An inert tool (exit_plan_mode, ask_user): no decision, so
			// that Gemini CLI's own confirmation runs (see Claude.Render).
		case v.Decision.Mode == capability.Allow:
			out = geminiDecision{Decision: "allow"}
		case v.Decision.Mode == capability.ApprovalRequired:
			out = geminiDecision{Decision: "deny", Reason: ReasonText(v) + " — Norma requires approval for this call and " +
				"Gemini CLI's hooks cannot ask, so it is denied: approve it in Norma (a permission rule of Norma's settings that allows it), then retry"}
		default:
			out = geminiDecision{Decision: "deny", Reason: ReasonText(v)}
		}
	case AfterTool:
		if v.Decision.Mode == capability.Deny {
			out = geminiDecision{Decision: "deny", Reason: ReasonText(v)}
		}
	case SessionStart:
		if v.Message != "" {
			out = claudeStart{HookSpecificOutput: claudeStartOut{HookEventName: e.Name, AdditionalContext: v.Message}}
		}
	}
	b, err := json.Marshal(out)
	if err != nil { // cannot happen: the types are plain
		return GeminiCLI{}.Fail(err)
	}
	return append(b, '\n'), 0
}

// Fail renders a refusal of input that could not be parsed or decided: a
// deny on stdout and exit 2, which Gemini CLI reads as a block with the
// reason from stderr (the door writes it there).
func (GeminiCLI) Fail(err error) ([]byte, int) {
	b, _ := json.Marshal(geminiDecision{Decision: "deny", Reason: ReasonText(FailVerdict(err))})
	return append(b, '\n'), 2
}

type geminiDecision struct {
	Decision string `json:"decision"`
	Reason   string `json:"reason,omitempty"`
}
