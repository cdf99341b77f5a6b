package host

import (
	"context"
	"debug/elf"
	"fmt"
	"os"
	"path/filepath"
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
		if interp := missingInterpreter(spec.Argv[0]); interp != "" {
			err = fmt.Errorf("%w (its interpreter %s does not exist on this host)", err, interp)
		}
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

// sandboxSpec is the sandbox of one plugin process: the package directory
// and the broker CA read-only, the workspace paths the policy grants (see
// sandboxpolicy.Derive), an environment of defaults and broker settings,
// the broker as its only network, and the configured limits.
func (p *Plugin) sandboxSpec(ctx context.Context, brk *broker.Broker, ln *connListener) (sandbox.Spec, error) {
	cfg := p.h.cfg
	env := []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/tmp", "TMPDIR=/tmp", "LANG=C.UTF-8"}
	for _, e := range brk.Env() {
		k, _, _ := strings.Cut(e, "=")
		if strings.Contains(strings.ToLower(k), "proxy") {
			continue // the sandbox points the proxy variables at its own endpoint
		}
		env = append(env, e)
	}
	paths, err := sandboxpolicy.Derive(ctx, cfg.Workspace, p.set, p.h.prot, p.m.Permissions, p.grantPerms())
	if err != nil {
		return sandbox.Spec{}, err
	}
	spec := sandbox.Spec{
		Argv:      []string{filepath.Join(p.dir, filepath.FromSlash(p.m.Entrypoint))},
		Dir:       "/tmp",
		ReadOnly:  append([]string{p.dir, p.h.ca.CertPath()}, paths.ReadOnly...),
		ReadWrite: paths.ReadWrite,
		Deny:      paths.Deny,
		Pin:       paths.Pin,
		Env:       env,
		Network:   sandbox.NetBroker,
		Broker:    ln.serve,
		Limits:    cfg.Limits,
		Stderr:    p.stderr,
		Unsafe:    cfg.Unsafe,
	}
	// A plugin that may not spawn can execute its entrypoint and nothing else.
	if p.set.Decide(ctx, capability.Request{Kind: capability.ProcessSpawn, Argv: []string{"*"}}).Mode != capability.Allow {
		spec.ExecOnly = execOnly(spec.Argv[0])
	}
	return spec, nil
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

// Close stops the plugin's process tree and broker.
func (p *Plugin) Close() error {
	p.stop()
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

// execOnly lists what a no-spawn plugin may execute: its entrypoint, the
// interpreter of a "#!" script entrypoint, and the ELF interpreter of a
// dynamically linked program. (A dynamic loader can load any readable
// program; only static entrypoints get the strict guarantee.)
func execOnly(entry string) []string {
	out := []string{entry}
	if b, err := os.ReadFile(entry); err == nil && len(b) > 2 && string(b[:2]) == "#!" {
		line, _, _ := strings.Cut(string(b[2:min(len(b), 256)]), "\n")
		if f := strings.Fields(line); len(f) > 0 && filepath.IsAbs(f[0]) {
			if real, err := filepath.EvalSymlinks(f[0]); err == nil {
				out = append(out, real)
				out = append(out, elfInterp(real)...)
			}
		}
		return out
	}
	return append(out, elfInterp(entry)...)
}

// missingInterpreter returns the interpreter a "#!" script entrypoint
// names when it does not exist; "" otherwise.
func missingInterpreter(entry string) string {
	b := make([]byte, 256)
	f, err := os.Open(entry)
	if err != nil {
		return ""
	}
	n, _ := f.Read(b)
	f.Close()
	if n < 3 || string(b[:2]) != "#!" {
		return ""
	}
	line, _, _ := strings.Cut(string(b[2:n]), "\n")
	if fs := strings.Fields(line); len(fs) > 0 {
		if _, err := os.Stat(fs[0]); err != nil {
			return fs[0]
		}
	}
	return ""
}

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
