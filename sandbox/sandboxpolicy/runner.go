package sandboxpolicy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/internal/codeenv"
	"github.com/norma-run/norma/manifest"
	"github.com/norma-run/norma/policy"
	"github.com/norma-run/norma/sandbox"
	"github.com/norma-run/norma/tool"
)

// defaultEnv are the entries a Runner's environment gets when it does not
// name them.
var defaultEnv = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/tmp", "TMPDIR=/tmp"}

// RunnerConfig configures a [Runner]: the process capability of the
// built-in tools.
type RunnerConfig struct {
	// Workspace is the absolute host path of the workspace. Required.
	Workspace string
	// Policy is the built-in tools' compiled policy, the one value that
	// decides their calls at the gate. Required: every process sees exactly
	// the files it allows.
	Policy *policy.Set
	// Layers are the permissions of the policy's layers (manifest, grant,
	// workspace, run) whose file globs propose directories to grant besides
	// the workspace root (docs/** proposes docs); Policy decides which of
	// them are granted. Nil proposes the workspace root only.
	Layers []manifest.Permissions
	// Protected are directories every process is kept out of by identity
	// as well as by the policy's deny rules (Norma's state and user
	// settings directories; see [Derive]); their identities are recorded
	// by NewRunner.
	Protected []string
	// Env is the complete environment, KEY=VALUE; nothing is inherited.
	// PATH, HOME and TMPDIR get defaults when absent. Names a shell
	// interprets as code (BASH_ENV, ENV, PROMPT_COMMAND, PS1, BASH_FUNC_*,
	// …) and loader variables (LD_*) are refused.
	Env []string
	// Network is the sandbox network mode; NetBroker needs Broker.
	Network sandbox.NetworkMode
	Broker  sandbox.BrokerFunc
	// Limits are the resource limits of every process tree; the zero
	// value means [DefaultLimits] (what `norma run` gives), so that no
	// configuration runs processes without a memory or process bound.
	Limits sandbox.Limits
	// Sandbox starts the confined processes; the zero value re-executes
	// the current binary as the sandbox init.
	Sandbox sandbox.Runner
}

// Runner implements [tool.Runner] over the OS sandbox. For every command it
// derives the sandbox from the policy at that moment ([Derive] with the
// workspace root and the layers' literal directories as candidates, so a
// file created since the last command is judged too): the granted
// directories are bound read-only or read-write and every entry under them
// the policy does not allow is hidden. The working directory is the
// workspace when the policy grants it (else /tmp), the environment is the
// configured one, the network and the limits are the configured ones.
//
// A Runner decides nothing about whether a process may start: that is the
// gate's check (tool.Env.Exec is the gate's wrapper around it), so hand a
// Runner to tools through the gate only. It is safe for concurrent use.
// Errors are *capability.Error values (layer sandbox, see
// [sandbox.NewError]); on error nothing ran.
type Runner struct {
	cfg  RunnerConfig
	ws   string
	env  []string
	prot Protected
}

var _ tool.Runner = (*Runner)(nil)

func configErr(format string, args ...any) error {
	return sandbox.NewError(capability.ReasonSandboxSpecInvalid, "runner", "", fmt.Sprintf(format, args...), nil)
}

// NewRunner validates cfg and returns its Runner. Errors are
// *capability.Error with code SANDBOX_SPEC_INVALID.
func NewRunner(cfg RunnerConfig) (*Runner, error) {
	if cfg.Policy == nil {
		return nil, configErr("a policy is required")
	}
	if !filepath.IsAbs(cfg.Workspace) {
		return nil, configErr("workspace %q is not absolute", cfg.Workspace)
	}
	ws, err := filepath.EvalSymlinks(cfg.Workspace)
	if err != nil {
		return nil, sandbox.NewError(capability.ReasonSandboxSpecInvalid, "runner", "", fmt.Sprintf("workspace %q does not resolve", cfg.Workspace), err)
	}
	if fi, err := os.Stat(ws); err != nil || !fi.IsDir() {
		return nil, configErr("workspace %q is not a directory", cfg.Workspace)
	}
	switch cfg.Network {
	case sandbox.NetNone:
		if cfg.Broker != nil {
			return nil, configErr("a broker needs network mode broker")
		}
	case sandbox.NetBroker:
		if cfg.Broker == nil {
			return nil, configErr("network mode broker needs a broker")
		}
	default:
		return nil, configErr("unknown network mode %v", cfg.Network)
	}
	if err := checkEnv(cfg.Env, false); err != nil {
		return nil, configErr("%v", err)
	}
	cfg.Layers = slices.Clone(cfg.Layers)
	if cfg.Limits == (sandbox.Limits{}) {
		cfg.Limits = DefaultLimits
	}
	prot, err := Protect(cfg.Protected...)
	if err != nil {
		return nil, configErr("protected directory: %v", err)
	}
	return &Runner{cfg: cfg, ws: ws, env: setEnv(cfg.Env, defaultEnv, true), prot: prot}, nil
}

// checkEnv validates environment entries: KEY=VALUE, each name once, no
// refused name. With prompts, PS1 and PS2 are admitted when their value is
// [literal], so an interactive shell only prints it.
func checkEnv(entries []string, prompts bool) error {
	seen := map[string]bool{}
	for _, kv := range entries {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" || strings.ContainsRune(kv, 0) || strings.ContainsAny(k, " \t\n") {
			return errors.New("malformed environment entry (want KEY=VALUE)")
		}
		literalPrompt := prompts && (k == "PS1" || k == "PS2") && literal(v)
		// Names a shell reads as code and loader variables would run
		// something the gate never saw (the one list: internal/codeenv;
		// the settings files refuse its search variables too).
		if !literalPrompt && codeenv.Of(k) == codeenv.Shell {
			return fmt.Errorf("environment variable %s is refused: a program would run code the gate never checked", k)
		}
		if seen[k] {
			return fmt.Errorf("environment variable %s given twice", k)
		}
		seen[k] = true
	}
	return nil
}

// literal reports whether a prompt prints as itself: no backquote, no
// backslash, and every $ followed by a space or at the end (nothing to
// expand).
func literal(v string) bool {
	if strings.ContainsAny(v, "`\\") {
		return false
	}
	for i := range len(v) {
		if v[i] == '$' && i+1 < len(v) && v[i+1] != ' ' {
			return false
		}
	}
	return true
}

// setEnv returns base with every entry of add set, replacing the entry of
// the same name, or, with keep, only where base has none.
func setEnv(base, add []string, keep bool) []string {
	out := slices.Clone(base)
	for _, kv := range add {
		k, _, _ := strings.Cut(kv, "=")
		i := slices.IndexFunc(out, func(e string) bool { return strings.HasPrefix(e, k+"=") })
		switch {
		case i < 0:
			out = append(out, kv)
		case !keep:
			out[i] = kv
		}
	}
	return out
}

// Run runs cmd in the sandbox to completion. Output without a writer is
// collected, at most tool.MaxCollect bytes per stream.
func (r *Runner) Run(ctx context.Context, cmd tool.Command) (tool.CommandResult, error) {
	s, err := r.spec(ctx, cmd)
	if err != nil {
		return tool.CommandResult{}, err
	}
	var stdout, stderr *capped
	if cmd.Stdout == nil {
		stdout = &capped{}
		s.Stdout = stdout
	}
	if cmd.Stderr == nil {
		stderr = &capped{}
		s.Stderr = stderr
	}
	sw := newSweep(r.ws)
	res, err := r.cfg.Sandbox.Run(ctx, s)
	if err != nil {
		return tool.CommandResult{}, err
	}
	sw.run(s.Stderr)
	out := result(res)
	if stdout != nil {
		out.Stdout = stdout.b
	}
	if stderr != nil {
		out.Stderr = stderr.b
	}
	return out, nil
}

// Start starts cmd in the sandbox. Missing streams are the null device.
func (r *Runner) Start(ctx context.Context, cmd tool.Command) (tool.Process, error) {
	s, err := r.spec(ctx, cmd)
	if err != nil {
		return nil, err
	}
	if s.Stdin == nil || s.Stdout == nil || s.Stderr == nil {
		null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
		if err != nil {
			return nil, sandbox.NewError(capability.ReasonSandboxSetupFailed, "stdio", os.DevNull, "", err)
		}
		defer null.Close() // the process holds its own copy
		if s.Stdin == nil {
			s.Stdin = null
		}
		if s.Stdout == nil {
			s.Stdout = null
		}
		if s.Stderr == nil {
			s.Stderr = null
		}
	}
	sw := newSweep(r.ws)
	p, err := r.cfg.Sandbox.Start(ctx, s)
	if err != nil {
		return nil, err
	}
	return process{p: p, sweep: sw, stderr: cmd.Stderr, once: new(sync.Once)}, nil
}

// RootCandidate, passed to Derive as one more layer, makes the workspace
// root a candidate for reading and writing; the policy decides
// (workspace://** allows it, workspace://src/** does not, and then the
// layers' literal directories such as src are the candidates). The shell
// and the plugin host both pass it.
var RootCandidate = manifest.Permissions{Filesystem: &manifest.Filesystem{
	Read:  []string{manifest.WorkspaceScheme + "."},
	Write: []string{manifest.WorkspaceScheme + "."},
}}

// spec builds the sandbox Spec of one command from the effective file
// capabilities, computed now. The workspace root and the literal
// directories of the layers' globs are the candidates; the policy decides
// which are granted, and every entry it does not allow underneath them is
// hidden.
func (r *Runner) spec(ctx context.Context, cmd tool.Command) (sandbox.Spec, error) {
	if len(cmd.Argv) == 0 || cmd.Argv[0] == "" {
		return sandbox.Spec{}, sandbox.NewError(capability.ReasonSandboxSpecInvalid, "argv", "", "empty command", nil)
	}
	if err := checkEnv(cmd.Env, true); err != nil {
		return sandbox.Spec{}, sandbox.NewError(capability.ReasonSandboxSpecInvalid, "env", "", err.Error(), nil)
	}
	if cmd.Timeout < 0 {
		return sandbox.Spec{}, sandbox.NewError(capability.ReasonSandboxSpecInvalid, "timeout", "", fmt.Sprintf("negative timeout %v", cmd.Timeout), nil)
	}
	p, err := Derive(ctx, r.ws, r.cfg.Policy, r.prot, append(slices.Clone(r.cfg.Layers), RootCandidate)...)
	if err != nil {
		return sandbox.Spec{}, sandbox.NewError(capability.ReasonSandboxSetupFailed, "derive", "",
			"deriving the sandbox's view of the workspace", err)
	}
	dir, err := r.dir(ctx, cmd.Dir, p)
	if err != nil {
		return sandbox.Spec{}, err
	}
	return sandbox.Spec{
		Argv:      slices.Clone(cmd.Argv),
		Dir:       dir,
		ReadOnly:  p.ReadOnly,
		ReadWrite: p.ReadWrite,
		Deny:      p.Deny,
		Pin:       p.Pin,
		Freeze:    p.Freeze,
		Env:       setEnv(r.env, cmd.Env, false),
		Network:   r.cfg.Network,
		Broker:    r.cfg.Broker,
		Limits:    r.cfg.Limits,
		Timeout:   cmd.Timeout,
		Stdin:     cmd.Stdin,
		Stdout:    cmd.Stdout,
		Stderr:    cmd.Stderr,
	}, nil
}

// dir is the working directory of a command: "" is the workspace when it
// is granted, else /tmp; a workspace-relative name must be local and
// readable by the policy (the sandbox then checks it is inside a bind).
func (r *Runner) dir(ctx context.Context, rel string, p Paths) (string, error) {
	if rel == "" {
		if slices.Contains(p.ReadWrite, r.ws) || slices.Contains(p.ReadOnly, r.ws) {
			return r.ws, nil
		}
		return "/tmp", nil
	}
	clean := filepath.ToSlash(filepath.Clean(filepath.FromSlash(rel)))
	if !filepath.IsLocal(filepath.FromSlash(rel)) ||
		r.cfg.Policy.Decide(ctx, capability.Request{Kind: capability.FSRead, Path: clean}).Mode != capability.Allow {
		return "", sandbox.NewError(capability.ReasonSandboxSpecInvalid, "dir", rel,
			"the working directory is not a workspace directory the policy lets the process read", nil)
	}
	return filepath.Join(r.ws, filepath.FromSlash(clean)), nil
}

func result(r sandbox.Result) tool.CommandResult {
	return tool.CommandResult{ExitCode: r.ExitCode, Signal: int(r.Signal), TimedOut: r.TimedOut, MemoryExceeded: r.MemoryExceeded}
}

// process adapts a *sandbox.Process to tool.Process; Wait sweeps what
// the tree must not leave behind once it has ended (see sweep).
type process struct {
	p      *sandbox.Process
	sweep  sweep
	stderr io.Writer
	once   *sync.Once
}

func (p process) Wait() (tool.CommandResult, error) {
	r, err := p.p.Wait()
	p.sweepOnce()
	return result(r), err
}

func (p process) sweepOnce() { p.once.Do(func() { p.sweep.run(p.stderr) }) }

func (p process) Kill() error { return p.p.Kill() }

func (p process) Pid() int { return p.p.Pid() }

// capped collects at most tool.MaxCollect bytes and drops the rest.
type capped struct{ b []byte }

func (c *capped) Write(p []byte) (int, error) {
	if room := tool.MaxCollect - len(c.b); room > 0 {
		c.b = append(c.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

var _ io.Writer = (*capped)(nil)
