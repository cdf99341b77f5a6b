package agent

import (
	"time"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/provider"
)

// EventKind names an [Event]. The values are the `event` field of
// `norma run --json`.
type EventKind string

// Event kinds.
const (
	EventSessionStarted    EventKind = "session_started"
	EventAssistantText     EventKind = "assistant_text"
	EventToolCall          EventKind = "tool_call"
	EventApprovalRequested EventKind = "approval_requested"
	EventSubagentStarted   EventKind = "subagent_started"
	EventSubagentFinished  EventKind = "subagent_finished"
	EventSessionFinished   EventKind = "session_finished"
)

// Event is one thing that happened in a session, for a user interface or a
// script. Only the fields of its kind are set. Events never carry secrets,
// and tool input only as an approval's preview (the command, arguments or
// diff a human is asked to approve): a tool call is reported with its target (the
// normalized capability request, as the policy saw it), the head of what
// the gate returned to the model (at most [MaxResultBytes]; plugin output
// is redacted by the plugin host before it reaches the gate) and the
// sha256 digest of all of it. The strings of an event may hold anything a
// model, a tool or a plugin wrote: escape them before printing them on a
// terminal.
type Event struct {
	Kind  EventKind `json:"event"`
	RunID string    `json:"run_id"`
	// Principals is the chain the event belongs to (user, agent,
	// subagent...).
	Principals []string `json:"principals,omitempty"`
	// Text of assistant_text (a streamed delta).
	Text string `json:"text,omitempty"`
	// Call of tool_call.
	Call *CallRecord `json:"call,omitempty"`
	// Approval of approval_requested.
	Approval *ApprovalEvent `json:"approval,omitempty"`
	// Outcome of session_finished and subagent_finished.
	Outcome *Outcome `json:"outcome,omitempty"`
	// Resumed is set on session_started of a resumed run.
	Resumed bool   `json:"resumed,omitempty"`
	Model   string `json:"model,omitempty"`
	Mode    string `json:"mode,omitempty"`
}

// CallRecord is the summary of one tool call as the gate decided it.
type CallRecord struct {
	ID   string `json:"id"`
	Tool string `json:"tool"`
	// Target is the normalized capability request that decided the call
	// (e.g. "fs.read workspace://docs/a.md"), or "" when none.
	Target string `json:"target,omitempty"`
	// Decision is allow, deny or approval_required; Reason the stable code.
	Decision   string           `json:"decision"`
	Reason     string           `json:"reason"`
	Layer      capability.Layer `json:"layer,omitempty"`
	Rule       string           `json:"rule,omitempty"`
	Stage      string           `json:"stage,omitempty"`
	IsError    bool             `json:"is_error"`
	ApprovalID string           `json:"approval_id,omitempty"`
	Duration   time.Duration    `json:"duration_ns"`
	// OutputDigest is "sha256:" + hex of the content returned to the
	// model (the capped head); FullDigest that of the spilled full output.
	OutputDigest string `json:"output_digest"`
	FullDigest   string `json:"full_digest,omitempty"`
	// Result is the head of a successful call's output as the model saw
	// it, at most MaxResultBytes (cut on a UTF-8 boundary, ending in "…"
	// when cut); empty for a refused or failed call.
	Result string `json:"result,omitempty"`
	// Message is the reason text of a refused or failed call (written by
	// the gate, safe to show to the model and the user; a failing tool's
	// own text may follow), at most MaxResultBytes; empty for a
	// successful call.
	Message string `json:"message,omitempty"`
}

// MaxResultBytes bounds CallRecord.Result and CallRecord.Message.
const MaxResultBytes = 2 << 10

// ApprovalEvent describes a call that needs a human decision.
type ApprovalEvent struct {
	ToolUseID string `json:"tool_use_id"`
	Tool      string `json:"tool"`
	Target    string `json:"target,omitempty"`
	// Preview is the gate's one preview of the action (see
	// approval.Request): what the prompt and `norma approvals show` print.
	Preview    string `json:"preview,omitempty"`
	ApprovalID string `json:"approval_id,omitempty"`
}

// Outcome is how a session (or subagent) ended.
type Outcome struct {
	RunID  string `json:"run_id"`
	Status Status `json:"status"`
	// Reason is the code that ended it: a limit, SESSION_HALTED,
	// APPROVAL_PENDING, PROVIDER_FAILED, CANCELED, ...; empty when the
	// model simply stopped.
	Reason string `json:"reason,omitempty"`
	// Text is the model's last text.
	Text  string         `json:"text,omitempty"`
	Turns int            `json:"turns"`
	Usage provider.Usage `json:"usage"`
	Cost  float64        `json:"cost,omitempty"`
	// Calls lists the tool calls of this invocation, in order.
	Calls []CallRecord `json:"calls,omitempty"`
	// Pending lists calls waiting for approval.
	Pending []ApprovalRef `json:"pending,omitempty"`
}
