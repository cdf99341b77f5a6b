package shell

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/internal/ident"
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

// validSession: 1 to 64 letters, digits, '_' or '-'.
func validSession(id string) bool {
	return ident.Valid(id, 64, ident.AlNumOr("_-"), ident.AlNumOr("_-"))
}

// Config configures the shell tools of one session. How commands are
// confined is not configured here: every call runs its processes through
// the process capability of its Env (tool.Env.Exec), which the gate hands
// out and checks.
type Config struct {
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
}

// Manager owns the tasks and PTYs of one session. It is safe for
// concurrent use. Close stops everything it started.
type Manager struct {
	cfg   Config
	shell string // absolute path of bash (or sh)
	bash  bool

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
	if !validSession(cfg.SessionID) {
		return nil, bad("invalid session id (want ^[A-Za-z0-9_-]{1,64}$)")
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
	m := &Manager{cfg: cfg, tasks: map[string]*task{}, ptys: map[string]*ptySession{}}
	m.shell, m.bash = "/bin/sh", false
	if fi, err := os.Stat("/bin/bash"); err == nil && fi.Mode().IsRegular() {
		m.shell, m.bash = "/bin/bash", true
	}
	return m, nil
}

// SessionID returns the session the Manager belongs to.
func (m *Manager) SessionID() string { return m.cfg.SessionID }

// runner returns the process capability of the call: nil is a refusal
// (CAPABILITY_MISSING) and nothing runs.
func runner(env tool.Env) (tool.Runner, error) {
	if env.Exec == nil {
		return nil, fail(capability.ReasonCapabilityMissing, "this call has no process capability (the policy does not allow spawning, or the session gives none); nothing ran")
	}
	return env.Exec, nil
}

// startFail maps an error of the process capability to the shell's coded
// error; the command never ran. A refusal of the gate (a deny rule, the
// policy) and a failure of the sandbox (SANDBOX_*, layer sandbox) are
// *capability.Error already and keep their code; anything else is
// SHELL_SANDBOX_FAILED.
func startFail(err error) error {
	if _, ok := errors.AsType[*capability.Error](err); ok {
		return err
	}
	return &capability.Error{Decision: capability.Decision{Mode: capability.Deny, Reason: capability.ReasonShellSandbox, Layer: capability.LayerSandbox},
		Detail: "the command did not run: " + err.Error(), Err: err}
}

// shellArgv returns the argv running command non-interactively.
// Argv is the argv the Bash tool runs command with: for a door that runs
// a command in the same sandbox, the same way (norma hook exec).
func (m *Manager) Argv(command string) []string { return m.shellArgv(command) }

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
