package agent

import (
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// spanRun names the span of a Run (the OpenTelemetry GenAI conventions'
// "invoke_agent"); the tool calls' spans are its children.
const spanRun = "invoke_agent norma"

// Attribute keys of a run's span: ids, names, codes and counts, never a
// prompt, a model's text or a tool's input or output.
const (
	AttrOperation    = "gen_ai.operation.name"
	AttrAgentName    = "gen_ai.agent.name"
	AttrConversation = "gen_ai.conversation.id"
	AttrModel        = "gen_ai.request.model"
	AttrInputTokens  = "gen_ai.usage.input_tokens"
	AttrOutputTokens = "gen_ai.usage.output_tokens"
	AttrRunID        = "norma.run.id"
	AttrResumed      = "norma.run.resumed"
	AttrMode         = "norma.run.mode"
	AttrStatus       = "norma.run.status"
	AttrReason       = "norma.reason"
	AttrTurns        = "norma.run.turns"
	AttrCalls        = "norma.run.tool_calls"
)

// endSpan records the run's outcome on span and ends it.
func (s *Session) endSpan(span trace.Span, out Outcome, err error) {
	span.SetAttributes(
		attribute.String(AttrOperation, "invoke_agent"),
		attribute.String(AttrAgentName, "norma"),
		attribute.String(AttrConversation, s.cfg.runID),
		attribute.String(AttrRunID, s.cfg.runID),
		attribute.String(AttrModel, s.cfg.model),
		attribute.Bool(AttrResumed, s.resumed),
		attribute.String(AttrMode, s.g.Mode().String()),
		attribute.String(AttrStatus, string(out.Status)),
		attribute.String(AttrReason, out.Reason),
		attribute.Int(AttrTurns, out.Turns),
		attribute.Int(AttrCalls, len(out.Calls)),
		attribute.Int(AttrInputTokens, out.Usage.InputTokens),
		attribute.Int(AttrOutputTokens, out.Usage.OutputTokens),
	)
	if err != nil || out.Status == StatusFailed {
		// The code only: an error's text may quote a provider's answer.
		span.SetStatus(codes.Error, out.Reason)
	}
	span.End()
}
