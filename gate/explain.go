package gate

import (
	"bytes"
	"context"

	"github.com/norma-run/norma/capability"
)

// Explanation is what the gate decides for a call before approval and
// before the call: the decision path of Execute, steps 1 to 3.
type Explanation struct {
	// Decision is what Execute acts on: Allow, ApprovalRequired (in
	// dontAsk, a Deny with MODE_DENIED, or COMMAND_UNPARSEABLE for a
	// command whose effect cannot be known) or Deny, with reason, layer and
	// rule. Its Trace holds every capability layer's answer for every
	// request of the call.
	Decision capability.Decision
	// Stage is the step that decided: lookup, schema or policy.
	Stage Step
	// Requests are the call's normalized capability requests, the ones the
	// policy, the approval preview and the audit event see.
	Requests []capability.Request
	// Known is false when part of the call's effect cannot be known (an
	// unparseable command).
	Known bool
	// Message is what the model would be told of a refusal; empty unless
	// the decision is Deny.
	Message string
	// Preview is the approval preview a run would show.
	Preview string
}

// explainHooks is step 5 for Explain: the PreToolUse hooks decide too —
// they may block, ask, or rewrite the input, which is decided again — and
// nothing is approved.
func (x *exec) explainHooks(ctx context.Context) bool {
	out, ok := x.dispatchPreHooks(ctx)
	if !ok {
		return false
	}
	if len(out.UpdatedInput) > 0 && !bytes.Equal(out.UpdatedInput, x.in.Raw()) {
		if !x.check(ctx, out.UpdatedInput, false) {
			return false
		}
	}
	if out.Ask && x.dec.Mode == capability.Allow {
		x.dec.Mode, x.dec.Reason, x.dec.Layer, x.dec.Rule = capability.ApprovalRequired, capability.ReasonApprovalRequired, capability.LayerHook, out.Hook
		if x.mode == ModeDontAsk {
			x.fail(capability.ReasonModeDenied, "a hook asked for approval and the mode is dontAsk")
			return false
		}
	}
	return true
}

// maxDelegation bounds how deep Explain follows calls that run other
// calls (ExecuteExtraTool refuses itself; this bounds any other chain).
const maxDelegation = 4

// Explain runs the decision path of [Gate.Execute] for c — lookup, schema,
// mode and rules, every capability layer, and for a call that needs no
// approval the PreToolUse hooks (they decide: block, ask, rewrite) —
// without approval and without the call, and writes no audit event. It is
// the gate's own decision, so `norma policy explain` reports exactly what
// a run does. A tool whose call runs another call through the gate (a
// tool.Delegator, such as ExecuteExtraTool) is explained with that inner
// call too, a deferred inner tool as ExecuteExtra would unlock it (nothing
// is unlocked): the stricter of the two decisions is the answer.
func (g *Gate) Explain(ctx context.Context, c Call) Explanation {
	return g.explain(ctx, c, false, 0)
}

func (g *Gate) explain(ctx context.Context, c Call, inner bool, depth int) Explanation {
	var trace []capability.LayerResult
	x := &exec{g: g, c: c, mode: g.Mode(), trace: &trace, unlockable: inner, shell: c.Unconfined}
	ok := x.lookup(ctx) && x.check(ctx, c.Input, true)
	if ok && x.dec.Mode == capability.Allow {
		// A call that needs no approval meets the PreToolUse hooks next.
		ok = x.explainHooks(ctx)
	}
	e := Explanation{Decision: x.dec, Stage: x.res.Stage, Requests: x.reqs, Known: x.known}
	e.Decision.Trace = trace
	if x.res.IsError {
		// What the run reports for a refusal: the reason of the step that
		// refused (MODE_DENIED for an approval dontAsk cannot ask for).
		e.Message, e.Decision.Reason = x.res.Content, x.res.Reason
	}
	if x.entry != nil {
		e.Preview = x.preview(ctx)
	}
	if !ok || depth >= maxDelegation {
		return e
	}
	name, input, delegates := x.entry.Delegate(x.in)
	if !delegates {
		return e
	}
	ie := g.explain(ctx, Call{ID: c.ID + ".extra", RunID: c.RunID, Principals: c.Principals, Tool: name, Input: input}, true, depth+1)
	if ie.Decision.Mode < e.Decision.Mode {
		ie.Decision.Trace = append(trace, ie.Decision.Trace...)
		return ie
	}
	return e
}
