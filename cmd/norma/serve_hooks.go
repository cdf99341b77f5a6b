package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/norma-run/norma/door/agenthook"
	"github.com/norma-run/norma/door/daemon"
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
