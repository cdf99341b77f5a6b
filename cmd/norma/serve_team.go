package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strings"
	"time"

	"github.com/norma-run/norma/runtime"

	"github.com/spf13/cobra"

	"github.com/norma-run/norma/approval"
	"github.com/norma-run/norma/audit"
	"github.com/norma-run/norma/door/team"
	"github.com/norma-run/norma/internal/termtext"
	"github.com/norma-run/norma/plugin"
	"github.com/norma-run/norma/store"
)

// teamServer is the team listener of `norma serve --team`: the team API
// over the store every run of the team shares (openStore), with its own
// audit log handle (decisions made through it are chained there).
type teamServer struct {
	// Srv is the API and the mount point of other routes (teamMounts).
	Srv *team.Server
	// Store and Log are the store and the audit log the API uses.
	Store store.Store
	Log   *audit.Log
	// Home is the server's state directory (its tokens, its audit key).
	Home string
	// TLS says whether the listener is TLS (a session cookie is then
	// Secure).
	TLS bool
	ln  net.Listener
}

// teamMounts add other packages' routes to the team server (the inbox,
// /metrics): each file that has some appends its function in an init, so
// this one stays untouched. A failure stops norma serve before it listens.
var teamMounts []func(cmd *cobra.Command, t *teamServer) error

// teamTokens is the token file of state directory home.
func teamTokens(home string) *team.Tokens {
	return team.OpenTokens(filepath.Join(home, team.TokenFile))
}

// openTeamServer listens on addr (team.Listen: TLS is required off
// loopback) and builds the API; close releases everything it opened.
func openTeamServer(cmd *cobra.Command, home, addr, certFile, keyFile string, logf func(string, ...any)) (*teamServer, func(), error) {
	ln, isTLS, err := team.Listen(addr, certFile, keyFile)
	if err != nil {
		return nil, nil, exitWith(exitUsage, err)
	}
	// No Approver: a request filed through the API waits for a person.
	svcs, err := openServices(cmd, home, runtime.ServicesOptions{})
	if err != nil {
		ln.Close()
		return nil, nil, err
	}
	db, log, svc := svcs.Store, svcs.Audit, svcs.Approvals
	closeAll := func() {
		if err := svcs.Close(); err != nil {
			logf("team: closing the audit log: %v", err)
		}
		ln.Close()
	}
	opts := team.Options{
		Tokens: teamTokens(home), Approvals: svc, Audit: db,
		Verify:  func(ctx context.Context) (audit.VerifyResult, error) { return verifyStore(ctx, home, db) },
		Plugins: func(context.Context) ([]team.Plugin, error) { return teamPlugins(home, log) },
		Log:     func(line string) { logf("%s", line) },
	}
	if w, ok := db.(approval.Watcher); ok {
		opts.Watch = w
	}
	srv, err := team.New(opts)
	if err != nil {
		closeAll()
		return nil, nil, exitWith(exitInternal, err)
	}
	t := &teamServer{Srv: srv, Store: db, Log: log, Home: home, TLS: isTLS, ln: ln}
	for _, mount := range teamMounts {
		if err := mount(cmd, t); err != nil {
			closeAll()
			return nil, nil, err
		}
	}
	return t, closeAll, nil
}

// verifyStore is `norma audit verify` of home over db, as the team API's
// /api/v1/audit/verify answers it: the chain and the checkpoints home's
// audit key can check.
func verifyStore(ctx context.Context, home string, db store.Store) (audit.VerifyResult, error) {
	opts, err := runtime.AuditVerifyOptions(ctx, home, db, nil)
	if err != nil {
		return audit.VerifyResult{}, err
	}
	return audit.VerifyWith(ctx, db, opts)
}

// teamPlugins lists the plugins installed in home with their grants.
func teamPlugins(home string, log *audit.Log) ([]team.Plugin, error) {
	m, err := plugin.NewManager(plugin.Options{Home: home, Audit: log, Out: io.Discard})
	if err != nil {
		return nil, err
	}
	sts, err := m.List()
	if err != nil {
		return nil, err
	}
	out := make([]team.Plugin, 0, len(sts))
	for _, st := range sts {
		p := team.Plugin{ID: st.ID, Version: st.Active, Held: st.Held}
		if vs := st.Versions[st.Active]; vs != nil {
			p.Publisher, p.Signer, p.Untrusted, p.Manifest = vs.Publisher, vs.Signer, vs.Untrusted, vs.ManifestDigest
		}
		g, _, err := m.Grant(st.ID)
		if err != nil {
			p.GrantError = errText(err)
		} else {
			p.Grant = groupsJSON(plugin.GrantItems(g.Permissions))
		}
		out = append(out, p)
	}
	return out, nil
}

func newServeTokenCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "token",
		Short: "Manage the team server's bearer tokens (approver, viewer, runner)",
		Long: `Manage the bearer tokens of norma serve --team. Each token has one role:

  approver  reads approvals, the audit log, runs and plugins; approves and denies
  viewer    reads approvals, the audit log, runs and plugins
  runner    files approval requests and waits on them; never approves

The token is printed once, by "token add"; the state directory keeps only
its SHA-256 (STATE/` + team.TokenFile + `, mode 0600). A running server sees
an added or revoked token from its next request on.`,
	}
	c.AddCommand(newServeTokenAddCmd(), newServeTokenListCmd(), newServeTokenRevokeCmd())
	return c
}

func newServeTokenAddCmd() *cobra.Command {
	var role string
	c := &cobra.Command{
		Use:   "add NAME --role approver|viewer|runner",
		Short: "Make a token and print it once (decisions name it team:NAME)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := team.ParseRole(role)
			if err != nil {
				return exitWith(exitUsage, err)
			}
			home, err := stateDir(cmd)
			if err != nil {
				return exitWith(exitInternal, err)
			}
			sec, info, err := teamTokens(home).Add(args[0], r, time.Now())
			if err != nil {
				if errors.Is(err, team.ErrTokenExists) || !team.ValidName(args[0]) {
					return exitWith(exitFailed, err)
				}
				return exitWith(exitInternal, err)
			}
			fmt.Fprintln(cmd.OutOrStdout(), sec.Reveal())
			fmt.Fprintf(cmd.ErrOrStderr(), "norma: token %s (%s) made; it is shown only this once (send \"Authorization: Bearer TOKEN\")\n", info.Name, info.Role)
			return nil
		},
	}
	c.Flags().StringVar(&role, "role", "", "approver, viewer or runner (required)")
	c.MarkFlagRequired("role")
	return c
}

func newServeTokenListCmd() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "list [--json]",
		Short: "List the tokens: name, role, created (never the token)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			home, err := stateDir(cmd)
			if err != nil {
				return exitWith(exitInternal, err)
			}
			ts, err := teamTokens(home).List()
			if err != nil {
				return exitWith(exitInternal, err)
			}
			if asJSON {
				type row struct {
					Name    string    `json:"name"`
					Role    team.Role `json:"role"`
					Created time.Time `json:"created"`
				}
				out := []row{}
				for _, t := range ts {
					out = append(out, row{t.Name, t.Role, t.Created})
				}
				return writeJSON(cmd.OutOrStdout(), out)
			}
			for _, t := range ts {
				fmt.Fprintf(cmd.OutOrStdout(), "%-24s %-8s %s\n", termtext.Escape(t.Name), t.Role, t.Created.UTC().Format(time.RFC3339))
			}
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print a JSON array")
	return c
}

func newServeTokenRevokeCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "revoke NAME",
		Short: "Delete a token; the server refuses it from its next request on",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			home, err := stateDir(cmd)
			if err != nil {
				return exitWith(exitInternal, err)
			}
			if err := teamTokens(home).Revoke(args[0]); err != nil {
				if errors.Is(err, team.ErrNoToken) {
					return exitWith(exitFailed, err)
				}
				return exitWith(exitInternal, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "revoked %s\n", termtext.Escape(strings.TrimSpace(args[0])))
			return nil
		},
	}
}
