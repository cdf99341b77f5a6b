package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/sandbox"
	"github.com/norma-run/norma/sandbox/sandboxpolicy"
)

// Exit codes of `norma sandbox exec` when the command itself did not run
// (the command's own status is passed through otherwise), following the
// env(1)/timeout(1) convention.
const (
	exitSandboxFailed = 125 // the sandbox could not be built
	exitCannotExec    = 126 // the command was found but could not run
	exitNotFound      = 127 // the command was not found inside the sandbox
)

func newSandboxCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "sandbox",
		Short: "Run commands in the OS sandbox and inspect what this host supports",
	}
	c.AddCommand(newSandboxExecCmd(), newSandboxDoctorCmd())
	return c
}

func newSandboxExecCmd() *cobra.Command {
	var (
		ro, rw, deny, env []string
		netMode, dir      string
		timeout           time.Duration
		unsafe            bool
		nproc, nofile     uint64
		memory            string
	)
	c := &cobra.Command{
		Use:   "exec [--ro PATH]... [--rw PATH]... [--net none] -- CMD ARGS...",
		Short: "Run CMD confined to the given paths, with no network",
		Long: `Run CMD in the sandbox: only /usr, /lib*, /bin, /sbin, a few /etc files
and the --ro/--rw paths are visible; there is no network; nothing of the
caller's environment is passed but PATH and the --env entries.

The command's exit status is passed through (128+N when killed by signal N).
125 means the sandbox could not be built, 126 that the command could not be
executed, 127 that it was not found inside the sandbox.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			mode, err := sandbox.ParseNetworkMode(netMode)
			if err != nil {
				return exitWith(exitUsage, err)
			}
			if mode != sandbox.NetNone {
				return exitWith(exitUsage, errors.New("--net: only none is available from the command line (broker mode needs the egress broker)"))
			}
			abs := func(ps []string) ([]string, error) {
				out := make([]string, 0, len(ps))
				for _, p := range ps {
					a, err := filepath.Abs(p)
					if err != nil {
						return nil, err
					}
					out = append(out, a)
				}
				return out, nil
			}
			mem, err := sandbox.ParseSize(memory)
			if err != nil {
				return exitWith(exitUsage, fmt.Errorf("--memory: %w", err))
			}
			spec := sandbox.Spec{
				Argv:    args,
				Env:     append([]string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/tmp"}, env...),
				Network: mode,
				Limits:  sandbox.Limits{NProc: nproc, NoFile: nofile, Memory: mem},
				Timeout: timeout,
				Stdin:   os.Stdin,
				Stdout:  os.Stdout,
				Stderr:  os.Stderr,
				Unsafe:  unsafe,
			}
			if spec.ReadOnly, err = abs(ro); err != nil {
				return exitWith(exitUsage, err)
			}
			if spec.ReadWrite, err = abs(rw); err != nil {
				return exitWith(exitUsage, err)
			}
			if spec.Deny, err = abs(deny); err != nil {
				return exitWith(exitUsage, err)
			}
			if dir != "" {
				if spec.Dir, err = filepath.Abs(dir); err != nil {
					return exitWith(exitUsage, err)
				}
			} else if wd, err := os.Getwd(); err == nil && insideAny(wd, append(spec.ReadOnly, spec.ReadWrite...)) {
				spec.Dir = wd
			}
			if unsafe {
				fmt.Fprintln(os.Stderr, "norma: WARNING: --unsafe-no-sandbox: running without any OS sandbox")
			}
			ctx, stop := context.WithCancel(cmd.Context())
			defer stop()
			res, err := sandbox.Run(ctx, spec)
			if err != nil {
				switch capability.ReasonOf(err) {
				case capability.ReasonSandboxExecFailed:
					if errors.Is(err, exec.ErrNotFound) || strings.Contains(errText(err), "not found") {
						return exitWith(exitNotFound, err)
					}
					return exitWith(exitCannotExec, err)
				default:
					return exitWith(exitSandboxFailed, err)
				}
			}
			if res.TimedOut {
				fmt.Fprintf(os.Stderr, "norma: sandbox: timed out after %v; process tree killed\n", timeout)
			}
			if res.MemoryExceeded {
				fmt.Fprintf(os.Stderr, "norma: sandbox: memory limit exceeded: %s; the kernel killed the process\n", res.Memory)
			}
			if res.Signal != 0 {
				return exitWith(128+int(res.Signal), nil)
			}
			if res.ExitCode != 0 {
				return exitWith(res.ExitCode, nil)
			}
			return nil
		},
	}
	f := c.Flags()
	f.StringArrayVar(&ro, "ro", nil, "grant PATH read-only (repeatable)")
	f.StringArrayVar(&rw, "rw", nil, "grant PATH read-write (repeatable)")
	f.StringArrayVar(&deny, "deny", nil, "hide PATH inside a granted one (repeatable)")
	f.StringArrayVar(&env, "env", nil, "set KEY=VALUE in the command's environment (repeatable)")
	f.StringVar(&netMode, "net", "none", "network mode: none")
	f.StringVar(&dir, "dir", "", "working directory inside the sandbox (default: the current directory when granted, else /tmp)")
	f.DurationVar(&timeout, "timeout", 0, "kill the process tree after this long (0: no timeout)")
	f.Uint64Var(&nproc, "nproc", 0, "maximum number of processes (0: inherited limit)")
	f.Uint64Var(&nofile, "nofile", 0, "maximum number of open files (0: inherited limit)")
	f.StringVar(&memory, "memory", sandbox.FormatSize(sandboxpolicy.DefaultMemory),
		"memory limit, such as 512M or 4G: the tree's resident memory with a memory cgroup, else each process's address space (RLIMIT_AS); 0: none")
	f.BoolVar(&unsafe, "unsafe-no-sandbox", false, "run WITHOUT the OS sandbox (recorded in the audit log by callers)")
	return c
}

func insideAny(p string, bases []string) bool {
	for _, b := range bases {
		if p == b || strings.HasPrefix(p, b+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

func newSandboxDoctorCmd() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "doctor [--json]",
		Short: "Report which sandbox layers this host supports and the guarantees that follow",
		Long: `Report user namespaces, the Landlock ABI, seccomp and cgroup delegation, run
a self-test (true inside a sandbox, with the default limits of plugins and
Bash) and the memory limit it had in force, and list the guarantees a
sandboxed run has on this host. Exit status 0 when runs will be sandboxed, 1 when a
required layer is missing (runs would be refused).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			report := struct {
				sandbox.Capabilities
				SelfTest string `json:"selfTest"`
				// MemoryLimit is the memory limit the self-test, run with
				// the default limits of plugins and Bash, had in force.
				MemoryLimit sandbox.MemoryLimit `json:"memoryLimit"`
			}{Capabilities: sandbox.Probe()}
			ctx, cancel := context.WithTimeout(cmd.Context(), 10*time.Second)
			defer cancel()
			if res, err := sandbox.Run(ctx, sandbox.Spec{Argv: []string{"true"}, Limits: sandboxpolicy.DefaultLimits}); err != nil {
				report.SelfTest = err.Error()
			} else if res.ExitCode != 0 {
				report.SelfTest = fmt.Sprintf("true exited %d inside the sandbox", res.ExitCode)
			} else {
				report.SelfTest = "ok"
				report.MemoryLimit = res.Memory
			}
			if report.SelfTest != "ok" && report.Ready {
				report.Ready = false
				report.Missing = append(report.Missing, "self-test failed: "+report.SelfTest)
			}
			if asJSON {
				if err := writeJSON(cmd.OutOrStdout(), report); err != nil {
					return exitWith(exitInternal, err)
				}
			} else {
				printDoctor(report.Capabilities, report.SelfTest, report.MemoryLimit)
			}
			if !report.Ready {
				return exitWith(exitFailed, nil)
			}
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print one JSON object")
	return c
}

func printDoctor(c sandbox.Capabilities, selfTest string, mem sandbox.MemoryLimit) {
	yes := func(b bool) string {
		if b {
			return "yes"
		}
		return "no"
	}
	w := os.Stdout
	fmt.Fprintf(w, "platform          %s/%s (root: %s)\n", c.OS, c.Arch, yes(c.Root))
	fmt.Fprintf(w, "user namespaces   %s (%s)\n", yes(c.UserNamespaces), c.UserNamespacesDetail)
	fmt.Fprintf(w, "landlock ABI      %d\n", c.LandlockABI)
	fmt.Fprintf(w, "seccomp           %s\n", yes(c.Seccomp))
	fmt.Fprintf(w, "cgroup v2         %s (delegated: %s; v1 pids: %s)\n", yes(c.CgroupV2), yes(c.CgroupDelegated), yes(c.CgroupPidsV1))
	fmt.Fprintf(w, "self-test         %s\n", selfTest)
	if selfTest == "ok" {
		fmt.Fprintf(w, "memory limit      %s; the default of plugins and Bash, in force in the self-test\n", mem)
	}
	status := "READY: runs are sandboxed"
	if !c.Ready {
		status = "NOT READY: sandboxed runs are refused (only --unsafe-no-sandbox would run)"
	}
	fmt.Fprintf(w, "\n%s\n", status)
	for _, g := range c.Guarantees {
		fmt.Fprintf(w, "  + %s\n", g)
	}
	for _, m := range c.Weaker {
		fmt.Fprintf(w, "  ~ %s\n", m)
	}
	for _, m := range c.Missing {
		fmt.Fprintf(w, "  - missing: %s\n", m)
	}
}
