// Package telemetry exports OpenTelemetry traces of runs and tool calls
// over OTLP/HTTP, when (and only when) a collector is configured.
//
// The spans are made by the agent (one per run) and the gate (one per
// tool call) through the OpenTelemetry API (go.opentelemetry.io/otel/trace)
// that they are given; this package owns the SDK: [Start] builds a tracer
// provider with a batching OTLP/HTTP exporter (binary protobuf, the
// standard OTEL_EXPORTER_OTLP_* endpoint and headers variables; see
// otlp.go for why it is not the otlptracehttp module), and
// [Tracing.Shutdown] flushes it within a bounded time. Nothing here runs at package
// initialization: a process that has no collector configured never
// builds the SDK (cold start, issue 20), and a collector that is
// unreachable costs a run at most [FlushTimeout] at its end.
//
// What goes into a span is decided by its maker, under one rule: names,
// ids, codes, counts and durations only — never a tool's arguments, a
// secret, a request or response body, a file's content or a path (a
// target is named by its audit hash).
package telemetry
