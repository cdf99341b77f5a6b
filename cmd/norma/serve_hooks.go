package main

import (
	"context"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/norma-run/norma/agenthook"
	"github.com/norma-run/norma/daemon"
)

// serveHooks answers the daemon's hook requests: one agenthook.Engine for
// every request and every workspace (it caches their runtimes), writing
// its decisions to the state directory's audit log, as the command hook
// does (openHookEngine).
type serveHooks struct {
	engine *agenthook.Engine
	close  func()
}

func newServeHooks(cmd *cobra.Command) (*serveHooks, error) {
	e, closeEngine, err := openHookEngine(cmd)
	if err != nil {
		return nil, err
	}
	return &serveHooks{engine: e, close: closeEngine}, nil
}

// Answer decides one hook request of agent a.
func (h *serveHooks) Answer(ctx context.Context, a agenthook.Agent, body []byte) daemon.Answer {
	c, ok := hookCodec(a, daemon.ProjectDir(ctx))
	if !ok { // not routed: serveAgents has the agents with a codec
		return daemon.Answer{Exit: 2, Stderr: "NORMA: no hook codec for " + string(a)}
	}
	return answer(agenthook.Respond(ctx, c, h.engine, body))
}

// Fail is agent a's refusal of a request that could not be decided.
func (h *serveHooks) Fail(a agenthook.Agent, err error) daemon.Answer {
	c, ok := agenthook.CodecFor(a)
	if !ok {
		return daemon.Answer{Exit: 2, Stderr: agenthook.ReasonText(agenthook.FailVerdict(err))}
	}
	return answer(agenthook.Refuse(c, err))
}

// Close closes the engine and the audit log.
func (h *serveHooks) Close() error {
	h.close()
	return nil
}

func answer(r agenthook.Result) daemon.Answer {
	return daemon.Answer{Out: r.Out, Exit: r.Exit, Stderr: r.Stderr}
}

// forwardHook hands the command hook's input to the daemon of the state
// directory when one runs. ok is false when none took the connection: the
// command then decides itself. Once a daemon took it, its failure is c's
// refusal (daemon.Client.Forward), never a second decision here.
func forwardHook(cmd *cobra.Command, c agenthook.Codec, in []byte) (agenthook.Result, bool) {
	home, err := stateDir(cmd)
	if err != nil {
		return agenthook.Result{}, false
	}
	cl := daemon.Client{Socket: filepath.Join(home, serveSocketFile), ProjectDir: projectDirOf(c),
		Fail: func(err error) daemon.Answer { return answer(agenthook.Refuse(c, err)) }}
	a, ok := cl.Forward(cmd.Context(), c.Agent(), in)
	return agenthook.Result{Out: a.Out, Exit: a.Exit, Stderr: a.Stderr}, ok
}
