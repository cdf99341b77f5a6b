package main

import (
	"context"
	"errors"

	"github.com/spf13/cobra"

	"github.com/norma-run/norma/agenthook"
	"github.com/norma-run/norma/daemon"
)

// serveHooks answers the daemon's hook requests with one shared engine.
type serveHooks struct{}

func newServeHooks(cmd *cobra.Command, home string) (*serveHooks, error) {
	return nil, errors.New("not wired yet")
}

func (h *serveHooks) Answer(ctx context.Context, a agenthook.Agent, body []byte) daemon.Answer {
	return daemon.Answer{Exit: 2}
}

func (h *serveHooks) Fail(a agenthook.Agent, err error) daemon.Answer { return daemon.Answer{Exit: 2} }

func (h *serveHooks) Close() error { return nil }
