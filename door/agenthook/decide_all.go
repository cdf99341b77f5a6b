package agenthook

import (
	"context"

	"github.com/norma-run/norma/capability"
)

// DecideAll decides e's Call and each of e.More with d, one decision (and
// one audit record) per call, and returns the most restrictive verdict: a
// deny as soon as one call is denied (the rest are not asked), else the
// first approval_required, else the allow of the first call. An event
// with no More is decided once, as it is. [Engine.Decide] decides an event
// with More this way itself; another Decider should be called through
// DecideAll.
func DecideAll(ctx context.Context, d Decider, e Event) Verdict {
	if len(e.More) == 0 {
		return d.Decide(ctx, e)
	}
	calls := make([]Call, 0, 1+len(e.More))
	if e.Call != nil {
		calls = append(calls, *e.Call)
	}
	calls = append(calls, e.More...)
	var first, ask *Verdict
	for _, c := range calls {
		one := e
		one.Call, one.More = &c, nil
		v := d.Decide(ctx, one)
		switch v.Decision.Mode {
		case capability.Allow:
		case capability.ApprovalRequired:
			if ask == nil {
				ask = &v
			}
		default:
			return v
		}
		if first == nil {
			first = &v
		}
	}
	if ask != nil {
		return *ask
	}
	return *first
}
