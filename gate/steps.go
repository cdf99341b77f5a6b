package gate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"

	"github.com/norma-run/norma/audit"
	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/hook"
	"github.com/norma-run/norma/tool"
)

// run performs steps 1–8 and reports whether the handler was started.
func (x *exec) run(ctx context.Context) bool {
	// 1–4. lookup, schema, policy, approval; 5. PreToolUse hooks
	if !x.lookup(ctx) || !x.authorize(ctx, x.c.Input, true) || !x.preHooks(ctx) {
		return false
	}
	// 6. the call
	x.step(StepCall)
	if err := ctx.Err(); err != nil {
		x.fail(capability.ReasonCanceled, "canceled before the call")
		return false
	}
	env, ok := x.env()
	if !ok || !x.claim(ctx) {
		return false
	}
	if !x.started(ctx) {
		x.record(ctx) // claimed and not run: its end is known
		return false
	}
	out, callErr := x.call(ctx, env)
	// 7. output capture
	x.output(ctx, out, callErr)
	x.record(ctx)
	// 8. PostToolUse / PostToolUseFailure hooks
	x.postHooks(ctx)
	return true
}

// hookInput is the hook input of event ev for this call.
func (x *exec) hookInput(ev hook.Event) hook.Input {
	c := &x.c
	return hook.Input{
		SessionID: x.g.sessionID, HookEventName: ev, RunID: c.RunID,
		AgentID: c.Principals[len(c.Principals)-1], PermissionMode: x.mode.String(),
		ToolName: c.Tool, ToolInput: x.in.Raw(), ToolUseID: c.ID,
	}
}

// preHooks is step 5. A hook may block the call, ask for approval, or
// rewrite the input, which is then decided again (steps 2–4).
func (x *exec) preHooks(ctx context.Context) bool {
	out, ok := x.dispatchPreHooks(ctx)
	if !ok {
		return false
	}
	if len(out.UpdatedInput) > 0 && !bytes.Equal(out.UpdatedInput, x.in.Raw()) {
		return x.rewrite(ctx, out.UpdatedInput, out.Ask)
	}
	if out.Ask && x.dec.Mode == capability.Allow {
		x.dec.Mode, x.dec.Reason, x.dec.Layer, x.dec.Rule = capability.ApprovalRequired, capability.ReasonApprovalRequired, "hook", out.Hook
		return x.approve(ctx)
	}
	return true
}

// dispatchPreHooks runs the PreToolUse hooks of the call; a block, a
// failure or a halt refuses it (ok false). The outcome says whether they
// rewrote the input or asked for approval.
func (x *exec) dispatchPreHooks(ctx context.Context) (out hook.Outcome, ok bool) {
	x.step(StepPreHooks)
	if !x.g.hooks.Has(hook.PreToolUse, x.c.Tool) {
		return out, true
	}
	out = x.g.hooks.Dispatch(ctx, x.hookInput(hook.PreToolUse))
	x.res.Context = append(x.res.Context, out.Context...)
	switch {
	case out.Failed:
		x.fail(capability.ReasonHookFailed, "PreToolUse "+out.Message)
		return out, false
	case out.Blocked:
		x.fail(capability.ReasonHookBlocked, "blocked by hook "+out.Hook+": "+out.Message)
		return out, false
	case out.Halt:
		x.fail(capability.ReasonHookBlocked, "stopped by hook "+out.Hook+": "+out.HaltReason)
		return out, false
	}
	return out, true
}

// started records tool_call_started; a refusal of the audit log refuses
// the call.
func (x *exec) started(ctx context.Context) bool {
	if err := x.g.sink.Record(x.detached(ctx), x.event(audit.TypeToolCallStarted)); err != nil {
		x.g.log.Error("gate: audit refused tool_call_started", "tool", x.c.Tool, "err", err)
		x.fail(capability.ReasonAuditUnavailable, "the call was not run: the audit log is unavailable")
		return false
	}
	return true
}

// output is step 7: the result's reason, and the content redacted (the
// output_redacted event says what was masked), then capped (the rest
// spilled). Every string that reaches the model from here on (content,
// error text) went through the one redactor.
func (x *exec) output(ctx context.Context, out tool.Result, callErr error) {
	x.step(StepOutput)
	content, isErr := out.Content, out.IsError
	switch ce, ok := errors.AsType[*capability.Error](callErr); {
	case ok:
		isErr, content, x.res.Reason = true, ce.Error(), ce.Decision.Reason
	case callErr != nil:
		isErr, content, x.res.Reason = true, "tool error: "+callErr.Error(), capability.ReasonToolError
	case isErr:
		x.res.Reason = capability.ReasonToolError
	default:
		x.res.Reason = capability.ReasonAllowed
	}
	x.res.IsError = isErr
	content, counts := x.g.red.RedactCount(content)
	x.reportRedaction(ctx, counts)
	x.markUntrusted(content)
	head, sp, err := x.g.capture.apply(content, SpillRecord{ToolUseID: x.c.ID, RunID: x.c.RunID, Tool: x.c.Tool})
	if err != nil {
		x.g.log.Error("gate: spill failed", "tool", x.c.Tool, "err", err)
	}
	x.res.Content, x.res.Spill = head, sp
}

// postHooks is step 8: PostToolUse or PostToolUseFailure. They add
// context; they cannot undo the call.
func (x *exec) postHooks(ctx context.Context) {
	x.step(StepPostHooks)
	ev := hook.PostToolUse
	if x.res.IsError {
		ev = hook.PostToolUseFailure
	}
	if !x.g.hooks.Has(ev, x.c.Tool) {
		return
	}
	hin := x.hookInput(ev)
	if x.res.IsError {
		hin.Error = x.res.Content
	} else {
		hin.ToolResponse, _ = json.Marshal(x.res.Content)
	}
	po := x.g.hooks.Dispatch(x.detached(ctx), hin)
	x.res.Context = append(x.res.Context, po.Context...)
	if po.Blocked {
		x.res.Context = append(x.res.Context, "hook "+po.Hook+": "+po.Message)
	}
	for _, e := range po.Errors {
		x.g.log.Warn("gate: post hook failed", "tool", x.c.Tool, "err", e)
	}
}
