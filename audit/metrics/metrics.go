// Package metrics counts audit events for Prometheus: decisions and
// approvals, by plugin. It is apart from package audit so that a binary
// that links the audit log does not link client_golang, whose package
// initializers (a default registry with Go and process collectors) run at
// every start (issue 20). Only what serves /metrics needs to link it.
package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/norma-run/norma/audit"
)

// Metrics holds Norma's decision and approval counters on its own
// registry (no global registry). Every counter is labeled by plugin, the
// "id@version" of the plugin concerned ("-" when none). It is safe for
// concurrent use. An [audit.Log] with Options.Metrics set to it observes
// each durable event.
type Metrics struct {
	reg        *prometheus.Registry
	decisions  *prometheus.CounterVec
	undeclared *prometheus.CounterVec
	requested  *prometheus.CounterVec
	granted    *prometheus.CounterVec
	denied     *prometheus.CounterVec
	expired    *prometheus.CounterVec
	held       *prometheus.CounterVec
}

// Metric names.
const (
	MetricDecisions          = "norma_capability_decisions_total"
	MetricUndeclared         = "norma_undeclared_capability_requests_total"
	MetricApprovalsRequested = "norma_approvals_requested_total"
	MetricApprovalsGranted   = "norma_approvals_granted_total"
	MetricApprovalsDenied    = "norma_approvals_denied_total"
	MetricApprovalsExpired   = "norma_approvals_expired_total"
	MetricUpdatesHeld        = "norma_plugin_updates_held_total"
)

// undeclaredReasons are the reason codes of requests for a capability the
// manifest does not declare.
var undeclaredReasons = map[string]bool{"TOOL_UNDECLARED": true, "SECRET_UNDECLARED": true}

// New returns Metrics registered on a new registry.
func New() *Metrics {
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	}
	m := &Metrics{
		reg:        prometheus.NewRegistry(),
		decisions:  counter(MetricDecisions, "Capability decisions by kind and result.", "kind", "result", "plugin"),
		undeclared: counter(MetricUndeclared, "Requests for capabilities the manifest does not declare.", "plugin"),
		requested:  counter(MetricApprovalsRequested, "Approval requests created.", "plugin"),
		granted:    counter(MetricApprovalsGranted, "Approvals granted.", "plugin"),
		denied:     counter(MetricApprovalsDenied, "Approvals denied.", "plugin"),
		expired:    counter(MetricApprovalsExpired, "Approvals that expired.", "plugin"),
		held:       counter(MetricUpdatesHeld, "Plugin updates held for re-consent.", "plugin"),
	}
	m.reg.MustRegister(m.decisions, m.undeclared, m.requested, m.granted, m.denied, m.expired, m.held)
	return m
}

// Registry returns the registry holding the counters (for `norma serve`
// and for tests, through Gather).
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Observe counts e.
func (m *Metrics) Observe(e audit.Event) {
	p := pluginLabel(e)
	switch e.Type {
	case audit.TypeCapabilityDecision:
		kind := e.CapabilityKind
		if kind == "" {
			kind = "-"
		}
		result := e.Decision
		if result == "" {
			result = "deny"
		}
		m.decisions.WithLabelValues(kind, result, p).Inc()
		if undeclaredReasons[e.Reason] {
			m.undeclared.WithLabelValues(p).Inc()
		}
	case audit.TypeApprovalRequested:
		m.requested.WithLabelValues(p).Inc()
	case audit.TypeApprovalGranted:
		m.granted.WithLabelValues(p).Inc()
	case audit.TypeApprovalDenied:
		m.denied.WithLabelValues(p).Inc()
	case audit.TypeApprovalExpired:
		m.expired.WithLabelValues(p).Inc()
	case audit.TypePluginHeld:
		m.held.WithLabelValues(p).Inc()
	}
}

func pluginLabel(e audit.Event) string {
	switch {
	case e.Plugin == "":
		return "-"
	case e.PluginVersion == "":
		return e.Plugin
	}
	return e.Plugin + "@" + e.PluginVersion
}
