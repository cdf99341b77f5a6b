package shell

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/manifest"
	"github.com/norma-run/norma/policy"
	"github.com/norma-run/norma/sandbox"
	"github.com/norma-run/norma/sandbox/sandboxpolicy"
	"github.com/norma-run/norma/tool"
)

// Defaults and bounds.
const (
	// DefaultTimeout is the foreground timeout of a Bash call when neither
	// the input nor the Config gives one.
	DefaultTimeout = 2 * time.Minute
	// DefaultMaxTimeout bounds timeout_ms when the Config gives no bound.
	DefaultMaxTimeout = 10 * time.Minute
	// MaxRunningTasks bounds the background tasks running at once in a
	// session; MaxRetainedTasks bounds the tasks kept for TaskList
	// (finished ones are evicted oldest first).
	MaxRunningTasks  = 16
	MaxRetainedTasks = 64
	// MaxPTYs bounds the PTYs open at once in a session.
	MaxPTYs = 8
	// RingSize is the output kept per task and per PTY, in bytes; older
	// output is dropped and reported as dropped.
	RingSize = 1 << 20
	// MaxRead bounds the output one TaskOutput or PtyRead call returns.
	MaxRead = 30_000
	// outputHead and outputTail bound the output of a foreground Bash call.
	outputHead = 15_000
	outputTail = 15_000
)

var sessionRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// refusedEnv are environment names a shell reads as code or that change
// which code runs: they would run something the gate never saw.
var refusedEnv = []string{"BASH_ENV", "ENV", "SHELLOPTS", "BASHOPTS", "PROMPT_COMMAND",
	"PS0", "PS4", "IFS", "CDPATH", "GLOBIGNORE", "LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT",
	"INPUTRC", "HISTFILE", "HISTCONTROL", "PROMPT_DIRTRIM", "PS1", "PS2", "PS3"}

// Config configures the shell tools of one session.
type Config struct {
	// Workspace is the absolute host path of the workspace. Required.
	Workspace string
	// Policy is the effective policy of the run (the built-in tools'
	// Set). Required: the sandbox grants exactly what it allows.
	Policy *policy.Set
	// Layers are the permissions of the policy layers (manifest, grant,
	// workspace, run) whose file globs propose directories to grant besides
	// the workspace root (docs/** proposes docs); Policy decides which of
	// them are granted. Nil proposes the workspace root only.
	Layers []manifest.Permissions
	// Env is the complete environment, KEY=VALUE; nothing is inherited.
	// PATH, HOME and TMPDIR get defaults when absent. Names a shell
	// interprets as code (BASH_ENV, ENV, PROMPT_COMMAND, BASH_FUNC_*, …)
	// and loader variables (LD_*) are refused.
	Env []string
	// Network is the sandbox network mode; NetBroker needs Broker.
	Network sandbox.NetworkMode
	Broker  sandbox.BrokerFunc
	// Limits are the resource limits of every command's tree.
	Limits sandbox.Limits
	// DefaultTimeout and MaxTimeout bound foreground commands; zero means
	// DefaultTimeout and DefaultMaxTimeout.
	DefaultTimeout, MaxTimeout time.Duration
	// SessionID is the host's session id (^[A-Za-z0-9_-]{1,64}$); tasks
	// and PTYs belong to it.
	SessionID string
	// AllowDetached lets running background tasks survive Manager.Close
	// (they still die at their timeout and with the host process). PTYs
	// never survive it.
	AllowDetached bool
	// Runner starts sandboxed processes; the zero Runner re-executes the
	// current binary as the sandbox init.
	Runner sandbox.Runner
}

// Manager owns the tasks and PTYs of one session. It is safe for
// concurrent use. Close stops everything it started.
type Manager struct {
	cfg   Config
	shell string // absolute path of bash (or sh)
	bash  bool
	env   []string

	mu      sync.Mutex
	closed  bool
	seq     uint64
	tasks   map[string]*task
	order   []string // task ids, oldest first
	ptys    map[string]*ptySession
	ptySeq  uint64
	waiters sync.WaitGroup
}

// fail returns the error a handler reports: a *capability.Error whose
// reason code the gate carries into the result.
func fail(code capability.Reason, format string, args ...any) error {
	return &capability.Error{Decision: capability.Decision{Mode: capability.Deny, Reason: code, Layer: "shell"},
		Detail: fmt.Sprintf(format, args...)}
}

// Tools validates cfg and returns the session's Manager and its tools:
// Bash, TaskList, TaskOutput, TaskStop, Monitor, PtyOpen, PtySend, PtyRead,
// PtyResize and PtyClose. Errors are *capability.Error with code
// SHELL_CONFIG_INVALID.
func Tools(cfg Config) (*Manager, []tool.CoreTool, error) {
	m, err := newManager(cfg)
	if err != nil {
		return nil, nil, err
	}
	specs := append(m.bashSpecs(), m.ptySpecs()...)
	tools := make([]tool.CoreTool, 0, len(specs))
	for _, s := range specs {
		t, err := tool.Build(s)
		if err != nil {
			return nil, nil, fail(capability.ReasonShellConfigInvalid, "%v", err)
		}
		tools = append(tools, t)
	}
	return m, tools, nil
}

func newManager(cfg Config) (*Manager, error) {
	bad := func(format string, args ...any) error {
		return fail(capability.ReasonShellConfigInvalid, "shell: "+format, args...)
	}
	if !sessionRE.MatchString(cfg.SessionID) {
		return nil, bad("invalid session id (want ^[A-Za-z0-9_-]{1,64}$)")
	}
	if cfg.Policy == nil {
		return nil, bad("a policy is required")
	}
	if !filepath.IsAbs(cfg.Workspace) {
		return nil, bad("workspace %q is not absolute", cfg.Workspace)
	}
	ws, err := filepath.EvalSymlinks(cfg.Workspace)
	if err != nil {
		return nil, bad("workspace: %v", err)
	}
	if fi, err := os.Stat(ws); err != nil || !fi.IsDir() {
		return nil, bad("workspace %q is not a directory", cfg.Workspace)
	}
	cfg.Workspace = ws
	switch cfg.Network {
	case sandbox.NetNone:
		if cfg.Broker != nil {
			return nil, bad("a broker needs network mode broker")
		}
	case sandbox.NetBroker:
		if cfg.Broker == nil {
			return nil, bad("network mode broker needs a broker")
		}
	default:
		return nil, bad("unknown network mode %v", cfg.Network)
	}
	if cfg.DefaultTimeout < 0 || cfg.MaxTimeout < 0 {
		return nil, bad("negative timeout")
	}
	if cfg.MaxTimeout == 0 {
		cfg.MaxTimeout = DefaultMaxTimeout
	}
	if cfg.DefaultTimeout == 0 {
		cfg.DefaultTimeout = min(DefaultTimeout, cfg.MaxTimeout)
	}
	if cfg.DefaultTimeout > cfg.MaxTimeout {
		return nil, bad("default timeout %v exceeds the maximum %v", cfg.DefaultTimeout, cfg.MaxTimeout)
	}
	env, err := buildEnv(cfg.Env)
	if err != nil {
		return nil, bad("%v", err)
	}
	m := &Manager{cfg: cfg, env: env, tasks: map[string]*task{}, ptys: map[string]*ptySession{}}
	m.shell, m.bash = "/bin/sh", false
	if fi, err := os.Stat("/bin/bash"); err == nil && fi.Mode().IsRegular() {
		m.shell, m.bash = "/bin/bash", true
	}
	return m, nil
}

// buildEnv validates the allow-list and adds PATH, HOME and TMPDIR
// defaults.
func buildEnv(in []string) ([]string, error) {
	out := make([]string, 0, len(in)+3)
	seen := map[string]bool{}
	for _, kv := range in {
		k, _, ok := strings.Cut(kv, "=")
		if !ok || k == "" || strings.ContainsAny(kv, "\x00") || strings.ContainsAny(k, " \t\n") {
			return nil, fmt.Errorf("malformed environment entry (want KEY=VALUE)")
		}
		if slices.Contains(refusedEnv, k) || strings.HasPrefix(k, "BASH_FUNC_") || strings.HasPrefix(k, "LD_") {
			return nil, fmt.Errorf("environment variable %s is refused: the shell would run code the gate never checked", k)
		}
		if seen[k] {
			return nil, fmt.Errorf("environment variable %s given twice", k)
		}
		seen[k] = true
		out = append(out, kv)
	}
	for _, d := range []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/tmp", "TMPDIR=/tmp"} {
		k, _, _ := strings.Cut(d, "=")
		if !seen[k] {
			out = append(out, d)
		}
	}
	return out, nil
}

// SessionID returns the session the Manager belongs to.
func (m *Manager) SessionID() string { return m.cfg.SessionID }

// spec builds the sandbox Spec of one command from the effective file
// capabilities, computed now (a file created since the last command is
// judged too). The workspace root and the literal directories of the
// layers' globs are the candidates; the policy decides which are granted,
// and every entry it does not allow underneath them is hidden.
func (m *Manager) spec(ctx context.Context, argv []string) (sandbox.Spec, error) {
	// The workspace root is always a candidate, for reading and writing;
	// the policy decides (workspace://** allows it, workspace://src/** does
	// not, and then the layers' literal directories such as src are the
	// candidates).
	root := manifest.Permissions{Filesystem: &manifest.Filesystem{
		Read:  []string{manifest.WorkspaceScheme + "."},
		Write: []string{manifest.WorkspaceScheme + "."},
	}}
	layers := append(slices.Clone(m.cfg.Layers), root)
	p, err := sandboxpolicy.Derive(ctx, m.cfg.Workspace, m.cfg.Policy, layers...)
	if err != nil {
		return sandbox.Spec{}, fail(capability.ReasonShellSandbox, "deriving the sandbox's view of the workspace: %v", err)
	}
	dir := "/tmp"
	for _, g := range slices.Concat(p.ReadWrite, p.ReadOnly) {
		if g == m.cfg.Workspace {
			dir = m.cfg.Workspace
		}
	}
	s := sandbox.Spec{
		Argv:      argv,
		Dir:       dir,
		ReadOnly:  p.ReadOnly,
		ReadWrite: p.ReadWrite,
		Deny:      p.Deny,
		Env:       slices.Clone(m.env),
		Network:   m.cfg.Network,
		Broker:    m.cfg.Broker,
		Limits:    m.cfg.Limits,
	}
	return s, nil
}

// shellArgv returns the argv running command non-interactively.
func (m *Manager) shellArgv(command string) []string {
	return []string{m.shell, "-c", command}
}

func (m *Manager) checkOpen() error {
	if m.closed {
		return fail(capability.ReasonShellClosed, "the session's shell was closed")
	}
	return nil
}

// Close stops every PTY and every task of the session (running tasks are
// left alone only when AllowDetached is set) and waits until they are gone.
// It is idempotent.
func (m *Manager) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	tasks := make([]*task, 0, len(m.tasks))
	for _, t := range m.tasks {
		tasks = append(tasks, t)
	}
	ptys := make([]*ptySession, 0, len(m.ptys))
	for _, p := range m.ptys {
		ptys = append(ptys, p)
	}
	m.mu.Unlock()
	var errs []error
	for _, p := range ptys {
		errs = append(errs, p.close())
	}
	if !m.cfg.AllowDetached {
		for _, t := range tasks {
			t.stop()
		}
		m.waiters.Wait()
	}
	return errors.Join(errs...)
}
