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
	"strings"

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

// group is a command group: the name that runs it and its constructor.
type group struct {
	name string
	make func() *cobra.Command
}

// commandGroups are the command groups, one file each, in the order --help
// lists them (TestGroupNames checks the names).
var commandGroups = []group{
	{"run", newRunCmd}, {"policy", newPolicyCmd}, {"manifest", newManifestCmd}, {"plugin", newPluginCmd},
	{"approvals", newApprovalsCmd}, {"audit", newAuditCmd}, {"secret", newSecretCmd}, {"sandbox", newSandboxCmd},
	{"tools", newToolsCmd}, {"demo", newDemoCmd}, {"settings", newSettingsCmd}, {"hooks", newHooksCmd},
	{"permissions", newPermissionsCmd}, {"mcp", newMCPCmd}, {"hook", newHookCmd}, {"serve", newServeCmd},
}

// commands builds every command group. Every run builds fresh commands (no
// flag state survives).
func commands() []*cobra.Command {
	cs := make([]*cobra.Command, len(commandGroups))
	for i, g := range commandGroups {
		cs[i] = g.make()
	}
	return cs
}

// newRoot is the whole command tree.
func newRoot() *cobra.Command { return rootOf(commands()) }

// newRootFor is the tree that runs args: when they name a command group,
// after nothing but the root's --home and --store, the root holds that
// group alone, because building all sixteen groups (their flags, help and
// checks) was most of what a command hook did in main before it forwarded
// its input (issue 30). Anything else (help, completion, a misspelt
// command, another flag first) gets the whole tree, so suggestions and
// the root's help are unchanged.
func newRootFor(args []string) *cobra.Command {
	if build := groupOf(args); build != nil {
		root := rootOf([]*cobra.Command{build()})
		root.CompletionOptions.DisableDefaultCmd = true
		return root
	}
	return newRoot()
}

// groupOf is the constructor of the group args name first, after the
// root's string flags only; nil when they name none.
func groupOf(args []string) func() *cobra.Command {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--home" || a == "--store":
			i++
			continue
		case strings.HasPrefix(a, "--home=") || strings.HasPrefix(a, "--store="):
			continue
		case strings.HasPrefix(a, "-"):
			return nil
		}
		for _, g := range commandGroups {
			if g.name == a {
				return g.make
			}
		}
		return nil
	}
	return nil
}

func rootOf(cmds []*cobra.Command) *cobra.Command {
	root := &cobra.Command{
		Use:           "norma",
		Short:         "Run AI-agent tools and plugins with exactly the power they were granted",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().String("home", "", "state directory (default $NORMA_HOME, else the user's state directory)")
	root.PersistentFlags().String("store", "", "where approvals, the audit log, run locks and the ledger live: a SQLite PATH (sqlite:PATH) or a postgres:// URL (default $NORMA_STORE, else the store setting, else norma.db in the state directory)")
	root.AddCommand(cmds...)
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
	root := newRootFor(args)
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
