package agenthook

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/norma-run/norma/capability"
)

type deciderFunc func(context.Context, Event) Verdict

func (f deciderFunc) Decide(ctx context.Context, e Event) Verdict { return f(ctx, e) }

var allowAll = deciderFunc(func(context.Context, Event) Verdict {
	return Verdict{Decision: capability.Decision{Mode: capability.Allow, Reason: capability.ReasonAllowed}}
})

// TestHandleFailsClosed: every failure is a deny with exit 2 and the
// reason on stderr, never an allow.
func TestHandleFailsClosed(t *testing.T) {
	good := readFixture(t, "pre_read.json")
	tests := []struct {
		name   string
		d      Decider
		in     []byte
		reason capability.Reason
	}{
		{"garbage stdin", allowAll, []byte("{{{"), capability.ReasonHookInputInvalid},
		{"empty stdin", allowAll, nil, capability.ReasonHookInputInvalid},
		{"missing field", allowAll, []byte(`{"session_id":"s","hook_event_name":"PreToolUse"}`), capability.ReasonHookInputInvalid},
		{"decider panics", deciderFunc(func(context.Context, Event) Verdict { panic("boom") }), good, capability.ReasonHookDecideFailed},
		{"decider overruns", deciderFunc(func(ctx context.Context, _ Event) Verdict {
			<-ctx.Done()
			time.Sleep(50 * time.Millisecond)
			return Verdict{Decision: capability.Decision{Mode: capability.Allow}}
		}), good, capability.ReasonTimeout},
		{"decider fails", deciderFunc(func(context.Context, Event) Verdict { return failure(capability.ReasonHookDecideFailed, "x") }), good, capability.ReasonHookDecideFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			r := Respond(ctx, Claude{}, tt.d, tt.in)
			d, reason, code := answer(t, r.Out, r.Exit)
			if code != 2 || d != "deny" || !strings.HasPrefix(reason, "NORMA "+string(tt.reason)) || !strings.HasPrefix(r.Stderr, "NORMA "+string(tt.reason)) {
				t.Fatalf("exit %d %s %q, stderr %q; want exit 2, deny %s", code, d, reason, r.Stderr, tt.reason)
			}
		})
	}
}

// panicCodec panics everywhere: Handle still refuses.
type panicCodec struct{ Claude }

func (panicCodec) Parse([]byte) (Event, error)         { panic("parse") }
func (panicCodec) Fail(error) ([]byte, int)            { panic("fail") }
func (panicCodec) Render(Event, Verdict) ([]byte, int) { panic("render") }

func TestHandleCodecPanics(t *testing.T) {
	r := Respond(context.Background(), panicCodec{}, allowAll, readFixture(t, "pre_read.json"))
	if r.Exit != 2 || !strings.Contains(r.Stderr, "HOOK_DECIDE_FAILED") {
		t.Fatalf("Respond = %+v, want exit 2", r)
	}
}
