package main

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/norma-run/norma/agenthook"
	"github.com/norma-run/norma/daemon"
	"github.com/norma-run/norma/internal/termtext"
	"github.com/norma-run/norma/secret"
	"github.com/norma-run/norma/store"
)

// serveHooks answers the daemon's hook requests: one agenthook.Engine for
// every request and every workspace (it caches their runtimes), writing
// its decisions to the state directory's audit log.
type serveHooks struct {
	engine *agenthook.Engine
	close  func()
}

func newServeHooks(cmd *cobra.Command, home string) (*serveHooks, error) {
	ctx := cmd.Context()
	db, err := store.Open(ctx, filepath.Join(home, store.FileName))
	if err != nil {
		return nil, err
	}
	log, err := openAuditLog(ctx, home, db, secret.NewRedactor())
	if err != nil {
		db.Close()
		return nil, err
	}
	errw := cmd.ErrOrStderr()
	e, err := agenthook.NewEngine(agenthook.EngineOptions{
		Home: home, Settings: settingsFiles(""), Audit: log,
		Warn: func(err error) { fmt.Fprintf(errw, "norma serve: %s\n", termtext.Escape(err.Error())) },
	})
	if err != nil {
		closeAuditLog(cmd, log)
		db.Close()
		return nil, err
	}
	return &serveHooks{engine: e, close: func() { e.Close(); closeAuditLog(cmd, log); db.Close() }}, nil
}

// Answer decides one hook request of agent a.
func (h *serveHooks) Answer(ctx context.Context, a agenthook.Agent, body []byte) daemon.Answer {
	c, ok := agenthook.CodecFor(a)
	if !ok {
		return daemon.Answer{Exit: 2, Stderr: "NORMA: no hook codec for " + string(a)}
	}
	r := agenthook.Respond(ctx, c, h.engine, body)
	return daemon.Answer{Out: r.Out, Exit: r.Exit, Stderr: r.Stderr}
}

// Fail is agent a's refusal of a request that could not be decided.
func (h *serveHooks) Fail(a agenthook.Agent, err error) daemon.Answer { return hookFail(a, err) }

// Close closes the engine and the audit log.
func (h *serveHooks) Close() error {
	h.close()
	return nil
}

// hookFail renders agent a's refusal of err: its codec's deny and the
// reason for stderr. With no codec for a it is exit 2, which every agent's
// command hook treats as a block.
func hookFail(a agenthook.Agent, err error) daemon.Answer {
	r := agenthook.ReasonText(agenthook.FailVerdict(err))
	c, ok := agenthook.CodecFor(a)
	if !ok {
		return daemon.Answer{Exit: 2, Stderr: r}
	}
	out, exit := c.Fail(err)
	return daemon.Answer{Out: out, Exit: exit, Stderr: r}
}
