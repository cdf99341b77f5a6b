package broker

import (
	"context"

	"github.com/norma-run/norma/capability"
)

// decided is the broker's final decision on one request, carried in the
// context of the request it hands to netguard's Transport.
type decided struct {
	req capability.Request
	dec capability.Decision
}

type decidedKey struct{}

// decidedCtx carries a decision in one allocation (context.WithValue of a
// *decided would be two).
type decidedCtx struct {
	context.Context
	d decided
}

func (c *decidedCtx) Value(key any) any {
	if key == (decidedKey{}) {
		return &c.d
	}
	return c.Context.Value(key)
}

func withDecision(ctx context.Context, req capability.Request, dec capability.Decision) context.Context {
	return &decidedCtx{Context: ctx, d: decided{req: req, dec: dec}}
}

// decidedPolicy is the policy of the broker's netguard.Transport. The
// broker has already decided the request (policy, secrets, approval,
// audit); the Transport asks again about what it is about to send, after
// its own normalization and wire-URL check, and gets that decision only if
// it names the very request that was decided: same kind, method, origin
// and path. Anything else, or a request without a decision, is refused, so
// the Transport can never send a request the broker did not decide and
// audit.
type decidedPolicy struct{}

var _ capability.Decider = decidedPolicy{}

func (decidedPolicy) Decide(ctx context.Context, req capability.Request) capability.Decision {
	d, ok := ctx.Value(decidedKey{}).(*decided)
	switch {
	case !ok:
		return refusal(req, "no-decision")
	case d.req.Kind != req.Kind || d.req.Method != req.Method || d.req.Origin != req.Origin || d.req.Path != req.Path:
		return refusal(req, "not-the-decided-request")
	}
	return d.dec
}

// refusal denies req; rule names which check refused it.
func refusal(req capability.Request, rule string) capability.Decision {
	return capability.Decision{Mode: capability.Deny, Reason: capability.ReasonNetworkDestinationDenied, Layer: "broker", Rule: rule, Request: req.String()}
}
