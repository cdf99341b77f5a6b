package agenthook

import (
	"context"
	"encoding/json"

	"github.com/norma-run/norma/capability"
)

// Agent names an agent whose hooks Norma answers.
type Agent string

const (
	ClaudeCode Agent = "claude-code"
	Codex      Agent = "codex"
	Gemini     Agent = "gemini"
)

// Kind is what an event asks, in Norma's terms; each codec maps its
// agent's event names onto these.
type Kind string

const (
	// BeforeTool asks whether a tool call may run (Claude Code and Codex
	// PreToolUse, Gemini BeforeTool).
	BeforeTool Kind = "before_tool"
	// PermissionRequest is asked when the agent would prompt its user
	// (Claude Code PermissionRequest): Norma's decision answers instead.
	PermissionRequest Kind = "permission_request"
	// AfterTool reports a call that ran (PostToolUse, AfterTool).
	AfterTool Kind = "after_tool"
	// SessionStart and SessionEnd bracket an agent session.
	SessionStart Kind = "session_start"
	SessionEnd   Kind = "session_end"
)

// Event is one hook invocation of an agent, parsed by its [Codec].
type Event struct {
	Agent Agent
	Kind  Kind
	// Name is the agent's own event name (PreToolUse, BeforeTool, ...).
	Name string
	// Session and ToolUseID identify the agent's session and call; they
	// go into the audit log with the decision.
	Session   string
	ToolUseID string
	// Cwd is the agent's working directory: the workspace decided in.
	Cwd string
	// PermissionMode is the agent's own permission mode, as it sent it.
	PermissionMode string
	// Tool and Input are the call as the agent named it.
	Tool  string
	Input json.RawMessage
	// Call is the same call as a Norma tool call (a built-in tool or
	// mcp__SERVER__TOOL of an installed plugin), or nil when the codec has
	// no mapping for the tool: the decider then decides on the name alone.
	Call *Call
	// More are further calls the same event makes, each decided as Call
	// is: the files of a Codex apply_patch past the first, the URLs of a
	// Gemini web_fetch past the first. The event's verdict is the most
	// restrictive of them all (see [DecideAll]).
	More []Call
	// Inert says the tool has no Norma counterpart because it has no
	// effect outside the agent's own state: its todo list, a question to
	// its user, leaving plan mode, a subagent (whose own calls are hooked
	// too). Call is then nil; the decider allows it unless a permission
	// rule of the user's settings names it.
	Inert bool
	// Response is what the tool returned (AfterTool only).
	Response json.RawMessage
}

// Call is a tool call in Norma's terms.
type Call struct {
	Tool  string
	Input json.RawMessage
}

// Verdict is Norma's answer to an event.
type Verdict struct {
	// Decision is the gate's decision: Allow, ApprovalRequired (the agent
	// asks its user) or Deny, with its stable reason code.
	Decision capability.Decision
	// Message says why, safe to show to the agent and its user.
	Message string
	// Err, when set, says the event could not be decided (the workspace
	// did not open, the audit log refused the event, time ran out):
	// [Handle] renders it with Codec.Fail, the agent's strongest refusal,
	// not as a decided deny.
	Err error
	// UpdatedInput, when set, is the tool input the agent is to run
	// instead of the one it sent (an allowed or asked call only): Claude
	// Code's Bash command wrapped to run inside Norma's sandbox.
	UpdatedInput json.RawMessage
}

// Decider decides events: the one engine behind every codec and every
// door (the command hook and the daemon).
type Decider interface {
	Decide(ctx context.Context, e Event) Verdict
}

// Codec is one agent's hook protocol.
type Codec interface {
	Agent() Agent
	// Parse reads one hook input. An error is rendered with Fail.
	Parse(in []byte) (Event, error)
	// Render writes the answer to e and the process exit code that
	// carries it.
	Render(e Event, v Verdict) (out []byte, exit int)
	// Fail renders a refusal for input that could not be parsed or
	// decided: always a deny the agent honours.
	Fail(err error) (out []byte, exit int)
}
