package main

import (
	"errors"
	"fmt"
	"io"
	"os/user"
	"strings"
	"time"

	"github.com/norma-run/norma/runtime"

	"github.com/spf13/cobra"

	"github.com/norma-run/norma/approval"
	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/internal/termtext"
)

func newApprovalsCmd() *cobra.Command {
	c := &cobra.Command{Use: "approvals", Short: "List and decide approval requests from headless runs"}
	c.AddCommand(newApprovalsListCmd(), newApprovalsShowCmd(),
		newApprovalsDecideCmd("approve", true), newApprovalsDecideCmd("deny", false))
	return c
}

// approvalService opens the store with an audit log, so that decisions made
// here are chained into the same log as the run's own events.
func approvalService(cmd *cobra.Command) (*approval.Service, func(), error) {
	home, err := stateDir(cmd)
	if err != nil {
		return nil, nil, exitWith(exitInternal, err)
	}
	// Previews and reasons: token formats masked.
	svcs, err := openServices(cmd, home, runtime.ServicesOptions{})
	if err != nil {
		return nil, nil, err
	}
	return svcs.Approvals, func() { closeServices(cmd, svcs) }, nil
}

func printApproval(w io.Writer, r approval.Record, long bool) {
	state := string(r.State)
	if (r.State == approval.StatePending || r.State == approval.StateGranted) && !time.Now().Before(r.Expires) {
		state = "expired" // not yet marked; it can no longer be decided or used
	}
	esc := termtext.Escape // every field may hold what a model, a tool or a plugin wrote
	if !long {
		fmt.Fprintf(w, "%s  %-8s  %s  %s  %s  expires %s\n", esc(r.ID), state, esc(r.Tool), esc(r.Effect), esc(strings.ReplaceAll(r.Target, "\n", "; ")), r.Expires.UTC().Format(time.RFC3339))
		return
	}
	row := func(k, v string) {
		label := k + ":"
		for _, l := range termtext.Lines(v) { // a target lists one request per line
			fmt.Fprintf(w, "%-12s %s\n", label, l)
			label = ""
		}
	}
	row("id", r.ID)
	row("state", state)
	row("run", r.RunID)
	row("workspace", r.Workspace)
	row("principals", strings.Join(r.Principals, " > "))
	plugin := r.Plugin
	if r.PluginVersion != "" {
		plugin += "@" + r.PluginVersion
	}
	row("plugin", plugin)
	row("manifest", r.ManifestDigest)
	row("tool", r.Tool)
	row("effect", r.Effect)
	row("target", r.Target)
	row("credential", r.Credential)
	row("action", r.ActionHash)
	row("scope", string(r.Scope))
	row("created", r.Created.UTC().Format(time.RFC3339))
	row("expires", r.Expires.UTC().Format(time.RFC3339))
	row("decided by", r.DecidedBy)
	if !r.Decided.IsZero() {
		row("decided", r.Decided.UTC().Format(time.RFC3339))
	}
	row("reason", r.Why)
	row("uses", fmt.Sprint(r.Uses))
	// The preview last, in full, one escaped line per line: the command
	// text, the plugin tool's arguments or the diff that was asked for.
	if lines := termtext.Lines(r.Preview); len(lines) > 0 {
		fmt.Fprintln(w, "preview:")
		for _, l := range lines {
			fmt.Fprintln(w, "  "+l)
		}
	}
}

func newApprovalsListCmd() *cobra.Command {
	var all, asJSON bool
	var limit int
	c := &cobra.Command{
		Use:   "list",
		Short: "List pending approval requests (--all: every state)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			svc, done, err := approvalService(cmd)
			if err != nil {
				return err
			}
			defer done()
			f := approval.ListFilter{State: approval.StatePending, Limit: limit}
			if all {
				f.State = ""
			}
			recs, err := svc.List(cmd.Context(), f)
			if err != nil {
				return exitWith(exitInternal, err)
			}
			if asJSON {
				if recs == nil {
					recs = []approval.Record{}
				}
				return writeJSON(cmd.OutOrStdout(), recs)
			}
			for _, r := range recs {
				printApproval(cmd.OutOrStdout(), r, false)
			}
			return nil
		},
	}
	c.Flags().BoolVar(&all, "all", false, "include decided, expired and consumed approvals")
	c.Flags().BoolVar(&asJSON, "json", false, "print a JSON array")
	c.Flags().IntVar(&limit, "limit", 100, "maximum number of approvals")
	return c
}

func newApprovalsShowCmd() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "show ID",
		Short: "Show one approval request and its decision",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			svc, done, err := approvalService(cmd)
			if err != nil {
				return err
			}
			defer done()
			r, err := svc.Get(cmd.Context(), args[0])
			if errors.Is(err, approval.ErrNotFound) {
				return exitWith(exitFailed, err)
			}
			if err != nil {
				return exitWith(exitInternal, err)
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), r)
			}
			printApproval(cmd.OutOrStdout(), r, true)
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func whoami() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return "cli:" + u.Username
	}
	return "cli:unknown"
}

func newApprovalsDecideCmd(verb string, approve bool) *cobra.Command {
	var reason string
	c := &cobra.Command{
		Use:   verb + " ID",
		Short: strings.ToUpper(verb[:1]) + verb[1:] + " a pending approval request",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			svc, done, err := approvalService(cmd)
			if err != nil {
				return err
			}
			defer done()
			r, err := svc.Decide(cmd.Context(), args[0], approve, whoami(), reason)
			if err != nil {
				if errors.Is(err, approval.ErrNotFound) || capability.ReasonOf(err) == capability.ReasonApprovalExpired ||
					capability.ReasonOf(err) == "" {
					return exitWith(exitFailed, err)
				}
				return exitWith(exitInternal, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s %s\n", r.ID, r.State)
			return nil
		},
	}
	c.Flags().StringVar(&reason, "reason", "", "why (recorded with the decision)")
	return c
}
