package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/norma-run/norma/audit"
	"github.com/norma-run/norma/internal/termtext"
	"github.com/norma-run/norma/store"
)

// openStore opens <stateDir>/norma.db; failures exit with exitInternal.
func openStore(cmd *cobra.Command) (*store.DB, error) {
	dir, err := stateDir(cmd)
	if err != nil {
		return nil, exitWith(exitInternal, err)
	}
	db, err := store.Open(cmd.Context(), filepath.Join(dir, store.FileName))
	if err != nil {
		return nil, exitWith(exitInternal, err)
	}
	return db, nil
}

func newAuditCmd() *cobra.Command {
	c := &cobra.Command{Use: "audit", Short: "Read and verify the hash-chained audit log"}
	c.AddCommand(newAuditTailCmd(), newAuditQueryCmd(), newAuditVerifyCmd())
	return c
}

func printRecords(w io.Writer, recs []audit.Record, asJSON bool) error {
	for _, r := range recs {
		if asJSON {
			if err := writeJSONLine(w, r); err != nil {
				return err
			}
			continue
		}
		e := r.Event
		plugin := e.Plugin
		if e.PluginVersion != "" {
			plugin += "@" + e.PluginVersion
		}
		fields := []string{fmt.Sprintf("%6d", r.Seq), e.Time.UTC().Format(time.RFC3339Nano), termtext.Escape(e.Type)}
		for _, f := range []string{plugin, e.Tool, e.CapabilityKind, e.Decision, e.Reason, e.ApprovalID} {
			if f != "" {
				fields = append(fields, termtext.Escape(f)) // names a model or a plugin chose
			}
		}
		fmt.Fprintln(w, strings.Join(fields, "  "))
	}
	return nil
}

func newAuditTailCmd() *cobra.Command {
	var follow, asJSON bool
	var n int
	var poll time.Duration
	c := &cobra.Command{
		Use:   "tail",
		Short: "Print the newest events; -f keeps printing new ones",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			db, err := openStore(cmd)
			if err != nil {
				return err
			}
			defer db.Close()
			ctx := cmd.Context()
			recs, err := audit.QueryBackend(ctx, db, audit.Filter{Limit: n, Newest: true})
			if err != nil {
				return exitWith(exitInternal, err)
			}
			if err := printRecords(cmd.OutOrStdout(), recs, asJSON); err != nil {
				return exitWith(exitInternal, err)
			}
			if !follow {
				return nil
			}
			var last int64
			if len(recs) > 0 {
				last = recs[len(recs)-1].Seq
			}
			t := time.NewTicker(poll)
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return nil
				case <-t.C:
				}
				recs, err := audit.QueryBackend(ctx, db, audit.Filter{AfterSeq: last, Limit: 1000})
				if err != nil {
					return exitWith(exitInternal, err)
				}
				if err := printRecords(cmd.OutOrStdout(), recs, asJSON); err != nil {
					return exitWith(exitInternal, err)
				}
				if len(recs) > 0 {
					last = recs[len(recs)-1].Seq
				}
			}
		},
	}
	c.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing new events")
	c.Flags().BoolVar(&asJSON, "json", false, "one JSON object per line")
	c.Flags().IntVarP(&n, "lines", "n", 20, "number of events to print first")
	c.Flags().DurationVar(&poll, "poll", 500*time.Millisecond, "polling interval with -f")
	return c
}

// parseSince accepts an RFC 3339 time or a duration back from now ("1h").
func parseSince(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		return now.Add(-d), nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("--since %q: want an RFC 3339 time or a duration such as 1h", s)
	}
	return t, nil
}

func newAuditQueryCmd() *cobra.Command {
	var f audit.Filter
	var since string
	var asJSON bool
	c := &cobra.Command{
		Use:   "query",
		Short: "Print the events that match the filters, oldest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			t, err := parseSince(since, time.Now())
			if err != nil {
				return exitWith(exitUsage, err)
			}
			f.Since = t
			db, err := openStore(cmd)
			if err != nil {
				return err
			}
			defer db.Close()
			recs, err := audit.QueryBackend(cmd.Context(), db, f)
			if err != nil {
				return exitWith(exitInternal, err)
			}
			if asJSON {
				if recs == nil {
					recs = []audit.Record{}
				}
				return writeJSON(cmd.OutOrStdout(), recs)
			}
			return printRecords(cmd.OutOrStdout(), recs, false)
		},
	}
	c.Flags().StringVar(&f.Plugin, "plugin", "", "plugin id")
	c.Flags().StringVar(&f.Tool, "tool", "", "tool name")
	c.Flags().StringVar(&f.Decision, "decision", "", "allow, deny or approval_required")
	c.Flags().StringVar(&f.Type, "type", "", "event type (capability_decision, approval_granted, …)")
	c.Flags().StringVar(&f.RunID, "run", "", "run id")
	c.Flags().StringVar(&since, "since", "", "RFC 3339 time, or a duration back from now (1h)")
	c.Flags().IntVar(&f.Limit, "limit", 1000, "maximum number of events")
	c.Flags().BoolVar(&asJSON, "json", false, "print a JSON array")
	return c
}

func newAuditVerifyCmd() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "verify",
		Short: "Recompute the hash chain; exit 1 at the first broken link",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			db, err := openStore(cmd)
			if err != nil {
				return err
			}
			defer db.Close()
			res, err := verify(cmd.Context(), db)
			if err != nil {
				return exitWith(exitInternal, err)
			}
			w := cmd.OutOrStdout()
			if asJSON {
				if err := writeJSONLine(w, res); err != nil {
					return exitWith(exitInternal, err)
				}
			} else if res.OK() {
				fmt.Fprintf(w, "ok: %d events verified, head %s\n", res.Events, res.Head)
			} else {
				fmt.Fprintf(w, "BROKEN at seq %d: %s (%d events verified before it)\n", res.FirstBroken, res.Problem, res.Events)
			}
			if !res.OK() {
				return exitWith(exitFailed, nil)
			}
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return c
}

func verify(ctx context.Context, db *store.DB) (audit.VerifyResult, error) {
	return audit.VerifyBackend(ctx, db)
}
