package gate

import (
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/norma-run/norma/audit"
	"github.com/norma-run/norma/capability"
)

// spanToolCall names the span of a call (the OpenTelemetry GenAI
// conventions name it "execute_tool {tool}"; the tool is an attribute
// here so that a name the model made up never names a span).
const spanToolCall = "execute_tool"

// Attribute keys of a call's span. They carry names, ids, codes and
// durations only: never the input, the output, a secret or a path (the
// target is its audit hash).
const (
	AttrOperation     = "gen_ai.operation.name"
	AttrToolName      = "gen_ai.tool.name"
	AttrToolCallID    = "gen_ai.tool.call.id"
	AttrRunID         = "norma.run.id"
	AttrPlugin        = "norma.plugin.id"
	AttrPluginVersion = "norma.plugin.version"
	AttrDecision      = "norma.decision"
	AttrReason        = "norma.reason"
	AttrLayer         = "norma.layer"
	AttrStage         = "norma.stage"
	AttrCapability    = "norma.capability.kind"
	AttrTargetHash    = "norma.target.hash"
	AttrApprovalID    = "norma.approval.id"
	AttrSandbox       = "norma.sandbox"
	AttrDurationMS    = "norma.duration_ms"
	AttrIsError       = "norma.is_error"
)

// unknownTool stands for the name of a tool that is not registered: that
// name is the model's text.
const unknownTool = "unknown"

// endSpan records the call's outcome on span and ends it. It takes the
// values the final audit event holds (x.event), so the span and the log
// say the same, and nothing the log would not hold.
func (x *exec) endSpan(span trace.Span, stage Step) {
	e := x.event(audit.TypeToolCallFinished)
	name := unknownTool
	if x.entry != nil {
		name = x.entry.Name()
	}
	attrs := []attribute.KeyValue{
		attribute.String(AttrOperation, "execute_tool"),
		attribute.String(AttrToolName, name),
		attribute.String(AttrToolCallID, spanCallID(x.c.ID)),
		attribute.String(AttrRunID, x.c.RunID),
		attribute.String(AttrDecision, decisionOf(x)),
		attribute.String(AttrReason, string(x.res.Reason)),
		attribute.String(AttrStage, stage.String()),
		attribute.Bool(AttrSandbox, x.g.sandboxed),
		attribute.Int64(AttrDurationMS, x.res.Duration.Milliseconds()),
		attribute.Bool(AttrIsError, x.res.IsError),
	}
	for _, kv := range [...]struct{ k, v string }{
		{AttrPlugin, e.Plugin}, {AttrPluginVersion, e.PluginVersion}, {AttrLayer, e.Layer},
		{AttrCapability, e.CapabilityKind}, {AttrTargetHash, e.TargetHash}, {AttrApprovalID, e.ApprovalID},
	} {
		if kv.v != "" {
			attrs = append(attrs, attribute.String(kv.k, kv.v))
		}
	}
	span.SetAttributes(attrs...)
	if x.res.IsError {
		// The code only: the message may quote the input.
		span.SetStatus(codes.Error, string(x.res.Reason))
	}
	span.End()
}

// decisionOf is allow, deny or approval_required, as the agent's call
// record says it.
func decisionOf(x *exec) string {
	switch {
	case x.res.Reason == capability.ReasonAllowed && !x.res.IsError:
		return "allow"
	case x.dec.Reason == "":
		return "deny" // refused before the policy step
	}
	return x.dec.Mode.String()
}

// maxCallIDLen bounds a tool_use id: providers use a few dozen bytes; an
// extra call's is its caller's with ".extra".
const maxCallIDLen = 256

// ValidCallID reports whether id may be a call's tool_use id: the model
// (or the provider's endpoint) chooses it, and it becomes a span
// attribute, a ledger key and an approval's key, so it is a short token
// of letters, digits, '_', '-', '.' and ':'. The gate refuses a call
// with another id before its lookup.
func ValidCallID(id string) bool {
	if id == "" || len(id) > maxCallIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-' || c == '.' || c == ':') {
			return false
		}
	}
	return true
}

// spanCallID is id as a span attribute: "invalid" for an id the gate
// refused, whose text the model chose.
func spanCallID(id string) string {
	if ValidCallID(id) {
		return id
	}
	return "invalid"
}
