// Command norma is the Norma runtime: manifests, policy, plugins, approvals,
// audit, the sandbox and the agent, behind one binary. This package is wiring
// only; every behaviour lives in a library package.
//
// Exit codes (a stable contract):
//
//	0  success / decided / valid
//	1  invalid input, a failed check, or a policy test mismatch
//	2  usage error (unknown command or flag)
//	3  re-consent required (manifest diff, plugin update, a held plugin
//	   stops norma run)
//	4  internal error (state directory, store)
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/norma-run/norma/internal/termtext"
)

// Exit codes.
const (
	exitOK       = 0
	exitFailed   = 1
	exitUsage    = 2
	exitConsent  = 3
	exitInternal = 4
	// exitBusy: the run is in use by another live norma process
	// (RUN_LOCKED); nothing of it was read or written.
	exitBusy = 5
)

// exitError carries an exit code through cobra's error return. A nil Err
// means the command already printed what it had to say.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// exitWith returns an error that makes norma exit with code, printing err
// (when non-nil) on stderr.
func exitWith(code int, err error) error { return &exitError{code: code, err: err} }

// commands are the command groups, one file each, in the order --help
// lists them. Every run builds fresh commands (no flag state survives).
func commands() []*cobra.Command {
	return []*cobra.Command{
		newRunCmd(), newPolicyCmd(), newManifestCmd(), newPluginCmd(), newApprovalsCmd(),
		newAuditCmd(), newSecretCmd(), newSandboxCmd(), newToolsCmd(), newDemoCmd(),
		newSettingsCmd(), newHooksCmd(), newPermissionsCmd(), newMCPCmd(), newHookCmd(),
		newServeCmd(),
	}
}

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:           "norma",
		Short:         "Run AI-agent tools and plugins with exactly the power they were granted",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().String("home", "", "state directory (default $NORMA_HOME, else the user's state directory)")
	root.PersistentFlags().String("store", "", "where approvals, the audit log, run locks and the ledger live: a SQLite PATH (sqlite:PATH) or a postgres:// URL (default $NORMA_STORE, else the store setting, else norma.db in the state directory)")
	root.AddCommand(commands()...)
	usageChecks(root) // suggest.go: unknown commands and flags exit 2 with a suggestion
	return root
}

func main() {
	if maybeSandboxInit() {
		return
	}
	os.Exit(run(os.Args[1:]))
}

// run executes the CLI with args and returns the exit code.
func run(args []string) int { return runWith(args, os.Stdin, os.Stdout, os.Stderr) }

// runWith is run with explicit streams; tests call it.
func runWith(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root := newRoot()
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	return exitCode(stderr, root.ExecuteContext(context.Background()))
}

// exitCode prints err, when it says something, and returns its exit code.
func exitCode(stderr io.Writer, err error) int {
	if err == nil {
		return exitOK
	}
	if ee, ok := errors.AsType[*exitError](err); ok {
		if ee.err != nil {
			fmt.Fprintln(stderr, "norma:", termtext.EscapeText(errText(ee.err)))
		}
		return ee.code
	}
	fmt.Fprintln(stderr, "norma:", termtext.EscapeText(errText(err)))
	return exitUsage
}
