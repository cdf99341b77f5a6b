package metrics_test

import (
	"testing"

	"github.com/norma-run/norma/audit"
	"github.com/norma-run/norma/audit/metrics"
)

func TestMetrics(t *testing.T) {
	m := metrics.New()
	l, err := audit.Open(audit.NewMemoryBackend(), &audit.Options{Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	p := func(typ string, mod func(*audit.Event)) audit.Event {
		e := audit.Event{Type: typ, Plugin: "com.example.issue-helper", PluginVersion: "1.4.0"}
		if mod != nil {
			mod(&e)
		}
		return e
	}
	evs := []audit.Event{
		p(audit.TypeCapabilityDecision, func(e *audit.Event) { e.CapabilityKind, e.Decision = "net.request", "allow" }),
		p(audit.TypeCapabilityDecision, func(e *audit.Event) { e.CapabilityKind, e.Decision = "net.request", "allow" }),
		p(audit.TypeCapabilityDecision, func(e *audit.Event) {
			e.CapabilityKind, e.Decision, e.Reason = "secret.use", "deny", "SECRET_UNDECLARED"
		}),
		p(audit.TypeApprovalRequested, nil), p(audit.TypeApprovalRequested, nil),
		p(audit.TypeApprovalGranted, nil), p(audit.TypeApprovalExpired, nil), p(audit.TypePluginHeld, nil),
	}
	for _, e := range evs {
		if err := l.Record(t.Context(), e); err != nil {
			t.Fatal(err)
		}
	}
	const pl = "com.example.issue-helper@1.4.0"
	mfs, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		for _, mt := range mf.GetMetric() {
			key := mf.GetName()
			for _, lp := range mt.GetLabel() {
				key += "," + lp.GetName() + "=" + lp.GetValue()
			}
			got[key] = mt.GetCounter().GetValue()
		}
	}
	want := map[string]float64{
		metrics.MetricDecisions + ",kind=net.request,plugin=" + pl + ",result=allow": 2,
		metrics.MetricDecisions + ",kind=secret.use,plugin=" + pl + ",result=deny":   1,
		metrics.MetricUndeclared + ",plugin=" + pl:                                   1,
		metrics.MetricApprovalsRequested + ",plugin=" + pl:                           2,
		metrics.MetricApprovalsGranted + ",plugin=" + pl:                             1,
		metrics.MetricApprovalsExpired + ",plugin=" + pl:                             1,
		metrics.MetricUpdatesHeld + ",plugin=" + pl:                                  1,
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("metric %s = %v, want %v", k, got[k], v)
		}
	}
}
