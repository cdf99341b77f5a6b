package host

import (
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/norma-run/norma/audit"
	"github.com/norma-run/norma/broker"
	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/internal/termtext"
	"github.com/norma-run/norma/manifest"
	"github.com/norma-run/norma/sandbox"
	"github.com/norma-run/norma/sandbox/sandboxpolicy"
)

// ensureStarted starts the process when it is not running, unless the
// plugin is held or still backing off after a crash.
func (p *Plugin) ensureStarted(ctx context.Context) error {
	if err := p.isHeld(); err != nil {
		return err
	}
	// A call after a crash waits out the backoff (at most maxBackoff),
	// then starts a fresh process.
	p.mu.Lock()
	wait := time.Until(p.nextTry)
	p.mu.Unlock()
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return &capability.Error{Decision: capability.Decision{Mode: capability.Deny, Reason: ReasonPluginCrashed, Layer: "host"},
				Detail: fmt.Sprintf("restarting after a crash; retry in %s", time.Until(p.nextTryAt()).Round(time.Millisecond))}
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.session != nil {
		return nil
	}
	return p.startLocked(ctx)
}

func (p *Plugin) nextTryAt() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.nextTry
}

// startLocked starts the broker, the sandboxed process and the MCP session,
// then checks the served tools against the manifest and the pins.
func (p *Plugin) startLocked(ctx context.Context) error {
	cfg := p.h.cfg
	// The process outlives the call that started it: its context is the
	// host's, cancelled by stop.
	pctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	fail := func(err error) error {
		cancel()
		return &capability.Error{Decision: capability.Decision{Mode: capability.Deny, Reason: ReasonPluginStart, Layer: "host"}, Detail: cfg.Redactor.Redact(err.Error())}
	}
	ln := newConnListener()
	brk, err := p.newBroker(ctx, ln)
	if err != nil {
		return fail(err)
	}
	go brk.Serve(pctx)
	spec, err := p.sandboxSpec(ctx, brk, ln)
	if err != nil {
		brk.Close()
		return fail(err)
	}
	if cfg.Unsafe {
		cfg.Audit.Record(ctx, audit.Event{Type: audit.TypeSandboxDowngraded, RunID: cfg.RunID, Plugin: p.m.ID, PluginVersion: p.m.Version,
			Detail: map[string]string{"why": "--unsafe-no-sandbox"}})
	}
	p.stderr.reset() // the tail a failure shows is this process's
	proc, err := cfg.Runner.Start(pctx, spec)
	if err != nil {
		brk.Close()
		return fail(err)
	}
	cctx, ccancel := context.WithTimeout(ctx, 30*time.Second)
	defer ccancel()
	session, err := p.connect(cctx, proc)
	if err != nil {
		proc.Kill()
		proc.Wait()
		brk.Close()
		return fail(fmt.Errorf("connect: %w (stderr: %s)", err, lastLine(p.Stderr())))
	}
	p.session, p.proc, p.brk, p.cancel = session, proc, brk, cancel
	p.started++
	if err := p.checkToolsLocked(cctx); err != nil {
		p.mu.Unlock()
		p.stop()
		p.mu.Lock()
		return err
	}
	p.crashes = 0
	return nil
}

// sandboxSpec is the sandbox of one plugin process, installed or in
// development (LoadDev): the package directory and the broker CA
// read-only, the plugin's data directory read-write
// (data_dir: true), the workspace paths the policy grants (see
// sandboxpolicy.Derive), an environment of defaults, broker settings and
// the manifest's env, the broker as its only network, and the configured
// limits. The command line is the entrypoint (its interpreter resolved on
// the host, see EntryCommand) and the manifest's args, or a development
// plugin's CMD and ARGS (see [Plugin.command]).
func (p *Plugin) sandboxSpec(ctx context.Context, brk *broker.Broker, ln *connListener) (sandbox.Spec, error) {
	cfg := p.h.cfg
	env := []string{"PATH=" + SandboxPath, "HOME=/tmp", "TMPDIR=/tmp", "LANG=C.UTF-8"}
	for _, e := range brk.Env() {
		k, _, _ := strings.Cut(e, "=")
		if strings.Contains(strings.ToLower(k), "proxy") {
			continue // the sandbox points the proxy variables at its own endpoint
		}
		env = append(env, e)
	}
	paths, err := sandboxpolicy.Derive(ctx, cfg.Workspace, p.set, p.h.prot, p.m.Permissions, p.grantPerms(), sandboxpolicy.RootCandidate)
	if err != nil {
		return sandbox.Spec{}, err
	}
	rw := paths.ReadWrite
	vars, err := p.launchVars(brk)
	if err != nil {
		return sandbox.Spec{}, err
	}
	if vars.Data != "" {
		rw = append(rw, vars.Data)
	}
	deny, err := p.h.denyState(paths.Deny)
	if err != nil {
		return sandbox.Spec{}, err
	}
	cmd, args, err := p.command()
	if err != nil {
		return sandbox.Spec{}, err
	}
	argv := cmd.Argv
	for i, a := range args {
		x, err := manifest.Expand(a, vars)
		if err != nil {
			return sandbox.Spec{}, fmt.Errorf("args[%d]: %w", i, err)
		}
		argv = append(argv, x)
	}
	for _, k := range slices.Sorted(maps.Keys(p.m.Env)) {
		x, err := manifest.Expand(p.m.Env[k], vars)
		if err != nil {
			return sandbox.Spec{}, fmt.Errorf("env %s: %w", k, err)
		}
		env = setEnv(env, k, x)
	}
	spec := sandbox.Spec{
		Argv:      argv,
		Dir:       p.workDir(),
		ReadOnly:  append([]string{p.dir, p.h.ca.CertPath()}, paths.ReadOnly...),
		ReadWrite: rw,
		Deny:      deny,
		Pin:       paths.Pin,
		Freeze:    paths.Freeze,
		Env:       env,
		Network:   sandbox.NetBroker,
		Broker:    ln.serve,
		Limits:    cfg.Limits,
		Stderr:    p.stderr,
		Unsafe:    cfg.Unsafe,
	}
	// A plugin that may not spawn can execute its entrypoint (and its
	// interpreter) and nothing else.
	if p.set.Decide(ctx, capability.Request{Kind: capability.ProcessSpawn, Argv: []string{"*"}}).Mode != capability.Allow {
		spec.ExecOnly = cmd.Exec
	}
	return spec, nil
}

// denyState adds the state directory to deny: the plugin's binds inside it
// (its package, its data directory, the broker CA) show through, and
// nothing else of it, not even the names of the directories on the way
// (plugins/, the plugin's id), which the sandbox would otherwise create
// listable to hold those binds.
func (h *Host) denyState(deny []string) ([]string, error) {
	if h.cfg.Home == "" {
		return deny, nil
	}
	home, err := filepath.Abs(h.cfg.Home)
	if err != nil {
		return nil, err
	}
	return append(slices.Clone(deny), home), nil
}

// launchVars are the values of the manifest's args and env templates: the
// package directory, the workspace, the data directory (created 0700 on
// first start; see plugin.Manager.DataDir) and, for a secret, the
// placeholder brk issued — never a value. A secret the broker holds no
// placeholder for (not granted) fails the start.
func (p *Plugin) launchVars(brk *broker.Broker) (manifest.Vars, error) {
	ws, err := filepath.Abs(p.h.cfg.Workspace)
	if err != nil {
		return manifest.Vars{}, err
	}
	v := manifest.Vars{Package: p.dir, Workspace: ws, Secret: func(name string) (string, error) {
		ph, ok := brk.Placeholder(name)
		if !ok {
			return "", fmt.Errorf("${secret:%s}: the secret %s is not granted to this plugin, so it has no placeholder", name, name)
		}
		return ph.String(), nil
	}}
	if p.m.DataDir {
		if v.Data, err = p.dataDir(); err != nil {
			return manifest.Vars{}, fmt.Errorf("data directory: %w", err)
		}
		if err := os.Mkdir(v.Data, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return manifest.Vars{}, fmt.Errorf("data directory: %w", err)
		}
		if fi, err := os.Lstat(v.Data); err != nil || !fi.IsDir() {
			return manifest.Vars{}, fmt.Errorf("data directory %s is not a directory", v.Data)
		}
	}
	return v, nil
}

// setEnv sets k=v in env, replacing an earlier entry of k (a default such
// as LANG).
func setEnv(env []string, k, v string) []string {
	env = slices.DeleteFunc(env, func(e string) bool { return strings.HasPrefix(e, k+"=") })
	return append(env, k+"="+v)
}

func (p *Plugin) grantPerms() manifest.Permissions {
	if p.grant == nil {
		return manifest.Permissions{}
	}
	return p.grant.Permissions
}

// maxBackoff bounds the wait before a restart after consecutive crashes.
const maxBackoff = 6400 * time.Millisecond

// Stderr tail of a crash: at most stderrLines lines, each cut to
// stderrWidth bytes.
const (
	stderrLines = 5
	stderrWidth = 240
)

// crashed handles a process that failed a call (it exited, broke the
// protocol, flooded): it stops the process tree, backs off the next start
// (200ms doubling per consecutive crash, at most maxBackoff), and audits
// the crash with the last lines of its stderr, which it returns with the
// backoff.
func (p *Plugin) crashed(ctx context.Context, tool string, cause error) (tail []string, backoff time.Duration) {
	p.mu.Lock()
	p.crashes++
	backoff = min(time.Duration(1<<min(p.crashes, 6))*100*time.Millisecond, maxBackoff)
	p.nextTry = time.Now().Add(backoff)
	p.mu.Unlock()
	p.stop() // waits for the tree: its stderr is complete
	tail = p.stderrTail()
	p.h.cfg.Audit.Record(context.WithoutCancel(ctx), audit.Event{Type: audit.TypeToolCallFinished, RunID: p.h.cfg.RunID,
		Plugin: p.m.ID, PluginVersion: p.m.Version, Tool: ToolName(p.server, tool), IsError: true, Reason: string(ReasonPluginCrashed),
		Detail: map[string]string{"cause": p.h.cfg.Redactor.Redact(cause.Error()), "stderr": strings.Join(tail, "\n"),
			"restart_after": backoff.String()}})
	return tail, backoff
}

// crashError is the error of a call the process crashed in: the cause,
// the backoff and the last lines of its stderr (redacted, escaped).
func (p *Plugin) crashError(ctx context.Context, tool string, cause error) error {
	tail, backoff := p.crashed(ctx, tool, cause)
	detail := fmt.Sprintf("the plugin process failed during the call (%s); a fresh process starts at the next call, after %s",
		p.h.cfg.Redactor.Redact(cause.Error()), backoff)
	if len(tail) > 0 {
		detail += "\nits last stderr lines:\n  " + strings.Join(tail, "\n  ")
	} else {
		detail += "; its stderr was empty"
	}
	return &capability.Error{Decision: capability.Decision{Mode: capability.Deny, Reason: ReasonPluginCrashed, Layer: "host"}, Detail: detail}
}

// callEnded handles a call whose context ended before the server
// answered: its own deadline (TIMEOUT) or the caller giving up (CANCELED).
// The server may still be working on it, so its process tree is killed;
// it did not crash, so the next call starts a fresh process without a
// backoff. Audited with the tool and the timeout.
func (p *Plugin) callEnded(ctx context.Context, tool string, timeout time.Duration) error {
	reason, detail := capability.ReasonTimeout, fmt.Sprintf("no answer within %s (settings: plugins.toolTimeouts, plugins.callTimeout); the process tree was killed, a fresh one starts at the next call",
		timeout)
	if ctx.Err() != nil {
		reason, detail = capability.ReasonCanceled, "the call was canceled; the plugin's process tree was killed and a fresh one starts at the next call"
	}
	p.stop()
	p.h.cfg.Audit.Record(context.WithoutCancel(ctx), audit.Event{Type: audit.TypeToolCallFinished, RunID: p.h.cfg.RunID,
		Plugin: p.m.ID, PluginVersion: p.m.Version, Tool: ToolName(p.server, tool), IsError: true, Reason: string(reason),
		Detail: map[string]string{"timeout": timeout.String(), "stderr": strings.Join(p.stderrTail(), "\n")}})
	return &capability.Error{Decision: capability.Decision{Mode: capability.Deny, Reason: reason, Layer: "host"}, Detail: detail}
}

// stderrTail is the last lines of the current (or last) process's stderr:
// redacted, each cut and escaped for a terminal (internal/termtext).
func (p *Plugin) stderrTail() []string {
	lines := strings.Split(strings.TrimSpace(p.Stderr()), "\n")
	var out []string
	for _, l := range lines[max(0, len(lines)-stderrLines):] {
		if l = strings.TrimSpace(l); l == "" {
			continue
		}
		if len(l) > stderrWidth {
			n := stderrWidth
			for n > 0 && !utf8.RuneStart(l[n]) {
				n--
			}
			l = l[:n] + "…"
		}
		out = append(out, termtext.Escape(l))
	}
	return out
}

// Close stops the plugin's process tree and broker (and removes a
// development plugin's temporary data directory).
func (p *Plugin) Close() error {
	p.stop()
	p.closeDev()
	return nil
}

func (p *Plugin) stop() {
	p.mu.Lock()
	session, proc, brk, cancel := p.session, p.proc, p.brk, p.cancel
	p.session, p.proc, p.brk, p.cancel = nil, nil, nil, nil
	p.mu.Unlock()
	if proc != nil {
		proc.Kill()
	}
	if session != nil {
		session.Close()
	}
	if proc != nil {
		proc.Wait()
	}
	if brk != nil {
		brk.Close()
	}
	if cancel != nil {
		cancel()
	}
}

// elfInterp returns the ELF interpreter of a dynamically linked program
// (none for a static one). It can load any readable program: only static
// entrypoints get the strict no-spawn guarantee.
func elfInterp(prog string) []string {
	f, err := elf.Open(prog)
	if err != nil {
		return nil
	}
	defer f.Close()
	for _, ph := range f.Progs {
		if ph.Type == elf.PT_INTERP {
			b := make([]byte, ph.Filesz)
			if _, err := ph.ReadAt(b, 0); err == nil {
				return []string{strings.TrimRight(string(b), "\x00")}
			}
		}
	}
	return nil
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// ringBuffer keeps the last n bytes written (plugin stderr).
type ringBuffer struct {
	mu  sync.Mutex
	buf []byte
	n   int
}

func newRing(n int) *ringBuffer { return &ringBuffer{n: n} }

func (r *ringBuffer) Write(b []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.buf = append(r.buf, b...)
	if len(r.buf) > r.n {
		r.buf = append(r.buf[:0], r.buf[len(r.buf)-r.n:]...)
	}
	return len(b), nil
}

// reset empties the buffer (a new process starts writing).
func (r *ringBuffer) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.buf = r.buf[:0]
}

func (r *ringBuffer) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return string(r.buf)
}
