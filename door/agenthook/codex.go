package agenthook

// The Codex CLI hook protocol, from Codex's own hook schemas and parser
// (openai/codex: codex-rs/hooks/schema/generated/pre-tool-use.command.
// {input,output}.schema.json, codex-rs/hooks/src/engine/output_parser.rs,
// codex-rs/hooks/src/events/pre_tool_use.rs) and the hooks page of its
// docs (https://developers.openai.com/codex/hooks):
//
//   - stdin is one JSON object: session_id, turn_id, transcript_path, cwd,
//     hook_event_name, model, permission_mode, and for the tool events
//     tool_name, tool_input and tool_use_id (PostToolUse adds
//     tool_response).
//   - tool_name is "Bash" for the shell (tool_input {"command": "..."}),
//     "apply_patch" for file edits (tool_input.command is the patch
//     envelope, see codex_patch.go), and mcp__SERVER__TOOL for MCP tools
//     (tool_input is the call's arguments).
//   - PreToolUse honours only a deny: hookSpecificOutput.permissionDecision
//     "deny" with a non-empty permissionDecisionReason (shown to the
//     model), or exit 2 with the reason on stderr. "allow" without an
//     updatedInput and "ask" are rejected as unsupported, and a rejected
//     answer lets the call go on, so Norma answers an allow with no
//     decision at all and an approval_required with a deny.
//   - PostToolUse may answer decision "block" with a reason.
//   - Any exit code other than 0 and 2 is a failed hook, and the call goes
//     on: a refusal is never left to one.

import (
	"encoding/json"
	"strings"

	"github.com/norma-run/norma/capability"
)

// CodexCLI is the codec of Codex CLI's command hooks.
type CodexCLI struct{}

// Agent returns Codex.
func (CodexCLI) Agent() Agent { return Codex }

// codexKinds maps the Codex events Norma answers to Norma's.
var codexKinds = map[string]Kind{
	"PreToolUse":   BeforeTool,
	"PostToolUse":  AfterTool,
	"SessionStart": SessionStart,
}

// Parse reads one Codex hook input. session_id, an absolute cwd and a
// known hook_event_name are required; the tool events also need
// tool_name, an object tool_input and tool_use_id.
func (CodexCLI) Parse(in []byte) (Event, error) {
	ci, e, err := parseHook(in, Codex, codexKinds, "Codex ")
	if err != nil {
		return Event{}, err
	}
	if e.Kind == SessionStart {
		return e, nil
	}
	if err := ci.checkTool(true); err != nil {
		return Event{}, err
	}
	e.Tool, e.Input, e.Response = ci.ToolName, ci.ToolInput, ci.ToolResponse
	calls, err := codexCalls(e.Cwd, ci.ToolName, ci.ToolInput)
	if err != nil {
		return Event{}, err
	}
	if len(calls) > 0 {
		e.Call, e.More = &calls[0], calls[1:]
	}
	return e, nil
}

// codexCalls maps one Codex tool call to Norma calls, by way of the
// Claude Code tool of the same purpose so that both agents' calls are
// decided alike: Bash as Bash, each file an apply_patch writes as a Write
// of it, mcp__SERVER__TOOL as the installed plugin's tool. Any other tool
// maps to no call (the decider refuses it unless the user's rules name
// it).
func codexCalls(cwd, tool string, input json.RawMessage) ([]Call, error) {
	switch {
	case tool == "Bash":
		cmd, err := codexCommand(tool, input)
		if err != nil {
			return nil, err
		}
		return claudeCalls(cwd, "Bash", map[string]any{"command": cmd})
	case tool == "apply_patch":
		patch, err := codexCommand(tool, input)
		if err != nil {
			return nil, err
		}
		targets, err := patchTargets(patch)
		if err != nil {
			return nil, err
		}
		var calls []Call
		for _, t := range targets {
			// A deletion, a move's source or destination, an update and
			// an addition all write the path: each is decided as a Write
			// of it, with the lines the patch adds there.
			c, err := claudeCalls(cwd, "Write", map[string]any{"file_path": t.Path, "content": t.Added})
			if err != nil {
				return nil, err
			}
			calls = append(calls, c...)
		}
		return calls, nil
	case strings.HasPrefix(tool, "mcp__"):
		return claudeCalls(cwd, tool, input)
	}
	return nil, nil
}

// codexCommand is tool_input.command of a Bash or apply_patch call.
func codexCommand(tool string, input json.RawMessage) (string, error) {
	var in struct {
		Command *string `json:"command"`
	}
	if err := json.Unmarshal(input, &in); err != nil || in.Command == nil || *in.Command == "" {
		return "", invalid("the %s tool_input has no command string", tool)
	}
	return *in.Command, nil
}

// claudeCalls maps a call in Claude Code's terms (tool name and input) to
// its Norma call, as the Claude Code codec does.
func claudeCalls(cwd, tool string, input any) ([]Call, error) {
	raw, ok := input.(json.RawMessage)
	if !ok {
		b, err := json.Marshal(input)
		if err != nil {
			return nil, invalid("the %s tool_input cannot be mapped", tool)
		}
		raw = b
	}
	c, _, err := claudeCall(cwd, tool, raw)
	if err != nil || c == nil {
		return nil, err
	}
	return []Call{*c}, nil
}

// Render writes Norma's verdict as Codex reads it, with exit 0.
func (CodexCLI) Render(e Event, v Verdict) ([]byte, int) {
	var out any = struct{}{}
	switch e.Kind {
	case BeforeTool:
		switch v.Decision.Mode {
		case capability.Allow:
			// No decision: Codex rejects a bare "allow", and its own
			// approval policy then applies as it would without Norma.
		case capability.ApprovalRequired:
			out = codexDeny(ReasonText(v) + " — Codex hooks cannot ask, so Norma denies it: approve it in Norma " +
				"(a permission rule of Norma's settings that allows it), then retry")
		default:
			out = codexDeny(ReasonText(v))
		}
	case AfterTool:
		if v.Decision.Mode == capability.Deny {
			out = claudeBlock{Decision: "block", Reason: ReasonText(v)}
		}
	case SessionStart:
		if v.Message != "" {
			out = claudeStart{HookSpecificOutput: claudeStartOut{HookEventName: e.Name, AdditionalContext: v.Message}}
		}
	}
	b, err := json.Marshal(out)
	if err != nil { // cannot happen: the types are plain
		return CodexCLI{}.Fail(err)
	}
	return append(b, '\n'), 0
}

// Fail renders a refusal of input that could not be parsed or decided:
// the PreToolUse deny on stdout and exit 2, which Codex reads as a block
// with the reason from stderr (the door writes it there).
func (CodexCLI) Fail(err error) ([]byte, int) {
	b, _ := json.Marshal(codexDeny(ReasonText(FailVerdict(err))))
	return append(b, '\n'), 2
}

func codexDeny(reason string) claudePre {
	return claudePre{HookSpecificOutput: claudePreOut{HookEventName: "PreToolUse", PermissionDecision: "deny", PermissionDecisionReason: reason}}
}
