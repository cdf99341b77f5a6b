package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/norma-run/norma/door/agenthook"
	"github.com/norma-run/norma/door/daemon"
	"github.com/norma-run/norma/internal/termtext"
)

// serveAgents are the agents whose hooks norma serve answers: those with
// a codec.
func serveAgents() []agenthook.Agent {
	var as []agenthook.Agent
	for _, a := range []agenthook.Agent{agenthook.ClaudeCode, agenthook.Codex, agenthook.Gemini} {
		if _, ok := agenthook.CodecFor(a); ok {
			as = append(as, a)
		}
	}
	return as
}

// serveTokenFile is the daemon's bearer token in the state directory.
const serveTokenFile = "serve.token"

func newServeCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Answer agents' hooks from one long-lived daemon (Unix socket, optional loopback HTTP)",
		Long: `Serve answers agents' hooks with one shared decision engine, so that a
decision costs one request instead of one process start:

  POST /hooks/claude-code   (also codex, gemini) the hook's JSON in, its answer out
  GET  /healthz

It listens on a Unix socket, STATE/serve.sock by default (mode 0600; a peer
of another uid is refused). The command hooks (norma hook claude-code, ...)
forward to it when it runs, and decide themselves when it does not.

--http 127.0.0.1:PORT also listens on loopback HTTP for Claude Code's
"type": "http" hooks, with a bearer token kept in STATE/serve.token
(made on first use, mode 0600): send "Authorization: Bearer TOKEN". A
non-loopback address is refused. Beware: Claude Code treats an http hook it
cannot reach, or one answered 401, as a non-blocking error and runs the
tool, so while the daemon is down an http hook fails open unless it sets
"onFailure": "block"; the command hook fails closed on its own.

--team ADDR also serves the team server over the store (--store), for
bearer tokens made with "norma serve token add NAME --role
approver|viewer|runner":

  /api/v1/    the JSON API (approvals, audit, runs, plugins, whoami)
  /inbox/     the approval inbox, a web page (sign in with a token)
  /metrics    Prometheus's text format (viewer or approver)

A loopback ADDR (127.0.0.1:8443; port 0: any free port, printed) may be
plain HTTP; any other (":8443" is every interface) needs --tls-cert and
--tls-key, and serves TLS only.

SIGTERM or SIGINT stops it after the requests in flight.`,
		Args: cobra.NoArgs,
		RunE: runServe,
	}
	cmd.Flags().String("socket", "", "Unix socket to listen on (default STATE/serve.sock)")
	cmd.Flags().String("http", "", "also listen on this loopback address and port, e.g. 127.0.0.1:8787 (port 0: any free port)")
	cmd.Flags().String("team", "", "also serve the team API on this address, e.g. 127.0.0.1:8443 (off loopback: TLS required)")
	cmd.Flags().String("tls-cert", "", "TLS certificate (PEM) of the --team listener")
	cmd.Flags().String("tls-key", "", "TLS private key (PEM) of the --team listener")
	cmd.AddCommand(newServeTokenCmd())
	return cmd
}

func runServe(cmd *cobra.Command, _ []string) error {
	home, err := stateDir(cmd)
	if err != nil {
		return exitWith(exitInternal, err)
	}
	sock, _ := cmd.Flags().GetString("socket")
	if sock == "" {
		sock = filepath.Join(home, serveSocketFile)
	}
	if sock, err = filepath.Abs(sock); err != nil {
		return exitWith(exitFailed, err)
	}
	httpAddr, _ := cmd.Flags().GetString("http")
	errw := cmd.ErrOrStderr()
	logf := serveLogger(errw)

	// Listeners first: a refused address or a live daemon fails before
	// anything is opened.
	var hl net.Listener
	var tok daemon.Token
	if httpAddr != "" {
		if hl, err = daemon.ListenLoopback(httpAddr); err != nil {
			return exitWith(exitFailed, err)
		}
		defer hl.Close()
		tokPath := filepath.Join(home, serveTokenFile)
		var created bool
		if tok, created, err = daemon.LoadToken(tokPath); err != nil {
			return exitWith(exitInternal, err)
		}
		if created {
			logf("made a new bearer token in %s", tokPath)
		}
	}
	var ts *teamServer
	if teamAddr, _ := cmd.Flags().GetString("team"); teamAddr != "" {
		cert, _ := cmd.Flags().GetString("tls-cert")
		key, _ := cmd.Flags().GetString("tls-key")
		var closeTeam func()
		if ts, closeTeam, err = openTeamServer(cmd, home, teamAddr, cert, key, logf); err != nil {
			return err
		}
		defer closeTeam()
	} else if cmd.Flags().Changed("tls-cert") || cmd.Flags().Changed("tls-key") {
		return exitWith(exitUsage, errors.New("--tls-cert and --tls-key are for --team"))
	}
	ul, err := daemon.ListenUnix(sock, func(uid int) { logf("refused a connection of uid %d", uid) })
	if err != nil {
		if errors.Is(err, daemon.ErrRunning) {
			return exitWith(exitBusy, err)
		}
		return exitWith(exitFailed, err)
	}

	hooks, err := newServeHooks(cmd)
	if err != nil {
		ul.Close()
		return exitWith(exitInternal, err)
	}
	defer hooks.Close()
	srv := daemon.New(daemon.Options{Hook: hooks.Answer, Fail: hooks.Fail, Agents: serveAgents(),
		Log: func(line string) { logf("%s", line) }})

	ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	serve := func(ln net.Listener, guard func(http.Handler) http.Handler) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := srv.Serve(ln, guard); err != nil {
				errs <- err
			}
		}()
	}
	serve(ul, nil)
	logf("listening on unix:%s (pid %d)", sock, os.Getpid())
	if hl != nil {
		serve(hl, daemon.Guard(tok, func(line string) { logf("%s", line) }))
		logf("listening on http://%s (bearer token in %s)", hl.Addr(), filepath.Join(home, serveTokenFile))
	}
	if ts != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := ts.Srv.Serve(ts.ln); err != nil {
				errs <- err
			}
		}()
		scheme := "http"
		if ts.TLS {
			scheme = "https"
		}
		logf("team server listening on %s://%s (tokens: norma serve token add)", scheme, ts.ln.Addr())
	}
	var serveErr error
	select {
	case <-ctx.Done():
		logf("stopping")
	case serveErr = <-errs:
	}
	shut, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := srv.Shutdown(shut); err != nil {
		logf("shutdown: %v", err)
	}
	if ts != nil {
		if err := ts.Srv.Shutdown(shut); err != nil {
			logf("shutdown: %v", err)
		}
	}
	wg.Wait()
	ul.Close()
	if serveErr != nil {
		return exitWith(exitInternal, serveErr)
	}
	logf("stopped")
	return nil
}

// serveLogger writes the daemon's log lines to w, one at a time, escaped
// (a line may name a path of the agent's).
func serveLogger(w io.Writer) func(format string, a ...any) {
	var mu sync.Mutex
	return func(format string, a ...any) {
		line := fmt.Sprintf(format, a...)
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(w, "%s norma serve: %s\n", time.Now().UTC().Format(time.RFC3339Nano), termtext.Escape(line))
	}
}
