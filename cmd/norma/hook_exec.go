package main

import (
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/norma-run/norma/gate"
	"github.com/norma-run/norma/internal/termtext"
	"github.com/norma-run/norma/runtime"
	"github.com/norma-run/norma/tool"
)

// exitNotRun is the exit code of `norma hook exec` when the command did
// not run (the sandbox could not be built): 125, as env(1) and timeout(1)
// say it, distinct from any code of the command itself.
const exitNotRun = 125

// newHookExecCmd is `norma hook exec --workspace WS -- COMMAND`: what
// Claude Code's shell runs instead of a Bash command Norma allowed (the
// PreToolUse answer's updatedInput, agenthook.Wrap). It runs COMMAND as a
// run's Bash tool in WS would, in the same sandbox (Runtime.RunShell),
// and exits with its exit code. It never runs the command outside the
// sandbox: no sandbox, no command (exit 125).
func newHookExecCmd() *cobra.Command {
	var ws string
	c := &cobra.Command{
		Use:   "exec --workspace DIR -- COMMAND",
		Short: "Run one shell command inside the sandbox a run's Bash gets in DIR (what Norma's Claude Code hook runs a Bash call with)",
		Long: `Run COMMAND with bash -c as the Bash tool of "norma run" in the workspace
DIR would: in the OS sandbox built from the same policy and settings (the
workspace's files hidden or read-only as the policy says, no network unless
it grants one), in DIR. Standard output, standard error and the exit code are
the command's. When the sandbox cannot be built nothing runs and the exit
code is 125. "norma hook claude-code" answers an allowed Bash call with this
command line, so that the command runs confined.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return hookExec(cmd, ws, args[0])
		},
	}
	c.Flags().StringVar(&ws, "workspace", "", "the workspace directory (absolute)")
	c.MarkFlagRequired("workspace")
	return c
}

func hookExec(cmd *cobra.Command, ws, command string) error {
	notRun := func(err error) error {
		return exitWith(exitNotRun, fmt.Errorf("norma hook exec: the command was not run: %s", termtext.EscapeText(err.Error())))
	}
	if !filepath.IsAbs(ws) {
		return notRun(fmt.Errorf("--workspace %q is not an absolute path", ws))
	}
	home, err := stateDir(cmd)
	if err != nil {
		return notRun(err)
	}
	// Claude Code stops a command by signalling this process: the
	// sandboxed tree goes with it.
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	rt, err := runtime.OpenExplain(ctx, runtime.Options{Dir: ws, Home: home, Mode: gate.ModeDefault, Settings: settingsFiles(""), Audit: discardSink{},
		Warn: func(err error) { fmt.Fprintf(cmd.ErrOrStderr(), "norma: %s\n", termtext.EscapeText(err.Error())) }})
	if err != nil {
		return notRun(err)
	}
	defer rt.Close()
	res, err := rt.RunShell(ctx, command, tool.Command{Stdout: cmd.OutOrStdout(), Stderr: cmd.ErrOrStderr()})
	if err != nil {
		return notRun(err)
	}
	switch {
	case res.Signal != 0:
		return exitWith(128+res.Signal, nil)
	case res.ExitCode != 0:
		return exitWith(res.ExitCode, nil)
	}
	return nil
}
