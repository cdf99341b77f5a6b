package main

import (
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/norma-run/norma/door/agenthook"
	"github.com/norma-run/norma/door/daemon"
)

// serveSocketFile is the daemon's socket in the state directory.
const serveSocketFile = "serve.sock"

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
