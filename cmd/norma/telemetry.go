package main

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/norma-run/norma/audit"
	"github.com/norma-run/norma/internal/telemetry"
	"github.com/norma-run/norma/internal/termtext"
)

// startTracing starts the trace exporter when the standard OpenTelemetry
// environment configures one (OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT), and returns nil otherwise: then
// the SDK is never built. A configuration the exporter refuses is a
// warning, never a failed run.
func startTracing(cmd *cobra.Command) *telemetry.Tracing {
	if !telemetry.Configured(os.Getenv) {
		return nil
	}
	warn := func(err error) {
		fmt.Fprintf(cmd.ErrOrStderr(), "norma: traces: %s\n", termtext.EscapeText(errText(err)))
	}
	tr, err := telemetry.Start(cmd.Context(), telemetry.Config{Warn: warn})
	if err != nil {
		warn(err)
		return nil
	}
	return tr
}

// stopTracing flushes the spans, within telemetry.FlushTimeout; a
// collector that did not take them is a warning.
func stopTracing(cmd *cobra.Command, tr *telemetry.Tracing) {
	if err := tr.Shutdown(cmd.Context()); err != nil {
		fmt.Fprintf(cmd.ErrOrStderr(), "norma: traces: %s\n", termtext.EscapeText(errText(err)))
	}
}

// recordRunStarted writes the run's run_started event: whether a person
// at a terminal answers it (interactive) or not (background), for the
// interactive-versus-background figures of /metrics.
func recordRunStarted(ctx context.Context, log *audit.Log, runID string, resumed, interactive bool) error {
	kind := audit.RunBackground
	if interactive {
		kind = audit.RunInteractive
	}
	d := map[string]string{audit.DetailRunKind: kind}
	if resumed {
		d["resumed"] = "true"
	}
	return log.Record(ctx, audit.Event{Type: audit.TypeRunStarted, RunID: runID, Principal: "user:" + whoami(), Detail: d})
}
