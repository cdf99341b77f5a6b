package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/norma-run/norma/agent"
	"github.com/norma-run/norma/approval"
	"github.com/norma-run/norma/door/mcpproxy"
	"github.com/norma-run/norma/gate"
	"github.com/norma-run/norma/internal/termtext"
	"github.com/norma-run/norma/manifest"
	"github.com/norma-run/norma/plugin/host"
	"github.com/norma-run/norma/runtime"
	"github.com/norma-run/norma/secret"
)

// proxyFlags are the flags of `norma mcp proxy`.
type proxyFlags struct {
	workspace    string
	settings     string
	headless     bool
	approvalWait time.Duration
	// manifest and grant are the development form's: a manifest that is
	// not installed, its server started by the command after --.
	manifest, grant string
}

func newMCPProxyCmd() *cobra.Command {
	var f proxyFlags
	c := &cobra.Command{
		Use:   "proxy (NAME | --manifest FILE [--grant FILE] -- CMD ARGS...) [--workspace DIR] [--headless] [--approval-wait D]",
		Short: "Serve an added MCP server (or installed plugin) over stdio to any MCP client, every request through Norma's gate",
		Long: "A stdio MCP server for a client's config (.mcp.json: {\"command\": \"norma\", \"args\": [\"mcp\", \"proxy\", \"NAME\"]}).\n" +
			"Behind it the server NAME (its name or plugin id) runs as `norma run` runs it: in the workspace (default the\n" +
			"current directory) with its settings, in the sandbox behind the broker. tools/list shows its tools the policy\n" +
			"lets you see, under the server's own names; every tools/call, resources/read and prompts/get is decided,\n" +
			"approved, redacted and audited by the gate. What the server sends reaches the client as it sent it (every\n" +
			"content block, structured content, errors with their codes, progress and logging), redacted; Norma adds\n" +
			"only its _meta keys (norma/reason). A refused call is a tool error whose text begins \"norma: REASON:\".\n\n" +
			"Approvals: asked through the client (MCP elicitation, with the preview the terminal prompt shows) when it\n" +
			"supports it, waiting up to --approval-wait for its answer (a cancel, an error or no answer leaves the\n" +
			"request pending: APPROVAL_PENDING); otherwise the call waits up to --approval-wait for\n" +
			"`norma approvals approve ID` in another terminal, then is refused (APPROVAL_PENDING: once approved, the same call again runs); --approval-wait 0\n" +
			"refuses at once (APPROVAL_DENIED). --headless runs in dontAsk mode: a call that needs approval is refused\n" +
			"at once (MODE_DENIED), and nobody is asked.\n\n" +
			"stdout carries MCP frames only; Norma's messages go to stderr. The proxy exits when the client closes\n" +
			"stdin, and stops the server.\n\n" +
			"For development, --manifest FILE -- CMD ARGS... serves a manifest that is not installed the same way:\n" +
			"CMD ARGS start its server in place of the manifest's entrypoint and args, in the manifest's directory\n" +
			"(its package: mounted read-only, the server's working directory; it may not overlap the workspace or\n" +
			"the state directory, PLUGIN_DEV_PACKAGE).\n" +
			"CMD is a path (relative to that directory) or a name looked up in the sandbox's PATH\n" +
			"(" + host.SandboxPath + "), never yours; ARGS may use the manifest's templates (${workspace}, ...).\n" +
			"Without --grant you consent to what the manifest declares, still capped by the workspace policy, the\n" +
			"settings and managed settings (what `norma policy explain --manifest FILE` decides); --grant FILE caps\n" +
			"it with that grant layer. Nothing is installed or written to the plugin state (its tool pins last for\n" +
			"the run, a data_dir is temporary), and the audit log records a consent_granted event with dev=true and\n" +
			"the manifest's digest. The server's name is the manifest's id.",
		Args: func(cmd *cobra.Command, args []string) error {
			if f.manifest == "" {
				if f.grant != "" {
					return exitWith(exitUsage, errors.New("mcp proxy: --grant goes with --manifest"))
				}
				return cobra.ExactArgs(1)(cmd, args)
			}
			if cmd.ArgsLenAtDash() != 0 || len(args) == 0 {
				return exitWith(exitUsage, errors.New("mcp proxy: --manifest FILE takes its server's command after --: norma mcp proxy --manifest FILE -- CMD ARGS..."))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error { return runProxy(cmd, f, args) },
	}
	fl := c.Flags()
	fl.StringVar(&f.workspace, "workspace", ".", "the workspace directory")
	fl.StringVar(&f.settings, "settings", "", "one more settings file, above the user's and the workspace's (below managed settings)")
	fl.BoolVar(&f.headless, "headless", false, "ask nobody: refuse every call that needs approval (dontAsk mode)")
	fl.DurationVar(&f.approvalWait, "approval-wait", 2*time.Minute, "how long a call waits for the client's answer to an approval elicitation, or without elicitation for \"norma approvals approve\"")
	fl.StringVar(&f.manifest, "manifest", "", "serve this manifest, not installed, its server started by the command after -- (development)")
	fl.StringVar(&f.grant, "grant", "", "with --manifest: the grant layer file that caps it (default: what the manifest declares)")
	return c
}

// proxyTarget is the server a proxy serves: an added server or installed
// plugin (id), or a manifest given for development (dev).
type proxyTarget struct {
	server string // the name its tools go by
	id     string // the installed plugin's id
	dev    *runtime.Declaration
}

// findProxyTarget resolves args: NAME, or with --manifest the command of
// the manifest's server.
func findProxyTarget(cmd *cobra.Command, f proxyFlags, args []string, ws string) (proxyTarget, error) {
	if f.manifest != "" {
		d, err := devDeclaration(f.manifest, f.grant, args)
		if err != nil {
			return proxyTarget{}, exitWith(exitUsage, fmt.Errorf("mcp proxy: %w", err))
		}
		return proxyTarget{server: d.Manifest.ID, dev: &d}, nil
	}
	name := args[0]
	srv, err := mustFindServer(cmd, name)
	if err != nil {
		return proxyTarget{}, err
	}
	if !srv.state.LoadsIn(ws) {
		return proxyTarget{}, exitWith(exitUsage, fmt.Errorf("mcp proxy: %s was added for another workspace (%s); run the proxy there (--workspace)",
			termtext.Escape(name), termtext.Escape(srv.state.Workspace)))
	}
	return proxyTarget{server: srv.state.ServerName(), id: srv.state.ID}, nil
}

// devDeclaration is the plugin of the manifest at path, not installed,
// with the grant layer at grant ("": none) and its server started by argv
// in the manifest's directory.
func devDeclaration(path, grant string, argv []string) (runtime.Declaration, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return runtime.Declaration{}, err
	}
	d := runtime.Declaration{Dir: filepath.Dir(abs), Launch: argv}
	if d.Manifest, err = manifest.ParseFile(abs); err != nil {
		return d, err
	}
	if grant != "" {
		if d.Grant, err = manifest.ParseLayerFile(grant); err != nil {
			return d, err
		}
		if d.Grant.Kind != manifest.KindGrant {
			return d, fmt.Errorf("--grant %s is a %q layer, want kind: %s", termtext.Escape(grant), termtext.Escape(d.Grant.Kind), manifest.KindGrant)
		}
	}
	return d, nil
}

// runProxy serves the server of args until the client closes stdin.
func runProxy(cmd *cobra.Command, f proxyFlags, args []string) error {
	// A client that stops the proxy with a signal still gets the server
	// stopped and the audit log closed (its checkpoint signed).
	ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer stop()
	home, err := stateDir(cmd)
	if err != nil {
		return exitWith(exitInternal, err)
	}
	ws, err := workspaceDir("mcp proxy", f.workspace)
	if err != nil {
		return err
	}
	tgt, err := findProxyTarget(cmd, f, args, ws)
	if err != nil {
		return err
	}
	server := tgt.server
	var declared []runtime.Declaration
	if tgt.dev != nil {
		declared = append(declared, *tgt.dev)
	}
	// The approver asks the client, known once the proxy is built; the
	// services are needed before.
	// The proxy serves a run of its own, held from here to the end.
	var ask lateApprover
	runID := agent.NewRunID()
	svcs, err := openServices(cmd, home, runtime.ServicesOptions{
		Vault:    func(context.Context) (secret.Vault, error) { return openVault(cmd) },
		Approver: agent.PendingApprover(&ask, approval.DefaultTTL), Run: runID})
	if err != nil {
		return err
	}
	defer closeServices(cmd, svcs)
	svc := svcs.Approvals
	stderr := cmd.ErrOrStderr()
	mode := gate.ModeDefault
	if f.headless {
		mode = gate.ModeDontAsk
	}
	rt, err := runtime.Open(ctx, runtime.Options{
		Dir: ws, RunID: runID, Mode: mode, ModeGiven: f.headless, Services: svcs, Settings: settingsFiles(f.settings), Declared: declared,
		Vault: func(context.Context) (secret.Vault, error) { return openVault(cmd) },
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
		if tgt.id != "" && pf.Plugin == tgt.id {
			return exitWith(exitFailed, fmt.Errorf("mcp proxy: %s not loaded: %s: %s", termtext.Escape(server), pf.Reason, pf.Detail))
		}
	}
	sess, err := rt.Session(ctx, agent.WithUser("user:"+whoami()))
	if err != nil {
		return exitWith(exitFailed, err)
	}
	defer sess.Close()
	o := mcpproxy.Options{Door: sess, Server: server, Version: proxyVersion(), Approvals: svc, ElicitWait: f.approvalWait}
	if up := servedPlugin(rt, server); up != nil {
		// The server's own initialize answer is the client's: started now,
		// as the first call would start it. One that cannot start is
		// served with Norma's own capabilities, and every call is refused
		// with the reason.
		o.Upstream = up
		if init, err := up.Upstream(ctx); err == nil {
			o.Init = init
		} else {
			fmt.Fprintf(stderr, "norma: %s: %s\n", termtext.Escape(server), termtext.EscapeText(err.Error()))
		}
	}
	p, err := mcpproxy.New(o)
	if err != nil {
		return exitWith(exitInternal, err)
	}
	var fallback approval.Approver
	if f.approvalWait > 0 {
		fallback = timedApprover{approval.Waiter{Store: svcs.Store}, f.approvalWait}
	}
	ask.set(p.Approver(fallback))
	if d := tgt.dev; d != nil {
		fmt.Fprintf(stderr, "norma: proxying %s from the manifest %s (%s, not installed; run %s) in %s\n", termtext.Escape(server),
			termtext.Escape(f.manifest), d.Manifest.Digest(), rt.RunID(), termtext.Escape(ws))
	} else {
		fmt.Fprintf(stderr, "norma: proxying %s (run %s) in %s\n", termtext.Escape(server), rt.RunID(), termtext.Escape(ws))
	}
	t := &mcp.IOTransport{Reader: io.NopCloser(cmd.InOrStdin()), Writer: nopWriteCloser{cmd.OutOrStdout()}}
	if err := p.Run(ctx, t); err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, mcp.ErrConnectionClosed) && ctx.Err() == nil {
		return exitWith(exitFailed, fmt.Errorf("mcp proxy: %w", err))
	}
	return nil
}

// servedPlugin is the loaded plugin of server name server, or nil.
func servedPlugin(rt *runtime.Runtime, server string) *host.Plugin {
	for _, ap := range rt.Plugins() {
		if hp, ok := ap.(*host.Plugin); ok && hp.ServerName() == server {
			return hp
		}
	}
	return nil
}

// lateApprover forwards to the approver set once the proxy exists; before
// it nobody can answer.
type lateApprover struct{ a approval.Approver }

func (l *lateApprover) set(a approval.Approver) { l.a = a }

func (l *lateApprover) Approve(ctx context.Context, r approval.Record) (approval.Verdict, error) {
	if l.a == nil {
		return mcpproxy.Refuse{}.Approve(ctx, r)
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

// proxyVersion is the version the proxy advertises: the binary's module
// version.
func proxyVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "devel"
}
