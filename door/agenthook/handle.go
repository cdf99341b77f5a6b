package agenthook

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/norma-run/norma/capability"
)

// DefaultTimeout bounds one decision. Claude Code gives a command hook 60
// seconds by default before it gives up on it (and goes on); Norma answers
// well before that, with a deny, so that a decider that hangs never turns
// into a call that runs unchecked.
const DefaultTimeout = 10 * time.Second

// Result is one answer to an agent's hook: what to write to stdout (or the
// HTTP body), the process exit code, and for a refusal that the exit code
// carries (exit 2) the reason to write to stderr, which is what Claude
// Code and Codex show to the model in that case.
type Result struct {
	Out    []byte
	Exit   int
	Stderr string
}

// Handle answers one hook input: c parses it, d decides, c renders the
// verdict. Every failure — input that does not parse, a decider that
// panics or overruns its deadline (DefaultTimeout unless ctx has an
// earlier one), a codec that panics while rendering — renders through
// c.Fail, a deny the agent honours; Handle never returns a bare error.
func Handle(ctx context.Context, c Codec, d Decider, in []byte) (out []byte, exit int) {
	r := Respond(ctx, c, d, in)
	return r.Out, r.Exit
}

// Respond is [Handle] with the stderr text of a refusal.
func Respond(ctx context.Context, c Codec, d Decider, in []byte) Result {
	e, err := safeParse(c, in)
	if err != nil {
		return fail(c, err)
	}
	ctx, cancel := context.WithTimeout(ctx, DefaultTimeout)
	defer cancel()
	v, err := safeDecide(ctx, d, e)
	if err == nil {
		err = v.Err
	}
	if err != nil {
		return fail(c, err)
	}
	r, err := safeRender(c, e, v)
	if err != nil {
		return fail(c, err)
	}
	if r.Exit == 2 {
		r.Stderr = ReasonText(v)
	}
	return r
}

// ReasonText is the text an agent and its user see for v: the stable
// reason code first, so that a reader (or a test) can match it, then the
// message.
func ReasonText(v Verdict) string {
	code := v.Decision.Reason
	if code == "" {
		code = capability.ReasonHookDecideFailed
	}
	if v.Message == "" {
		return fmt.Sprintf("NORMA %s", code)
	}
	return fmt.Sprintf("NORMA %s: %s", code, v.Message)
}

// Refuse is c's refusal of err, as Handle renders a failure: for a door
// that fails before it has an input to handle.
func Refuse(c Codec, err error) Result { return fail(c, err) }

// FailVerdict is the deny verdict of err: its reason code when it carries
// one (a *capability.Error), else HOOK_DECIDE_FAILED. Codecs render their
// Fail with it.
func FailVerdict(err error) Verdict {
	if ce, ok := errors.AsType[*capability.Error](err); ok {
		d := ce.Decision
		d.Mode = capability.Deny
		return Verdict{Decision: d, Message: ce.Detail, Err: err}
	}
	return Verdict{Decision: capability.Decision{Mode: capability.Deny, Reason: capability.ReasonHookDecideFailed, Layer: capability.LayerAgent},
		Message: "Norma could not decide this call, so it is denied: " + err.Error(), Err: err}
}

// fail renders err through c.Fail; a Fail that panics still yields a
// refusal (an empty body and exit 2, which every agent treats as block).
func fail(c Codec, err error) (r Result) {
	r.Stderr = ReasonText(FailVerdict(err))
	defer func() {
		if recover() != nil {
			r.Out, r.Exit = nil, 2
		}
	}()
	r.Out, r.Exit = c.Fail(err)
	return r
}

func safeParse(c Codec, in []byte) (e Event, err error) {
	defer func() {
		if recover() != nil {
			err = failed("the hook input could not be parsed (parser panic)")
		}
	}()
	return c.Parse(in)
}

func safeRender(c Codec, e Event, v Verdict) (r Result, err error) {
	defer func() {
		if recover() != nil {
			err = failed("the answer could not be rendered (renderer panic)")
		}
	}()
	r.Out, r.Exit = c.Render(e, v)
	return r, nil
}

// safeDecide runs d.Decide with ctx's deadline: a decider that panics or
// has not answered by then is a refusal (it may still finish in the
// background; its verdict is dropped).
func safeDecide(ctx context.Context, d Decider, e Event) (Verdict, error) {
	type answer struct {
		v   Verdict
		err error
	}
	ch := make(chan answer, 1)
	go func() {
		defer func() {
			if recover() != nil {
				ch <- answer{err: failed("the decider failed (panic)")}
			}
		}()
		ch <- answer{v: d.Decide(ctx, e)}
	}()
	select {
	case a := <-ch:
		return a.v, a.err
	case <-ctx.Done():
		return Verdict{}, &capability.Error{Decision: capability.Decision{Mode: capability.Deny, Reason: capability.ReasonTimeout, Layer: capability.LayerAgent},
			Detail: "Norma did not decide in time, so the call is denied"}
	}
}

func failed(msg string) error {
	return &capability.Error{Decision: capability.Decision{Mode: capability.Deny, Reason: capability.ReasonHookDecideFailed, Layer: capability.LayerAgent}, Detail: msg}
}

// CodecFor returns the codec of agent a.
func CodecFor(a Agent) (Codec, bool) {
	switch a {
	case ClaudeCode:
		return Claude{}, true
	case Codex:
		return CodexCLI{}, true
	case Gemini:
		return GeminiCLI{}, true
	}
	return nil, false
}
