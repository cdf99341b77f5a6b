package metrics_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/norma-run/norma/audit"
	"github.com/norma-run/norma/audit/metrics"
	"github.com/norma-run/norma/audit/metrics/metricstest"
)

const (
	pid = "com.example.issue-helper"
	pv  = "1.4.0"
)

// ev returns an event of the example plugin.
func ev(typ string, mod func(*audit.Event)) audit.Event {
	e := audit.Event{Type: typ, Plugin: pid, PluginVersion: pv}
	if mod != nil {
		mod(&e)
	}
	return e
}

func decision(kind, dec, reason string) audit.Event {
	return ev(audit.TypeCapabilityDecision, func(e *audit.Event) { e.CapabilityKind, e.Decision, e.Reason = kind, dec, reason })
}

// scrape serves m's Handler and parses the body with Prometheus's parser.
func scrape(t *testing.T, m *metrics.Metrics) map[string]float64 {
	t.Helper()
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, err := metricstest.Parse(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func dec(kind, decision, reason, plugin, version string) string {
	return metricstest.Key(metrics.MetricDecisions, "kind", kind, "decision", decision, "reason", reason, "plugin", plugin, "version", version)
}

func pl(name string) string {
	return metricstest.Key(name, "plugin", pid, "version", pv)
}

// TestObserve records events through a real audit.Log and checks the
// counters /metrics serves.
func TestObserve(t *testing.T) {
	m := metrics.New(nil)
	l, err := audit.Open(audit.NewMemoryBackend(), &audit.Options{Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	evs := []audit.Event{
		decision("net.request", "allow", "ALLOWED"),
		decision("net.request", "allow", "ALLOWED"),
		decision("secret.use", "deny", "SECRET_UNDECLARED"),
		decision("", "deny", "TOOL_UNDECLARED"),
		decision("fs.write", "", "SCHEMA_INVALID"),
		ev(audit.TypeToolCallStarted, func(e *audit.Event) { e.CapabilityKind, e.Decision, e.Reason = "fs.read", "allow", "ALLOWED" }),
		// The finished event of the same call is not a second decision.
		ev(audit.TypeToolCallFinished, func(e *audit.Event) { e.CapabilityKind, e.Decision, e.Reason = "fs.read", "allow", "ALLOWED" }),
		{Type: audit.TypeToolCallStarted, Tool: "Bash", CapabilityKind: "process.spawn", Decision: "approval_required", Reason: "APPROVAL_REQUIRED"},
		ev(audit.TypeApprovalRequested, nil), ev(audit.TypeApprovalRequested, nil),
		ev(audit.TypeApprovalGranted, nil), ev(audit.TypeApprovalDenied, nil), ev(audit.TypeApprovalExpired, nil),
		ev(audit.TypePluginHeld, nil),
		{Type: audit.TypeRunStarted, Detail: map[string]string{audit.DetailRunKind: audit.RunInteractive}},
		{Type: audit.TypeRunStarted, Detail: map[string]string{audit.DetailRunKind: audit.RunBackground}},
		{Type: audit.TypeRunStarted, Detail: map[string]string{audit.DetailRunKind: audit.RunBackground, "resumed": "true"}},
	}
	for _, e := range evs {
		if err := l.Record(t.Context(), e); err != nil {
			t.Fatal(err)
		}
	}
	got := scrape(t, m)
	want := map[string]float64{
		dec("net.request", "allow", "ALLOWED", pid, pv):                                               2,
		dec("secret.use", "deny", "SECRET_UNDECLARED", pid, pv):                                       1,
		dec("tool", "deny", "TOOL_UNDECLARED", pid, pv):                                               1,
		dec("fs.write", "deny", "SCHEMA_INVALID", pid, pv):                                            1,
		dec("fs.read", "allow", "ALLOWED", pid, pv):                                                   1,
		dec("process.spawn", "approval_required", "APPROVAL_REQUIRED", "-", "-"):                      1,
		metricstest.Key(metrics.MetricUndeclared, "kind", "secret.use", "plugin", pid, "version", pv): 1,
		metricstest.Key(metrics.MetricUndeclared, "kind", "tool", "plugin", pid, "version", pv):       1,
		pl(metrics.MetricApprovalsRequested):                                                          2,
		pl(metrics.MetricApprovalsGranted):                                                            1,
		pl(metrics.MetricApprovalsDenied):                                                             1,
		pl(metrics.MetricApprovalsExpired):                                                            1,
		pl(metrics.MetricUpdatesHeld):                                                                 1,
		metricstest.Key(metrics.MetricRuns, "kind", "interactive"):                                    1,
		metricstest.Key(metrics.MetricRuns, "kind", "background"):                                     2,
		metricstest.Key(metrics.MetricFollowErrors):                                                   0,
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("unexpected sample %s = %v", k, got[k])
		}
	}
}

// TestLabelsBounded feeds values a hostile or broken writer of the store
// could put in events: made-up kinds, decisions, reasons and run kinds
// count as "other", and plugins beyond the cap (or with characters no
// plugin id has) share one "other" series.
func TestLabelsBounded(t *testing.T) {
	m := metrics.New(&metrics.Options{MaxPlugins: 3})
	for i := range 1000 {
		m.Observe(audit.Event{Type: audit.TypeCapabilityDecision, Plugin: fmt.Sprintf("com.example.p%d", i), PluginVersion: "1.0.0",
			CapabilityKind: fmt.Sprintf("kind%d", i), Decision: fmt.Sprintf("maybe%d", i), Reason: fmt.Sprintf("MADE_UP_%d", i)})
		m.Observe(audit.Event{Type: audit.TypeRunStarted, Detail: map[string]string{audit.DetailRunKind: fmt.Sprint(i)}})
	}
	m.Observe(audit.Event{Type: audit.TypeApprovalRequested, Plugin: "com.example.p0", PluginVersion: "1.0.0"})
	m.Observe(audit.Event{Type: audit.TypeApprovalRequested, Plugin: "evil\n{x=\"y\"}", PluginVersion: "1"})
	got := scrape(t, m)
	if len(got) > 10 {
		t.Errorf("%d samples, want at most 10: %v", len(got), got)
	}
	for i := range 3 {
		if k := dec("other", "other", "other", fmt.Sprintf("com.example.p%d", i), "1.0.0"); got[k] != 1 {
			t.Errorf("%s = %v, want 1", k, got[k])
		}
	}
	if k := dec("other", "other", "other", "other", "other"); got[k] != 997 {
		t.Errorf("%s = %v, want 997", k, got[k])
	}
	if k := metricstest.Key(metrics.MetricRuns, "kind", "other"); got[k] != 1000 {
		t.Errorf("%s = %v, want 1000", k, got[k])
	}
	if k := metricstest.Key(metrics.MetricApprovalsRequested, "plugin", "com.example.p0", "version", "1.0.0"); got[k] != 1 {
		t.Errorf("%s = %v, want 1", k, got[k])
	}
	if k := metricstest.Key(metrics.MetricApprovalsRequested, "plugin", "other", "version", "other"); got[k] != 1 {
		t.Errorf("%s = %v, want 1", k, got[k])
	}
}
