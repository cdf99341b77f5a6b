package agent_test

import (
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/norma-run/norma/agent"
	"github.com/norma-run/norma/gate/gatetest"
)

// TestRunSpan: a Run is one span with the run's outcome, and each of its
// tool calls a child span; the prompt, the model's text and the tool's
// input and output (all holding the canary) are in none of them.
func TestRunSpan(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	prov := script(t, `turns:
  - text: "thinking `+canary+`"
    tool_calls:
      - {id: e1, name: Echo, input: {msg: "`+canary+`"}}
      - {id: w1, name: Write, input: {path: "`+canary+`.txt"}}
  - text: "done `+canary+`"
`)
	s, err := agent.NewSession(t.Context(), agent.WithProvider(prov, "m"), agent.WithTools(newTools(t).all...),
		agent.WithAudit(&gatetest.MemorySink{}), agent.WithTracer(tp.Tracer("test")))
	if err != nil {
		t.Fatal(err)
	}
	out, err := s.Run(t.Context(), "please "+canary)
	if err != nil || out.Status != agent.StatusCompleted {
		t.Fatalf("Run = %+v, %v", out, err)
	}
	spans := rec.Ended()
	if len(spans) != 3 {
		t.Fatalf("%d spans, want 3 (two calls and the run)", len(spans))
	}
	run := spans[2]
	if run.Name() != "invoke_agent norma" || run.Parent().IsValid() {
		t.Fatalf("last span %q (parent %v), want the run's root span", run.Name(), run.Parent())
	}
	attrs := map[string]string{}
	for _, kv := range run.Attributes() {
		attrs[string(kv.Key)] = kv.Value.Emit()
	}
	if attrs[agent.AttrRunID] != s.RunID() || attrs[agent.AttrStatus] != "completed" || attrs[agent.AttrTurns] != "2" || attrs[agent.AttrCalls] != "2" {
		t.Errorf("run span attributes %v", attrs)
	}
	for _, sp := range spans {
		if sp != run && (sp.Parent().SpanID() != run.SpanContext().SpanID() || sp.SpanContext().TraceID() != run.SpanContext().TraceID()) {
			t.Errorf("span %q is not a child of the run", sp.Name())
		}
		for _, kv := range sp.Attributes() {
			if strings.Contains(kv.Value.Emit(), canary) {
				t.Errorf("span %q attribute %s carries the canary", sp.Name(), kv.Key)
			}
		}
		if strings.Contains(sp.Status().Description, canary) {
			t.Errorf("span %q status carries the canary", sp.Name())
		}
	}
}
