package gate_test

import (
	"context"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/gate"
)

const spanCanary = "CANARY-span-91c4"

// TestSpans: every call has one span, a child of the caller's, with the
// decision, reason and tool; an input, a path, an output or a made-up
// tool name holding the canary never reaches an attribute or the status.
func TestSpans(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	f := newFixture(t, func(o *gate.Options, _ *fixture) { o.Tracer, o.Sandboxed = tp.Tracer("test"), true })
	ctx, parent := tp.Tracer("test").Start(context.Background(), "run")
	cases := []struct {
		c                      gate.Call
		tool, decision, reason string
		err                    bool
	}{
		{call("Read", `{"path":"docs/`+spanCanary+`.md"}`), "Read", "allow", "ALLOWED", false},
		{call("Read", `{"path":"`+spanCanary+`/.env"}`), "Read", "deny", "FILESYSTEM_READ_DENIED", true},
		{call(spanCanary, `{"x":"`+spanCanary+`"}`), "unknown", "deny", "TOOL_UNKNOWN", true},
		{call("Read", `{"path":"a","note":"`+spanCanary+strings.Repeat("x", 30)+`"}`), "Read", "deny", "SCHEMA_INVALID", true},
	}
	for _, c := range cases {
		if r := f.g.Execute(ctx, c.c); string(r.Reason) != c.reason {
			t.Fatalf("%s: reason %s, want %s (%s)", c.c.ID, r.Reason, c.reason, r.Content)
		}
	}
	parent.End()
	spans := rec.Ended()
	if len(spans) != len(cases)+1 {
		t.Fatalf("%d spans, want %d", len(spans), len(cases)+1)
	}
	for i, c := range cases {
		s := spans[i]
		a := map[attribute.Key]attribute.Value{}
		for _, kv := range s.Attributes() {
			a[kv.Key] = kv.Value
			if strings.Contains(kv.Value.Emit(), spanCanary) {
				t.Errorf("%s: attribute %s carries the canary: %s", c.c.ID, kv.Key, kv.Value.Emit())
			}
		}
		if strings.Contains(s.Name()+s.Status().Description, spanCanary) {
			t.Errorf("%s: the name or status carries the canary", c.c.ID)
		}
		if s.Parent().SpanID() != parent.SpanContext().SpanID() || s.SpanContext().TraceID() != parent.SpanContext().TraceID() {
			t.Errorf("%s: not a child of the caller's span", c.c.ID)
		}
		if a[gate.AttrToolName].AsString() != c.tool || a[gate.AttrDecision].AsString() != c.decision ||
			a[gate.AttrReason].AsString() != c.reason || a[gate.AttrToolCallID].AsString() != c.c.ID ||
			a[gate.AttrRunID].AsString() != runID || !a[gate.AttrSandbox].AsBool() {
			t.Errorf("%s: attributes %v", c.c.ID, s.Attributes())
		}
		if c.err != (s.Status().Code == codes.Error) {
			t.Errorf("%s: status %v", c.c.ID, s.Status())
		}
	}
	if h := spans[0].Attributes(); !hasPrefix(h, gate.AttrTargetHash, "sha256:") {
		t.Errorf("the allowed read names its target by hash: %v", h)
	}
}

func hasPrefix(kvs []attribute.KeyValue, k, p string) bool {
	for _, kv := range kvs {
		if string(kv.Key) == k {
			return strings.HasPrefix(kv.Value.AsString(), p)
		}
	}
	return false
}

// TestSpanHostileCallID: a tool_use id is the model's text; one that is
// long, holds control characters or a canary is refused before lookup
// (INVALID_REQUEST), the tool never runs, and the span names it
// "invalid": nothing of it reaches an attribute.
func TestSpanHostileCallID(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	f := newFixture(t, func(o *gate.Options, _ *fixture) { o.Tracer = tp.Tracer("test") })
	ids := []string{
		"toolu_" + spanCanary + strings.Repeat("x", 300),
		"toolu_\x1b]8;;https://evil.invalid\x07" + spanCanary,
		"toolu " + spanCanary,
		"toolu_" + spanCanary + "\n",
	}
	for _, id := range ids {
		c := call("Read", `{"path":"docs/a.md"}`)
		c.ID = id
		if r := f.g.Execute(context.Background(), c); r.Reason != capability.ReasonInvalidRequest || !r.IsError {
			t.Errorf("id %q: reason %s, want INVALID_REQUEST", id, r.Reason)
		}
	}
	if n := f.calls.Load(); n != 0 {
		t.Errorf("the tool ran %d times for calls with hostile ids", n)
	}
	spans := rec.Ended()
	if len(spans) != len(ids) {
		t.Fatalf("%d spans, want %d", len(spans), len(ids))
	}
	for i, s := range spans {
		for _, kv := range s.Attributes() {
			if strings.Contains(kv.Value.Emit(), spanCanary) || len(kv.Value.Emit()) > 256 {
				t.Errorf("id %d: attribute %s carries the model's id: %q", i, kv.Key, kv.Value.Emit())
			}
			if kv.Key == gate.AttrToolCallID && kv.Value.AsString() != "invalid" {
				t.Errorf("id %d: %s = %q, want invalid", i, kv.Key, kv.Value.AsString())
			}
		}
	}
	// A provider's ordinary ids pass.
	for _, id := range []string{"toolu_01A09q90qw90lq917835lq9", "call_norma_0a1b", "chatcmpl-tool-9f.extra", "relay_1", "w"} {
		if !gate.ValidCallID(id) {
			t.Errorf("ValidCallID(%q) = false", id)
		}
	}
}
