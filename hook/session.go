package hook

import (
	"context"
	"errors"
	"fmt"
)

// ErrHalted is returned by RunSession when a SessionStart hook said
// continue:false.
var ErrHalted = errors.New("hook: session halted by a hook")

// RunSession fires SessionStart with in, runs fn, and then fires SessionEnd
// on every way out of fn: Reason "normal" when it returns nil, "canceled"
// when ctx ended, "error" for any other error, and "panic" (after which the
// panic continues). SessionEnd runs with a context that is not canceled, so
// it fires after a cancellation too. SessionStart context strings are
// passed to fn.
func (r *Registry) RunSession(ctx context.Context, in Input, fn func(ctx context.Context, startContext []string) error) (err error) {
	in.HookEventName = SessionStart
	start := r.Dispatch(ctx, in)
	reason := "panic"
	defer func() {
		end := in
		end.HookEventName, end.Reason, end.Source = SessionEnd, reason, ""
		r.Dispatch(context.WithoutCancel(ctx), end)
	}()
	if start.Halt {
		reason = "error"
		return fmt.Errorf("%w: %s", ErrHalted, start.HaltReason)
	}
	err = fn(ctx, start.Context)
	switch {
	case err == nil:
		reason = "normal"
	case ctx.Err() != nil || errors.Is(err, context.Canceled):
		reason = "canceled"
	default:
		reason = "error"
	}
	return err
}
