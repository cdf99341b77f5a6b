// Package metrics counts audit events for Prometheus: capability
// decisions, undeclared-capability requests, approvals, plugin updates
// held for widening, and runs, by the labels the plugin-permission model
// asks for, and serves them in the Prometheus text format. It writes that
// format itself rather than link client_golang, whose package
// initializers would run at every start of norma (see expose.go).
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

// Metrics holds Norma's counters (no global registry, no Go or process
// collectors). It is safe for concurrent use and implements
// [audit.Observer].
type Metrics struct {
	fams       []*counterVec
	decisions  *counterVec
	undeclared *counterVec
	requested  *counterVec
	granted    *counterVec
	denied     *counterVec
	expired    *counterVec
	held       *counterVec
	runs       *counterVec
	followErrs *counterVec

	maxPlugins int
	mu         sync.Mutex
	plugins    map[[2]string]bool // the (plugin, version) pairs with a label
}

// New returns Metrics with every counter at zero.
func New(opts *Options) *Metrics {
	if opts == nil {
		opts = &Options{}
	}
	counter := newCounterVec
	pv := []string{LabelPlugin, LabelVersion}
	m := &Metrics{
		decisions: counter(MetricDecisions, "Capability decisions by capability kind, decision, reason code, plugin and version.",
			LabelKind, LabelDecision, LabelReason, LabelPlugin, LabelVersion),
		undeclared: counter(MetricUndeclared, "Requests for a capability or tool the plugin's manifest does not declare.", LabelKind, LabelPlugin, LabelVersion),
		requested:  counter(MetricApprovalsRequested, "Approval requests filed.", pv...),
		granted:    counter(MetricApprovalsGranted, "Approval requests granted.", pv...),
		denied:     counter(MetricApprovalsDenied, "Approval requests denied.", pv...),
		expired:    counter(MetricApprovalsExpired, "Approval requests that expired undecided.", pv...),
		held:       counter(MetricUpdatesHeld, "Plugin updates held because they widen what was consented to.", pv...),
		runs:       counter(MetricRuns, "Agent runs started, interactive (a person at a terminal answers) or background.", LabelRunKind),
		followErrs: counter(MetricFollowErrors, "Stored audit rows the follower could not decode."),
		maxPlugins: opts.MaxPlugins,
		plugins:    map[[2]string]bool{},
	}
	if m.maxPlugins <= 0 {
		m.maxPlugins = 256
	}
	m.fams = []*counterVec{m.decisions, m.undeclared, m.requested, m.granted, m.denied, m.expired, m.held, m.runs, m.followErrs}
	return m
}

// Handler serves the counters in the Prometheus text exposition format,
// version 0.0.4 (every Prometheus scrapes it).
func (m *Metrics) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		if r.Method == http.MethodHead {
			return
		}
		_ = writeText(w, m.fams)
	})
}

// Observe counts e. A gate decision is one event: a refusal is a
// capability_decision, an allowed call its tool_call_started (its
// tool_call_finished is not counted again).
func (m *Metrics) Observe(e audit.Event) {
	switch e.Type {
	case audit.TypeCapabilityDecision, audit.TypeToolCallStarted:
		p, v := m.pluginLabels(e)
		kind := kindLabel(e)
		m.decisions.inc(kind, decisionLabel(e), reasonLabel(e.Reason), p, v)
		if undeclaredReasons[e.Reason] {
			m.undeclared.inc(kind, p, v)
		}
	case audit.TypeApprovalRequested:
		m.requested.inc(m.pluginLabels(e))
	case audit.TypeApprovalGranted:
		m.granted.inc(m.pluginLabels(e))
	case audit.TypeApprovalDenied:
		m.denied.inc(m.pluginLabels(e))
	case audit.TypeApprovalExpired:
		m.expired.inc(m.pluginLabels(e))
	case audit.TypePluginHeld:
		m.held.inc(m.pluginLabels(e))
	case audit.TypeRunStarted:
		m.runs.inc(runKindLabel(e.Detail[audit.DetailRunKind]))
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
