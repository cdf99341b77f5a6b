package hook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/norma-run/norma/capability"
)

// Event names a point in a session where hooks run. The values are the
// hook_event_name strings of the protocol.
type Event string

// Events.
const (
	PreToolUse         Event = "PreToolUse"
	PostToolUse        Event = "PostToolUse"
	PostToolUseFailure Event = "PostToolUseFailure"
	UserPromptSubmit   Event = "UserPromptSubmit"
	SessionStart       Event = "SessionStart"
	SessionEnd         Event = "SessionEnd"
	Stop               Event = "Stop"
	SubagentStart      Event = "SubagentStart"
	SubagentStop       Event = "SubagentStop"
)

// Events returns every event, in a new slice.
func Events() []Event {
	return []Event{PreToolUse, PostToolUse, PostToolUseFailure, UserPromptSubmit,
		SessionStart, SessionEnd, Stop, SubagentStart, SubagentStop}
}

// Valid reports whether e is one of the events.
func (e Event) Valid() bool {
	switch e {
	case PreToolUse, PostToolUse, PostToolUseFailure, UserPromptSubmit,
		SessionStart, SessionEnd, Stop, SubagentStart, SubagentStop:
		return true
	}
	return false
}

// Gating reports whether a failing hook of this event denies what the event
// is about (PreToolUse, UserPromptSubmit, Stop).
func (e Event) Gating() bool { return e == PreToolUse || e == UserPromptSubmit || e == Stop }

// toolEvent reports whether the matcher applies to a tool name.
func (e Event) toolEvent() bool {
	return e == PreToolUse || e == PostToolUse || e == PostToolUseFailure
}

// Input is what a hook receives, with the field names of the protocol.
// Fields that do not apply to an event are empty.
type Input struct {
	SessionID      string          `json:"session_id"`
	HookEventName  Event           `json:"hook_event_name"`
	RunID          string          `json:"run_id,omitempty"`
	AgentID        string          `json:"agent_id,omitempty"`
	PermissionMode string          `json:"permission_mode,omitempty"`
	ToolName       string          `json:"tool_name,omitempty"`
	ToolInput      json.RawMessage `json:"tool_input,omitempty"`
	ToolUseID      string          `json:"tool_use_id,omitempty"`
	ToolResponse   json.RawMessage `json:"tool_response,omitempty"`
	Error          string          `json:"error,omitempty"`
	Prompt         string          `json:"prompt,omitempty"`
	// Source of SessionStart: "startup", "resume", "clear".
	Source string `json:"source,omitempty"`
	// Reason of SessionEnd: "normal", "canceled", "error", "panic".
	Reason         string `json:"reason,omitempty"`
	StopHookActive bool   `json:"stop_hook_active,omitempty"`
}

// Output is a hook's answer, as a command hook prints it on stdout.
type Output struct {
	// Continue false stops the whole session (a hard prevent), with
	// StopReason shown to the user.
	Continue   *bool  `json:"continue,omitempty"`
	StopReason string `json:"stopReason,omitempty"`
	// SuppressOutput and SystemMessage concern the user interface.
	SuppressOutput bool   `json:"suppressOutput,omitempty"`
	SystemMessage  string `json:"systemMessage,omitempty"`
	// Decision "block" blocks (for Stop: the agent must continue, with
	// Reason); "approve" is accepted and ignored.
	Decision string `json:"decision,omitempty"`
	Reason   string `json:"reason,omitempty"`
	// Specific carries the event-specific fields.
	Specific *Specific `json:"hookSpecificOutput,omitempty"`
}

// Specific is hookSpecificOutput.
type Specific struct {
	HookEventName string `json:"hookEventName,omitempty"`
	// PermissionDecision of PreToolUse: "deny" blocks, "ask" raises the
	// call to approval, "allow" is ignored (a hook cannot widen).
	PermissionDecision       string          `json:"permissionDecision,omitempty"`
	PermissionDecisionReason string          `json:"permissionDecisionReason,omitempty"`
	UpdatedInput             json.RawMessage `json:"updatedInput,omitempty"`
	AdditionalContext        string          `json:"additionalContext,omitempty"`
}

// Handler runs one hook. It must honour ctx.
type Handler interface {
	Run(ctx context.Context, in Input) (Output, error)
}

// Func adapts a function to Handler.
type Func func(ctx context.Context, in Input) (Output, error)

// Run calls f.
func (f Func) Run(ctx context.Context, in Input) (Output, error) { return f(ctx, in) }

// ErrBlocked can be returned by a Go callback to block, like exit status 2;
// wrap it to give a reason: fmt.Errorf("%w: no writes on Friday", ErrBlocked).
var ErrBlocked = errors.New("hook: blocked")

// DefaultTimeout is the per-hook timeout when a Hook has none.
const DefaultTimeout = 60 * time.Second

// Hook is one registered hook.
type Hook struct {
	// Name identifies the hook in outcomes and audit records.
	Name  string
	Event Event
	// Matcher is a regular expression matched against the whole tool
	// name for tool events; "" and "*" match every tool. It is ignored for
	// other events.
	Matcher string
	Handler Handler
	// Timeout zero means the registry's default.
	Timeout time.Duration
}

type compiled struct {
	Hook
	re *regexp.Regexp
}

// Options configures a Registry.
type Options struct {
	// Timeout is the default per-hook timeout; zero means DefaultTimeout.
	Timeout time.Duration
}

// Registry holds hooks per event, in registration order. It is safe for
// concurrent use; the zero value is not usable.
type Registry struct {
	timeout time.Duration
	mu      sync.RWMutex
	hooks   map[Event][]*compiled
}

// NewRegistry returns an empty registry; opts may be nil.
func NewRegistry(opts *Options) *Registry {
	r := &Registry{timeout: DefaultTimeout, hooks: map[Event][]*compiled{}}
	if opts != nil && opts.Timeout > 0 {
		r.timeout = opts.Timeout
	}
	return r
}

// Add registers h after every hook already registered for its event.
func (r *Registry) Add(h Hook) error {
	if !h.Event.Valid() {
		return fmt.Errorf("hook: unknown event %q", h.Event)
	}
	if h.Handler == nil {
		return fmt.Errorf("hook: %s hook %q has no handler", h.Event, h.Name)
	}
	if h.Timeout < 0 {
		return fmt.Errorf("hook: %s hook %q: negative timeout", h.Event, h.Name)
	}
	c := &compiled{Hook: h}
	if h.Matcher != "" && h.Matcher != "*" {
		re, err := regexp.Compile(`^(?:` + h.Matcher + `)$`)
		if err != nil {
			return fmt.Errorf("hook: %s hook %q: matcher: %w", h.Event, h.Name, err)
		}
		c.re = re
	}
	if c.Timeout == 0 {
		c.Timeout = r.timeout
	}
	if c.Name == "" {
		c.Name = fmt.Sprintf("%s#%d", h.Event, r.count(h.Event)+1)
	}
	r.mu.Lock()
	r.hooks[h.Event] = append(r.hooks[h.Event], c)
	r.mu.Unlock()
	return nil
}

func (r *Registry) count(e Event) int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return len(r.hooks[e])
}

// Has reports whether any hook is registered for e that matches tool (tool
// is ignored for non-tool events). A nil Registry has none.
func (r *Registry) Has(e Event, tool string) bool {
	if r == nil {
		return false
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	for _, h := range r.hooks[e] {
		if h.matches(e, tool) {
			return true
		}
	}
	return false
}

func (h *compiled) matches(e Event, tool string) bool {
	return !e.toolEvent() || h.re == nil || h.re.MatchString(tool)
}

// Outcome is the combined result of the hooks of one dispatch.
type Outcome struct {
	// Blocked: a hook blocked (exit 2, decision "block",
	// permissionDecision "deny", ErrBlocked). Reason is HOOK_BLOCKED.
	Blocked bool
	// Failed: a hook of a gating event failed, panicked, timed out or was
	// untrusted. Reason is HOOK_FAILED; Cause may be more specific
	// (HOOK_UNTRUSTED, TIMEOUT, TOOL_PANIC).
	Failed bool
	Reason capability.Reason
	Cause  capability.Reason
	// Hook names the hook that blocked or failed; Message is safe to show
	// to the model.
	Hook    string
	Message string
	// Ask: a hook asked that the call be approved by a human.
	Ask bool
	// UpdatedInput is the tool input after every rewrite (PreToolUse).
	UpdatedInput json.RawMessage
	// Context collects additionalContext and, for UserPromptSubmit and
	// SessionStart, plain stdout.
	Context []string
	// Halt: a hook said continue:false; the session must stop.
	Halt       bool
	HaltReason string
	// SystemMessages are for the user, not the model.
	SystemMessages []string
	// Errors describes failures of non-gating hooks, which do not deny.
	Errors []string
	// Ran counts the hooks that ran.
	Ran int
}

// Denied reports whether the outcome refuses what the event is about.
func (o *Outcome) Denied() bool { return o.Blocked || o.Failed }

// Dispatch runs the hooks of in.HookEventName that match in.ToolName, in
// registration order. A PreToolUse hook sees the input as rewritten by the
// hooks before it. Dispatch never panics and never returns without an
// outcome; ctx cancellation stops it and, for gating events, denies.
func (r *Registry) Dispatch(ctx context.Context, in Input) Outcome {
	var out Outcome
	if r == nil {
		return out
	}
	ev := in.HookEventName
	r.mu.RLock()
	hooks := r.hooks[ev]
	r.mu.RUnlock()
	gating := ev.Gating()
	for _, h := range hooks {
		if !h.matches(ev, in.ToolName) {
			continue
		}
		if err := ctx.Err(); err != nil {
			if gating {
				out.fail(h.Name, capability.ReasonCanceled, "hook "+h.Name+" not run: "+err.Error())
			}
			return out
		}
		out.Ran++
		o, err := runOne(ctx, h, in)
		if err != nil {
			if errors.Is(err, ErrBlocked) {
				out.block(h.Name, strings.TrimPrefix(strings.TrimPrefix(err.Error(), ErrBlocked.Error()), ": "))
				return out
			}
			msg := "hook " + h.Name + " failed: " + err.Error()
			if !gating {
				out.Errors = append(out.Errors, msg)
				continue
			}
			cause := capability.ReasonOf(err)
			if cause == "" {
				cause = capability.ReasonHookFailed
			}
			out.fail(h.Name, cause, msg)
			return out
		}
		if o.SystemMessage != "" {
			out.SystemMessages = append(out.SystemMessages, o.SystemMessage)
		}
		if o.Continue != nil && !*o.Continue {
			out.Halt, out.HaltReason = true, o.StopReason
		}
		sp := o.Specific
		if sp != nil && sp.AdditionalContext != "" {
			out.Context = append(out.Context, sp.AdditionalContext)
		}
		switch {
		case o.Decision == "block":
			out.block(h.Name, o.Reason)
			return out
		case sp != nil && sp.PermissionDecision == "deny":
			out.block(h.Name, sp.PermissionDecisionReason)
			return out
		case sp != nil && sp.PermissionDecision == "ask":
			out.Ask = true
		case o.Decision != "" && o.Decision != "approve":
			if gating {
				out.fail(h.Name, capability.ReasonHookFailed, fmt.Sprintf("hook %s: unknown decision %q", h.Name, o.Decision))
				return out
			}
		case sp != nil && sp.PermissionDecision != "" && sp.PermissionDecision != "allow":
			if gating {
				out.fail(h.Name, capability.ReasonHookFailed, fmt.Sprintf("hook %s: unknown permissionDecision %q", h.Name, sp.PermissionDecision))
				return out
			}
		}
		if sp != nil && len(sp.UpdatedInput) > 0 && ev == PreToolUse {
			if !json.Valid(sp.UpdatedInput) {
				out.fail(h.Name, capability.ReasonHookFailed, "hook "+h.Name+": updatedInput is not JSON")
				return out
			}
			out.UpdatedInput = sp.UpdatedInput
			in.ToolInput = sp.UpdatedInput
		}
		if out.Halt && gating {
			return out
		}
	}
	return out
}

func (o *Outcome) block(hook, reason string) {
	if reason == "" {
		reason = "blocked by hook " + hook
	}
	o.Blocked, o.Reason, o.Cause, o.Hook, o.Message = true, capability.ReasonHookBlocked, capability.ReasonHookBlocked, hook, reason
}

func (o *Outcome) fail(hook string, cause capability.Reason, msg string) {
	o.Failed, o.Reason, o.Cause, o.Hook, o.Message = true, capability.ReasonHookFailed, cause, hook, msg
}

// runOne runs h with its timeout and panic recovery. A handler that ignores
// ctx is abandoned at the deadline (its goroutine finishes on its own).
func runOne(ctx context.Context, h *compiled, in Input) (Output, error) {
	hctx, cancel := context.WithTimeout(ctx, h.Timeout)
	defer cancel()
	type res struct {
		o   Output
		err error
	}
	ch := make(chan res, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				ch <- res{err: &capability.Error{Decision: capability.Decision{Reason: capability.ReasonPanic, Layer: "hook"}, Detail: "hook panicked"}}
			}
		}()
		o, err := h.Handler.Run(hctx, in)
		ch <- res{o, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil && hctx.Err() != nil && !errors.Is(r.err, ErrBlocked) {
			return Output{}, timeoutErr(ctx, h)
		}
		return r.o, r.err
	case <-hctx.Done():
		return Output{}, timeoutErr(ctx, h)
	}
}

func timeoutErr(parent context.Context, h *compiled) error {
	if parent.Err() != nil {
		return &capability.Error{Decision: capability.Decision{Reason: capability.ReasonCanceled, Layer: "hook"}, Detail: "canceled"}
	}
	return &capability.Error{Decision: capability.Decision{Reason: capability.ReasonTimeout, Layer: "hook"}, Detail: "timed out after " + h.Timeout.String()}
}
