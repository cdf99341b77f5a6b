package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"
)

// fullExe is the name, beside the front build of norma, of the full build
// that the front executes for the commands it does not link.
const fullExe = "norma-full"

// heavyCmd names a command that links the model SDKs, the terminal UI, the
// MCP SDK, the team server or the tracing SDK. The full build's command
// takes its Use and Short from here, the front build's stand-in too, so
// `norma --help` reads the same from both (TestFrontStandInsMatch).
type heavyCmd struct{ use, short string }

var (
	runCmdName = heavyCmd{"run [flags] PROMPT",
		"Run an agent session: every tool call goes through the gate"}
	pluginCmdName = heavyCmd{"plugin",
		"Sign, verify, trust, install, update and remove plugin packages"}
	demoCmdName = heavyCmd{"demo [--yes] [--keep] [--json]",
		"The offline end-to-end showcase (run from the repository root)"}
	mcpCmdName = heavyCmd{"mcp",
		"Add, list, show, remove and import MCP servers (npx, uvx, python -m, node, a program), confined"}
	serveCmdName = heavyCmd{"serve",
		"Answer agents' hooks from one long-lived daemon (Unix socket, optional loopback HTTP)"}
)

// argsKey keys, in the root command's context, the arguments the CLI was
// given: a stand-in hands them to the full build unchanged (root flags
// before the command included).
type argsKey struct{}

// cliArgs are the arguments runWith was given, from the root command's
// context (a command shown by `norma help NAME` is not executed and has
// none of its own).
func cliArgs(c *cobra.Command) []string {
	ctx := c.Root().Context()
	if ctx == nil {
		return nil
	}
	a, _ := ctx.Value(argsKey{}).([]string)
	return a
}

// standIn is the front build's command for h: it parses nothing and
// executes the full build with the process's own arguments, so flags,
// --help and `norma help NAME` are answered by the command itself.
func standIn(h heavyCmd) *cobra.Command {
	c := &cobra.Command{
		Use:                h.use,
		Short:              h.short,
		DisableFlagParsing: true,
		RunE:               func(c *cobra.Command, _ []string) error { return execFull(cliArgs(c)) },
	}
	c.SetHelpFunc(func(c *cobra.Command, _ []string) {
		if err := execFull(cliArgs(c)); err != nil {
			fmt.Fprintln(c.ErrOrStderr(), "norma:", errText(err))
			os.Exit(exitInternal)
		}
	})
	return c
}

// execFull replaces this process by the full build beside it, with args,
// the same environment and file descriptors. It returns only when
// that build cannot be executed: missing, not kept like this binary (see
// keptAlike), or this very file (a front build installed as norma-full,
// which would execute itself forever).
func execFull(args []string) error {
	if len(args) == 0 { // a stand-in always has its own name among them
		return exitWith(exitInternal, errors.New("the command's arguments were not handed to its stand-in"))
	}
	exe, err := ownExe()
	if err != nil {
		return exitWith(exitInternal, err)
	}
	full := filepath.Join(filepath.Dir(exe), fullExe)
	if err = keptAlike(exe, full); err == nil {
		err = unix.Exec(full, append([]string{os.Args[0]}, args...), os.Environ())
	}
	if errors.Is(err, fs.ErrNotExist) {
		err = fmt.Errorf("this norma is the front build; the command needs %s beside it (go build -o %s ./cmd/norma)", full, full)
	}
	return exitWith(exitInternal, err)
}

// ownExe is the absolute path of this binary, symbolic links resolved.
func ownExe() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("the path of this norma binary: %w", err)
	}
	if r, err := filepath.EvalSymlinks(exe); err == nil {
		exe = r
	}
	return exe, nil
}

// keptAlike returns nil when sibling, the other binary of the installed
// pair beside exe, is a regular file other than exe that nobody can change
// who cannot change exe: its owner (and a symbolic link's) is exe's or
// root, and it is writable by its group or by others only where exe is too
// (by the same group). The
// directory alone does not vouch for it: in a shared directory with the
// sticky bit, such as /tmp, anyone may add a file beside a binary they
// cannot replace.
func keptAlike(exe, sibling string) error {
	fi, err := os.Stat(exe)
	if err != nil {
		return err
	}
	si, err := os.Stat(sibling)
	if err != nil {
		return err
	}
	if !si.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", sibling)
	}
	if os.SameFile(fi, si) {
		return fmt.Errorf("%s is this binary, a front build: norma-full must be the full build (go build -o %s ./cmd/norma)", sibling, sibling)
	}
	se, ok1 := fi.Sys().(*syscall.Stat_t)
	ss, ok2 := si.Sys().(*syscall.Stat_t)
	if !ok1 || !ok2 {
		return fmt.Errorf("%s: no owner to compare", sibling)
	}
	if li, err := os.Lstat(sibling); err != nil {
		return err
	} else if ls, ok := li.Sys().(*syscall.Stat_t); !ok || li.Mode()&fs.ModeSymlink != 0 && ls.Uid != se.Uid && ls.Uid != 0 {
		// A link someone else left there may name any file, root's too.
		return fmt.Errorf("%s is a symbolic link not owned by %s's owner: refusing to run it", sibling, exe)
	}
	perm, self := si.Mode().Perm(), fi.Mode().Perm()
	switch {
	case ss.Uid != se.Uid && ss.Uid != 0:
		return fmt.Errorf("%s is owned by uid %d, %s by uid %d: refusing to run it", sibling, ss.Uid, exe, se.Uid)
	case perm&0o002 != 0 && self&0o002 == 0:
		return fmt.Errorf("%s is writable by anyone, %s is not: refusing to run it", sibling, exe)
	case perm&0o020 != 0 && (self&0o020 == 0 || ss.Gid != se.Gid):
		return fmt.Errorf("%s is writable by group %d, %s is not: refusing to run it", sibling, ss.Gid, exe)
	}
	return nil
}

// selfExe is the absolute path of this norma binary, symbolic links
// resolved: what other processes (an agent's hooks and MCP servers) are
// told to run. norma-full beside a front build names the front, the
// command users run, when the front is kept alike (keptAlike); otherwise
// it names itself.
func selfExe() (string, error) {
	exe, err := ownExe()
	if err != nil {
		return "", err
	}
	if filepath.Base(exe) == fullExe {
		front := filepath.Join(filepath.Dir(exe), "norma")
		if keptAlike(exe, front) == nil {
			return front, nil
		}
	}
	return exe, nil
}
