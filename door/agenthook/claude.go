package agenthook

// The Claude Code hook protocol, as documented in the hooks reference
// (https://code.claude.com/docs/en/hooks, "Hook input" and "Hook output"),
// and as Claude Code 2.1.332 sends it:
//
//   - stdin is one JSON object with session_id, transcript_path, cwd,
//     prompt_id, permission_mode, effort and hook_event_name, and for the
//     tool events tool_name, tool_input and tool_use_id; PostToolUse adds
//     tool_response, SessionStart source and SessionEnd reason.
//   - PreToolUse answers hookSpecificOutput.permissionDecision (allow,
//     deny or ask) with permissionDecisionReason: shown to the model for
//     deny, to the user for ask.
//     With allow or ask, hookSpecificOutput.updatedInput replaces the
//     tool's input before it runs (Norma's sandbox wrapper of a Bash
//     command, confine.go).
//   - PermissionRequest answers hookSpecificOutput.decision.behavior
//     (allow or deny) with a message, or no decision (the user is asked).
//   - PostToolUse may answer decision "block" with a reason, told to the
//     model (the tool already ran).
//   - SessionStart may add hookSpecificOutput.additionalContext.
//   - Exit 0 with JSON on stdout is a decided answer; exit 2 blocks and
//     shows stderr; any other exit code is a non-blocking error, so a
//     refusal is never left to one.

import (
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/internal/keycase"
)

// Claude is the codec of Claude Code's command and HTTP hooks.
type Claude struct {
	// ProjectDir is Claude Code's project directory when known (a command
	// hook's $CLAUDE_PROJECT_DIR): an event whose cwd lies inside it is
	// decided in it, so that a `cd` into a subdirectory neither leaves the
	// project's .norma files behind nor moves the workspace. Empty: the
	// workspace is the event's cwd.
	ProjectDir string
}

// Agent returns ClaudeCode.
func (Claude) Agent() Agent { return ClaudeCode }

// claudeKinds maps Claude Code's event names to Norma's.
var claudeKinds = map[string]Kind{
	"PreToolUse":        BeforeTool,
	"PermissionRequest": PermissionRequest,
	"PostToolUse":       AfterTool,
	"SessionStart":      SessionStart,
	"SessionEnd":        SessionEnd,
}

// Parse reads one Claude Code hook input. A missing field the event needs
// is an error (rendered as a deny): session_id, an absolute cwd and
// hook_event_name always; tool_name and an object tool_input for the tool
// events; tool_use_id for PreToolUse and PostToolUse (PermissionRequest
// carries none).
func (c Claude) Parse(in []byte) (Event, error) {
	ci, e, err := parseHook(in, ClaudeCode, claudeKinds, "")
	if err != nil {
		return Event{}, err
	}
	shellDir := "." // where the agent's shell is, in the workspace
	if p := filepath.Clean(c.ProjectDir); filepath.IsAbs(p) {
		if rel, ok := inside(p, e.Cwd); ok {
			e.Cwd, shellDir = p, rel
		}
	}
	if e.Kind == SessionStart || e.Kind == SessionEnd {
		return e, nil
	}
	if err := ci.checkTool(e.Kind != PermissionRequest); err != nil {
		return Event{}, err
	}
	e.Tool, e.Input, e.Response = ci.ToolName, ci.ToolInput, ci.ToolResponse
	call, inert, err := claudeCall(e.Cwd, ci.ToolName, ci.ToolInput)
	if err != nil {
		return Event{}, err
	}
	if call != nil && call.Tool == "Bash" && shellDir != "." {
		// Claude Code's shell keeps the directory an earlier command
		// cd'd to, and the event's cwd is it: the command runs there,
		// decided as the same line after a cd there (as Gemini's
		// dir_path).
		var in map[string]any
		if err := json.Unmarshal(call.Input, &in); err != nil {
			return Event{}, invalid("the Bash tool_input: %v", err)
		}
		cmd, _ := in["command"].(string)
		in["command"] = inDir(shellDir, cmd)
		if call.Input, err = json.Marshal(in); err != nil {
			return Event{}, invalid("the Bash tool_input: %v", err)
		}
	}
	e.Call, e.Inert = call, inert
	return e, nil
}

// Render writes Norma's verdict in the answer format of e's event, with
// exit 0.
func (Claude) Render(e Event, v Verdict) ([]byte, int) {
	var out any
	switch {
	case noObjection(e, v) && (e.Kind == BeforeTool || e.Kind == PermissionRequest):
		// An inert tool Norma has nothing against: no decision, so that
		// Claude Code's own flow runs. A Norma allow would answer for the
		// user where Claude Code asks them: ExitPlanMode's plan approval,
		// AskUserQuestion's question.
		out = struct{}{}
	case e.Kind == BeforeTool:
		o := claudePreOut{HookEventName: e.Name, PermissionDecision: preDecision(v.Decision.Mode), PermissionDecisionReason: ReasonText(v)}
		if v.Decision.Mode != capability.Deny {
			o.UpdatedInput = v.UpdatedInput
		}
		out = claudePre{HookSpecificOutput: o}
	case e.Kind == PermissionRequest:
		// approval_required leaves the decision to the user, in Claude
		// Code's own dialog: Norma would ask them too, and it has no
		// dialog of its own in another agent's session.
		if v.Decision.Mode == capability.ApprovalRequired {
			out = struct{}{}
			break
		}
		b := claudeBehavior{Behavior: "allow"}
		if v.Decision.Mode != capability.Allow {
			b = claudeBehavior{Behavior: "deny", Message: ReasonText(v)}
		}
		out = claudePerm{HookSpecificOutput: claudePermOut{HookEventName: e.Name, Decision: b}}
	case e.Kind == AfterTool:
		// The call already ran: a result Norma would have denied is
		// flagged to the model (decision block), anything else is only
		// audited.
		if v.Decision.Mode == capability.Deny {
			out = claudeBlock{Decision: "block", Reason: ReasonText(v)}
		} else {
			out = struct{}{}
		}
	case e.Kind == SessionStart:
		if v.Message == "" {
			out = struct{}{}
			break
		}
		out = claudeStart{HookSpecificOutput: claudeStartOut{HookEventName: e.Name, AdditionalContext: v.Message}}
	default:
		out = struct{}{}
	}
	b, err := json.Marshal(out)
	if err != nil { // cannot happen: the types are plain
		return claudeFail(FailVerdict(err))
	}
	return append(b, '\n'), 0
}

// noObjection reports whether v is the engine's allow of an inert tool
// (byName: Norma has nothing to decide on), not an allow of a rule or of
// the gate.
func noObjection(e Event, v Verdict) bool {
	return e.Inert && v.Decision.Mode == capability.Allow && v.Decision.Layer == capability.LayerAgent
}

// Fail renders a refusal of input that could not be parsed or decided: a
// PreToolUse deny on stdout for whoever reads it (an HTTP hook's body) and
// exit 2, which Claude Code treats as block whatever the event, showing
// stderr (the door writes the reason there).
func (Claude) Fail(err error) ([]byte, int) {
	return claudeFail(FailVerdict(err))
}

func claudeFail(v Verdict) ([]byte, int) {
	r := ReasonText(v)
	b, _ := json.Marshal(claudeFailOut{
		claudePre:   claudePre{HookSpecificOutput: claudePreOut{HookEventName: "PreToolUse", PermissionDecision: "deny", PermissionDecisionReason: r}},
		claudeBlock: claudeBlock{Decision: "block", Reason: r},
	})
	return append(b, '\n'), 2
}

func preDecision(m capability.Mode) string {
	switch m {
	case capability.Allow:
		return "allow"
	case capability.ApprovalRequired:
		return "ask"
	}
	return "deny"
}

type claudePre struct {
	HookSpecificOutput claudePreOut `json:"hookSpecificOutput"`
}

type claudePreOut struct {
	HookEventName            string `json:"hookEventName"`
	PermissionDecision       string `json:"permissionDecision"`
	PermissionDecisionReason string `json:"permissionDecisionReason"`
	// UpdatedInput replaces the tool's input before it runs (with allow
	// or ask): see confine.go.
	UpdatedInput json.RawMessage `json:"updatedInput,omitempty"`
}

type claudePerm struct {
	HookSpecificOutput claudePermOut `json:"hookSpecificOutput"`
}

type claudePermOut struct {
	HookEventName string         `json:"hookEventName"`
	Decision      claudeBehavior `json:"decision"`
}

type claudeBehavior struct {
	Behavior string `json:"behavior"`
	Message  string `json:"message,omitempty"`
}

type claudeBlock struct {
	Decision string `json:"decision"`
	Reason   string `json:"reason"`
}

type claudeStart struct {
	HookSpecificOutput claudeStartOut `json:"hookSpecificOutput"`
}

type claudeStartOut struct {
	HookEventName     string `json:"hookEventName"`
	AdditionalContext string `json:"additionalContext"`
}

type claudeFailOut struct {
	claudePre
	claudeBlock
}

// decodeInput decodes a hook input into v, one of the codecs' input
// structs. An input with two keys equal but for case is refused:
// encoding/json fills a field from either, the last winning, where the
// agent reads the exact key, so {"tool_name": "Bash", "Tool_Name":
// "TodoWrite"} would be decided as the one and run as the other.
func decodeInput(in []byte, v any) error {
	if err := json.Unmarshal(in, v); err != nil {
		return invalid("the hook input is not a JSON object: %v", err)
	}
	if err := keycase.JSON(in); err != nil {
		return invalid("the hook input is ambiguous: %v", err)
	}
	return nil
}

// invalid is the refusal of hook input that cannot be decided.
func invalid(format string, a ...any) error {
	return &capability.Error{Decision: capability.Decision{Mode: capability.Deny, Reason: capability.ReasonHookInputInvalid, Layer: capability.LayerAgent},
		Detail: fmt.Sprintf(format, a...)}
}

func isObject(b json.RawMessage) bool {
	var m map[string]json.RawMessage
	return len(b) > 0 && json.Unmarshal(b, &m) == nil && m != nil
}
