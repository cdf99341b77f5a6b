// Package metrics counts audit events for Prometheus: capability
// decisions, undeclared-capability requests, approvals, plugin updates
// held for widening, and runs, by the labels the plugin-permission model
// asks for. It is apart from package audit so that a binary that links the
// audit log does not pay for client_golang at every start (issue 20): only
// what serves /metrics needs it.
//
// Every label has a bounded set of values: kinds, decisions and reason
// codes are closed sets (anything else counts as "other"), and plugin
// labels are capped (see [Options.MaxPlugins]), so a store full of
// made-up values cannot grow the registry without bound.
//
// A process counts its own events with [audit.Options.Metrics]; a team
// server that shares a store with other processes counts everybody's with
// [Follow], which tails the store.
package metrics

import (
	"net/http"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/norma-run/norma/audit"
)

// Metric names. They are API: never rename one.
const (
	MetricDecisions          = "norma_capability_decisions_total"
	MetricUndeclared         = "norma_undeclared_capability_requests_total"
	MetricApprovalsRequested = "norma_approvals_requested_total"
	MetricApprovalsGranted   = "norma_approvals_granted_total"
	MetricApprovalsDenied    = "norma_approvals_denied_total"
	MetricApprovalsExpired   = "norma_approvals_expired_total"
	MetricUpdatesHeld        = "norma_plugin_updates_held_total"
	MetricRuns               = "norma_runs_total"
	// MetricFollowErrors counts stored rows [Follow] could not decode.
	MetricFollowErrors = "norma_audit_follow_errors_total"
)

// Label names.
const (
	LabelKind     = "kind"
	LabelDecision = "decision"
	LabelReason   = "reason"
	LabelPlugin   = "plugin"
	LabelVersion  = "version"
	// LabelRunKind is "interactive" or "background" (see
	// [audit.TypeRunStarted]).
	LabelRunKind = "kind"
)

// Options configures [New]. A nil *Options means all defaults.
type Options struct {
	// MaxPlugins caps the distinct (plugin, version) label pairs; the
	// events of plugins seen after that count as plugin="other",
	// version="other". Zero means 256.
	MaxPlugins int
}

// Metrics holds Norma's counters on its own registry (no global
// registry, no Go or process collectors). It is safe for concurrent use
// and implements [audit.Observer].
type Metrics struct {
	reg        *prometheus.Registry
	decisions  *prometheus.CounterVec
	undeclared *prometheus.CounterVec
	requested  *prometheus.CounterVec
	granted    *prometheus.CounterVec
	denied     *prometheus.CounterVec
	expired    *prometheus.CounterVec
	held       *prometheus.CounterVec
	runs       *prometheus.CounterVec
	followErrs prometheus.Counter

	maxPlugins int
	mu         sync.Mutex
	plugins    map[[2]string]bool // the (plugin, version) pairs with a label
}

// New returns Metrics registered on a new registry.
func New(opts *Options) *Metrics {
	if opts == nil {
		opts = &Options{}
	}
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	}
	pv := []string{LabelPlugin, LabelVersion}
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		decisions: counter(MetricDecisions, "Capability decisions by capability kind, decision, reason code, plugin and version.",
			LabelKind, LabelDecision, LabelReason, LabelPlugin, LabelVersion),
		undeclared: counter(MetricUndeclared, "Requests for a capability or tool the plugin's manifest does not declare.", LabelKind, LabelPlugin, LabelVersion),
		requested:  counter(MetricApprovalsRequested, "Approval requests filed.", pv...),
		granted:    counter(MetricApprovalsGranted, "Approval requests granted.", pv...),
		denied:     counter(MetricApprovalsDenied, "Approval requests denied.", pv...),
		expired:    counter(MetricApprovalsExpired, "Approval requests that expired undecided.", pv...),
		held:       counter(MetricUpdatesHeld, "Plugin updates held because they widen what was consented to.", pv...),
		runs:       counter(MetricRuns, "Agent runs started, interactive (a person at a terminal answers) or background.", LabelRunKind),
		followErrs: prometheus.NewCounter(prometheus.CounterOpts{Name: MetricFollowErrors, Help: "Stored audit rows the follower could not decode."}),
		maxPlugins: opts.MaxPlugins,
		plugins:    map[[2]string]bool{},
	}
	if m.maxPlugins <= 0 {
		m.maxPlugins = 256
	}
	m.reg.MustRegister(m.decisions, m.undeclared, m.requested, m.granted, m.denied, m.expired, m.held, m.runs, m.followErrs)
	return m
}

// Registry returns the registry holding the counters.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the counters in the Prometheus text exposition format
// (or OpenMetrics/protobuf when the scraper asks for it).
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// Observe counts e. A gate decision is one event: a refusal is a
// capability_decision, an allowed call its tool_call_started (its
// tool_call_finished is not counted again).
func (m *Metrics) Observe(e audit.Event) {
	switch e.Type {
	case audit.TypeCapabilityDecision, audit.TypeToolCallStarted:
		p, v := m.pluginLabels(e)
		kind := kindLabel(e)
		m.decisions.WithLabelValues(kind, decisionLabel(e), reasonLabel(e.Reason), p, v).Inc()
		if undeclaredReasons[e.Reason] {
			m.undeclared.WithLabelValues(kind, p, v).Inc()
		}
	case audit.TypeApprovalRequested:
		m.requested.WithLabelValues(m.pluginLabels(e)).Inc()
	case audit.TypeApprovalGranted:
		m.granted.WithLabelValues(m.pluginLabels(e)).Inc()
	case audit.TypeApprovalDenied:
		m.denied.WithLabelValues(m.pluginLabels(e)).Inc()
	case audit.TypeApprovalExpired:
		m.expired.WithLabelValues(m.pluginLabels(e)).Inc()
	case audit.TypePluginHeld:
		m.held.WithLabelValues(m.pluginLabels(e)).Inc()
	case audit.TypeRunStarted:
		m.runs.WithLabelValues(runKindLabel(e.Detail[audit.DetailRunKind])).Inc()
	}
}

// pluginLabels returns the plugin and version labels of e: "-" for a
// built-in tool, and "other" for what is malformed or beyond the cap.
func (m *Metrics) pluginLabels(e audit.Event) (string, string) {
	if e.Plugin == "" {
		return none, none
	}
	v := e.PluginVersion
	if v == "" {
		v = none
	}
	if !labelSafe(e.Plugin) || (v != none && !labelSafe(v)) {
		return other, other
	}
	k := [2]string{e.Plugin, v}
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.plugins[k] {
		if len(m.plugins) >= m.maxPlugins {
			return other, other
		}
		m.plugins[k] = true
	}
	return e.Plugin, v
}
