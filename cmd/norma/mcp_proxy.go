package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/norma-run/norma/agent"
	"github.com/norma-run/norma/approval"
	"github.com/norma-run/norma/gate"
	"github.com/norma-run/norma/internal/termtext"
	"github.com/norma-run/norma/plugin/host"
	"github.com/norma-run/norma/plugin/proxy"
	"github.com/norma-run/norma/provider"
	"github.com/norma-run/norma/secret"
	"github.com/norma-run/norma/store"
	"github.com/norma-run/norma/workspace"
)

// proxyFlags are the flags of `norma mcp proxy`.
type proxyFlags struct {
	workspace    string
	settings     string
	headless     bool
	approvalWait time.Duration
}

func newMCPProxyCmd() *cobra.Command {
	var f proxyFlags
	c := &cobra.Command{
		Use:   "proxy NAME [--workspace DIR] [--headless] [--approval-wait D]",
		Short: "Serve an added MCP server (or installed plugin) over stdio to any MCP client, every request through Norma's gate",
		Long: "A stdio MCP server for a client's config (.mcp.json: {\"command\": \"norma\", \"args\": [\"mcp\", \"proxy\", \"NAME\"]}).\n" +
			"Behind it the server NAME (its name or plugin id) runs as `norma run` runs it: in the workspace (default the\n" +
			"current directory) with its settings, in the sandbox behind the broker. tools/list shows its tools the policy\n" +
			"lets you see, under the server's own names; every tools/call, resources/read and prompts/get is decided,\n" +
			"approved, capped, redacted and audited by the gate. A refusal is a tool error whose text begins\n" +
			"\"norma: REASON:\".\n\n" +
			"Approvals: asked through the client (MCP elicitation, with the preview the terminal prompt shows) when it\n" +
			"supports it; otherwise the call waits up to --approval-wait for `norma approvals approve ID` in another\n" +
			"terminal, then is refused (APPROVAL_PENDING: once approved, the same call again runs); --approval-wait 0\n" +
			"refuses at once (APPROVAL_DENIED). --headless runs in dontAsk mode: a call that needs approval is refused\n" +
			"at once (MODE_DENIED), and nobody is asked.\n\n" +
			"stdout carries MCP frames only; Norma's messages go to stderr. The proxy exits when the client closes\n" +
			"stdin, and stops the server.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return runProxy(cmd, f, args[0]) },
	}
	fl := c.Flags()
	fl.StringVar(&f.workspace, "workspace", ".", "the workspace directory")
	fl.StringVar(&f.settings, "settings", "", "one more settings file, above the user's and the workspace's (below managed settings)")
	fl.BoolVar(&f.headless, "headless", false, "ask nobody: refuse every call that needs approval (dontAsk mode)")
	fl.DurationVar(&f.approvalWait, "approval-wait", 2*time.Minute, "without elicitation: how long a call waits for \"norma approvals approve\"")
	return c
}

// runProxy serves server name until the client closes stdin.
func runProxy(cmd *cobra.Command, f proxyFlags, name string) error {
	// A client that stops the proxy with a signal still gets the server
	// stopped and the audit log closed (its checkpoint signed).
	ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer stop()
	srv, err := mustFindServer(cmd, name)
	if err != nil {
		return err
	}
	server := srv.state.ServerName()
	home, err := stateDir(cmd)
	if err != nil {
		return exitWith(exitInternal, err)
	}
	ws, err := filepath.Abs(f.workspace)
	if err != nil {
		return exitWith(exitUsage, err)
	}
	if st, err := os.Stat(ws); err != nil || !st.IsDir() {
		return exitWith(exitUsage, fmt.Errorf("mcp proxy: --workspace %s is not a directory", f.workspace))
	}
	if !srv.state.LoadsIn(ws) {
		return exitWith(exitUsage, fmt.Errorf("mcp proxy: %s was added for another workspace (%s); run the proxy there (--workspace)",
			termtext.Escape(name), termtext.Escape(srv.state.Workspace)))
	}
	db, err := store.Open(ctx, filepath.Join(home, store.FileName))
	if err != nil {
		return exitWith(exitInternal, err)
	}
	defer db.Close()
	red, err := runRedactor(cmd, home)
	if err != nil {
		return err
	}
	log, err := openAuditLog(ctx, home, db, red)
	if err != nil {
		return exitWith(exitInternal, err)
	}
	defer closeAuditLog(cmd, log)
	stderr := cmd.ErrOrStderr()
	mode := gate.ModeDefault
	if f.headless {
		mode = gate.ModeDontAsk
	}
	// The approver asks the client, known once the proxy is built; the
	// service is needed before.
	var ask lateApprover
	svc, err := approval.NewService(db, &approval.Options{Sink: log, Approver: agent.PendingApprover(&ask, approval.DefaultTTL)})
	if err != nil {
		return exitWith(exitInternal, err)
	}
	rt, err := workspace.Open(ctx, workspace.Options{
		Dir: ws, Home: home, Mode: mode, ModeGiven: f.headless, Audit: log, Settings: settingsFiles(f.settings),
		Vault:    func(context.Context) (secret.Vault, error) { return openVault(cmd) },
		Redactor: red,
		Warn: func(err error) {
			fmt.Fprintf(stderr, "norma: %s\n", termtext.EscapeText(err.Error()))
		},
		Notify: func(n host.Notice) {
			fmt.Fprintf(stderr, "norma: %s: %s\n", termtext.Escape(n.Server), termtext.Escape(n.Text))
		},
	})
	if err != nil {
		return exitWith(exitFailed, err)
	}
	defer rt.Close()
	for _, pf := range rt.PluginFailures() {
		if pf.Plugin == srv.state.ID {
			return exitWith(exitFailed, fmt.Errorf("mcp proxy: %s not loaded: %s: %s", name, pf.Reason, pf.Detail))
		}
	}
	sess, err := rt.Session(ctx, agent.WithProvider(noModel{}, "mcp-proxy"), agent.WithApprovalService(svc),
		agent.WithSpillDir(filepath.Join(home, "spill")), agent.WithLedger(db), agent.WithUser("user:"+whoami()))
	if err != nil {
		return exitWith(exitFailed, err)
	}
	defer sess.Close()
	p, err := proxy.New(proxy.Options{Door: sess, Server: server, Version: proxyVersion(), Approvals: svc})
	if err != nil {
		return exitWith(exitInternal, err)
	}
	var fallback approval.Approver
	if f.approvalWait > 0 {
		fallback = timedApprover{approval.Waiter{Store: db}, f.approvalWait}
	}
	ask.set(p.Approver(fallback))
	fmt.Fprintf(stderr, "norma: proxying %s (run %s) in %s\n", termtext.Escape(server), rt.RunID(), termtext.Escape(ws))
	t := &mcp.IOTransport{Reader: io.NopCloser(cmd.InOrStdin()), Writer: nopWriteCloser{cmd.OutOrStdout()}}
	if err := p.Run(ctx, t); err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, mcp.ErrConnectionClosed) && ctx.Err() == nil {
		return exitWith(exitFailed, fmt.Errorf("mcp proxy: %w", err))
	}
	return nil
}

// lateApprover forwards to the approver set once the proxy exists; before
// it nobody can answer.
type lateApprover struct{ a approval.Approver }

func (l *lateApprover) set(a approval.Approver) { l.a = a }

func (l *lateApprover) Approve(ctx context.Context, r approval.Record) (approval.Verdict, error) {
	if l.a == nil {
		return proxy.Refuse{}.Approve(ctx, r)
	}
	return l.a.Approve(ctx, r)
}

// timedApprover waits for a decision at most wait: then the request
// expires (approval.ErrNoDecision).
type timedApprover struct {
	approval.Approver
	wait time.Duration
}

func (t timedApprover) Approve(ctx context.Context, r approval.Record) (approval.Verdict, error) {
	ctx, cancel := context.WithTimeout(ctx, t.wait)
	defer cancel()
	return t.Approver.Approve(ctx, r)
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// noModel is the provider of the proxy's session: the client is the
// agent, the session never calls a model.
type noModel struct{}

func (noModel) Name() string { return "none" }

func (noModel) Complete(context.Context, provider.Request, func(string)) (provider.Response, error) {
	return provider.Response{}, errors.New("mcp proxy: the session has no model")
}

// proxyVersion is the version the proxy advertises: the binary's module
// version.
func proxyVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "devel"
}
