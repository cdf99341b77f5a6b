package main

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/norma-run/norma/audit"
	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/internal/atomicfile"
	"github.com/norma-run/norma/internal/termtext"
	"github.com/norma-run/norma/runtime"
)

func newAuditCmd() *cobra.Command {
	c := &cobra.Command{Use: "audit", Short: "Read and verify the hash-chained audit log"}
	c.AddCommand(newAuditTailCmd(), newAuditQueryCmd(), newAuditVerifyCmd(), newAuditCheckpointCmd())
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
			db, err := openStoreOf(cmd)
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
			// A store that announces appends (PostgreSQL) wakes the tail
			// at once; the ticker stays as the fallback.
			var heads <-chan int64
			if f, ok := db.(audit.Follower); ok {
				heads, _ = f.FollowAudit(ctx)
			}
			for {
				select {
				case <-ctx.Done():
					return nil
				case <-t.C:
				case _, ok := <-heads:
					if !ok {
						heads = nil
					}
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
			db, err := openStoreOf(cmd)
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
	var exported, trustKeys []string
	c := &cobra.Command{
		Use:   "verify [--checkpoint FILE] [--trust-key FILE.pub]",
		Short: "Recompute the hash chain and check it against the signed checkpoints; exit 1 if it does not verify",
		Long: `Recompute the hash chain and check every signed checkpoint: the ones in
the database, the newest one's copy in the state directory, and each
--checkpoint FILE (exported with "norma audit checkpoint --out FILE").
A checkpoint must be signed by the state directory's audit key, the log
must still hold the events it covers, and the chain hash at its size must
be the signed one.

Exit status: 0 verified, 1 it does not (the reason code says why:
AUDIT_CHAIN_BROKEN, AUDIT_EVENTS_MISSING, AUDIT_CHECKPOINT_MISMATCH,
AUDIT_CHECKPOINT_INVALID, AUDIT_CHECKPOINT_MISSING), 4 state directory or
store.

State directories that share one store (--store) each sign checkpoints
of the one chain with their own key. The chain is always verified whole;
checkpoints are checked for this state directory's key and each
--trust-key. Those of other keys are listed by log name as not checked:
a key found in the database proves nothing.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			home, err := stateDir(cmd)
			if err != nil {
				return exitWith(exitInternal, err)
			}
			db, err := openStore(cmd.Context(), cmd, home)
			if err != nil {
				return err
			}
			defer db.Close()
			files, err := readExported(exported)
			if err != nil {
				return exitWith(exitFailed, err)
			}
			opts, err := runtime.AuditVerifyOptions(cmd.Context(), home, db, files)
			if errors.Is(err, runtime.ErrNoAuditKey) {
				return exitWith(exitFailed, err)
			} else if err != nil {
				return exitWith(exitInternal, err)
			}
			if opts != nil {
				if opts.Trusted, err = readTrustedKeys(trustKeys); err != nil {
					return exitWith(exitUsage, err)
				}
			}
			res, err := audit.VerifyWith(cmd.Context(), db, opts)
			if err != nil {
				return exitWith(exitInternal, err)
			}
			w := cmd.OutOrStdout()
			switch {
			case asJSON:
				if err := writeJSONLine(w, res); err != nil {
					return exitWith(exitInternal, err)
				}
			case res.OK() && opts == nil:
				fmt.Fprintf(w, "ok: %d events verified, head %s; no audit key, so no checkpoint to check\n", res.Events, res.Head)
			case res.OK():
				fmt.Fprintf(w, "ok: %d events verified, head %s; %d checkpoints verified, the newest covers %d events\n",
					res.Events, res.Head, res.Checkpoints, res.CheckpointSize)
				printUnchecked(w, res.Unchecked)
			default:
				// A checkpoint file's origin is quoted into Problem.
				fmt.Fprintf(w, "FAILED %s: %s (%d events chained)\n", res.Reason, termtext.Escape(res.Problem), res.Events)
			}
			if !res.OK() {
				return exitWith(exitFailed, nil)
			}
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	c.Flags().StringArrayVar(&exported, "checkpoint", nil, "also verify against this exported checkpoint (repeatable)")
	c.Flags().StringArrayVar(&trustKeys, "trust-key", nil, "also check the checkpoints signed by this audit key (another state directory's keys/audit-checkpoint.pub; repeatable)")
	return c
}

func newAuditCheckpointCmd() *cobra.Command {
	var out string
	c := &cobra.Command{
		Use:   "checkpoint [--out FILE]",
		Short: "Sign a checkpoint of the chain head and print it (or write it to FILE)",
		Long: `Sign a checkpoint of the audit log's head with the state directory's audit
key (created on first use in <state>/keys/audit-checkpoint.key), store it,
and print it: a signed note (golang.org/x/mod/sumdb/note) whose text is a
c2sp.org/tlog-checkpoint body: origin, number of events, base64 chain hash.
Every run writes one when it ends. Keep an exported copy somewhere the
state directory's owner cannot rewrite, and check it later with
"norma audit verify --checkpoint FILE".`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			home, err := stateDir(cmd)
			if err != nil {
				return exitWith(exitInternal, err)
			}
			db, err := openStore(cmd.Context(), cmd, home)
			if err != nil {
				return err
			}
			defer db.Close()
			cp, err := runtime.AuditCheckpointer(cmd.Context(), home, db)
			if err != nil {
				return exitWith(exitInternal, err)
			}
			signed, _, err := cp.Checkpoint(cmd.Context(), db)
			if capability.ReasonOf(err) != "" {
				return exitWith(exitFailed, err) // the log does not extend its newest checkpoint
			} else if err != nil {
				return exitWith(exitInternal, err)
			}
			if out == "" {
				_, err = cmd.OutOrStdout().Write(signed)
			} else {
				err = atomicfile.Write(out, signed, 0o644)
			}
			if err != nil {
				return exitWith(exitFailed, err)
			}
			return nil
		},
	}
	c.Flags().StringVar(&out, "out", "", "write the signed checkpoint to FILE instead of standard output")
	return c
}
