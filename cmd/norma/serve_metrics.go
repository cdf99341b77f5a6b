package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/norma-run/norma/audit/metrics"
	"github.com/norma-run/norma/door/team"
	"github.com/norma-run/norma/internal/termtext"
)

func init() { teamMounts = append(teamMounts, mountMetrics) }

// mountMetrics serves GET /metrics on the team server, in the Prometheus
// text format, to a viewer or approver token (the audit.read action):
// Prometheus sends it with authorization.credentials_file. The counters
// are those of every process writing the shared store, read from the
// store by metrics.Follow from its first event on (so they are totals over
// the store's history, the same after a restart of the server); the
// server's own audit log does not count its events a second time.
func mountMetrics(cmd *cobra.Command, t *teamServer) error {
	m := metrics.New(nil)
	ctx := cmd.Context()
	stderr := cmd.ErrOrStderr()
	go func() {
		err := metrics.Follow(ctx, t.Store, m, nil)
		if err != nil && !errors.Is(err, context.Canceled) && ctx.Err() == nil {
			fmt.Fprintf(stderr, "norma: /metrics: reading the audit log: %s\n", termtext.EscapeText(errText(err)))
		}
	}()
	t.Srv.HandleFor("GET /metrics", team.ActionReadAudit, m.Handler())
	return nil
}
