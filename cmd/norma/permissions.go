package main

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/norma-run/norma/settings"
)

func newPermissionsCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "permissions",
		Short: "List and revoke the permission rules an approval prompt kept (\"always\")",
		Long: `"always" at an approval prompt adds the call's exact rule to permissions.allow of the
workspace's .norma/settings.local.yaml. "yes for this session" keeps the rule in the
running session only: it is gone when the session ends and is not listed here.`,
	}
	c.AddCommand(newPermissionsListCmd(), newPermissionsRevokeCmd())
	return c
}

// permissionsList is the output of `permissions list --json`.
type permissionsList struct {
	// Grants are the allow rules of the local settings file: what
	// "always" wrote (or you did), and what revoke removes.
	Grants []settings.Rule `json:"grants"`
	// Rules are the rules of every other settings file, with their origin.
	Rules []settings.Rule `json:"rules"`
	// Session says where "yes for this session" grants live.
	Session string `json:"session"`
	// LocalFile is the file revoke edits.
	LocalFile string `json:"local_file"`
}

const sessionNote = `grants made with "yes for this session" live only in the session that made them; they end with it and are not listed here`

func newPermissionsListCmd() *cobra.Command {
	var workspace string
	var asJSON bool
	c := &cobra.Command{
		Use:   "list [--workspace DIR] [--json]",
		Short: "The persisted grants (.norma/settings.local.yaml allow rules, with file:line) and the other settings files' rules",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, err := filepath.Abs(workspace)
			if err != nil {
				return exitWith(exitUsage, err)
			}
			o := settingsFiles("")
			o.Workspace = dir
			st, err := settings.Load(o)
			if err != nil {
				printProblems(cmd.ErrOrStderr(), err)
				return exitWith(exitFailed, nil)
			}
			out := permissionsList{Grants: []settings.Rule{}, Rules: []settings.Rule{}, Session: sessionNote,
				LocalFile: filepath.Join(dir, settings.LocalFile)}
			for _, r := range st.Rules {
				if r.Source.Scope == settings.ScopeLocal && r.List == "allow" {
					out.Grants = append(out.Grants, r)
				} else {
					out.Rules = append(out.Rules, r)
				}
			}
			if asJSON {
				writeJSON(cmd.OutOrStdout(), out)
				return nil
			}
			printPermissions(cmd.OutOrStdout(), out)
			return nil
		},
	}
	c.Flags().StringVar(&workspace, "workspace", ".", "workspace directory")
	c.Flags().BoolVar(&asJSON, "json", false, "print the rules as JSON")
	return c
}

func printPermissions(w io.Writer, p permissionsList) {
	fmt.Fprintf(w, "grants (%s; remove one with `norma permissions revoke RULE`):\n", p.LocalFile)
	if len(p.Grants) == 0 {
		fmt.Fprintln(w, "  none")
	}
	for _, r := range p.Grants {
		fmt.Fprintf(w, "  %-40s %s:%d\n", strconv.Quote(r.Text), r.Source.File, r.Source.Line)
	}
	fmt.Fprintln(w, "rules of the other settings files:")
	if len(p.Rules) == 0 {
		fmt.Fprintln(w, "  none")
	}
	for _, r := range p.Rules {
		fmt.Fprintf(w, "  %-5s %-40s %s\n", r.List, strconv.Quote(r.Text), r.Source)
	}
	fmt.Fprintln(w, "session: "+p.Session)
}

func newPermissionsRevokeCmd() *cobra.Command {
	var workspace string
	c := &cobra.Command{
		Use:   "revoke RULE [--workspace DIR]",
		Short: "Remove an allow rule from .norma/settings.local.yaml (exit 1 when it is not there)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := filepath.Abs(workspace)
			if err != nil {
				return exitWith(exitUsage, err)
			}
			rule := args[0]
			switch err := settings.RemoveLocalAllow(dir, rule); {
			case errors.Is(err, settings.ErrRuleNotFound):
				return exitWith(exitFailed, fmt.Errorf("permissions revoke: %s does not allow %s (see `norma permissions list`)",
					filepath.Join(dir, settings.LocalFile), strconv.Quote(rule)))
			case err != nil:
				printProblems(cmd.ErrOrStderr(), err)
				return exitWith(exitFailed, nil)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "revoked %s (%s); sessions already running keep the rules they started with\n",
				strconv.Quote(rule), filepath.Join(dir, settings.LocalFile))
			return nil
		},
	}
	c.Flags().StringVar(&workspace, "workspace", ".", "workspace directory")
	return c
}
