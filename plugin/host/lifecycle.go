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

	"github.com/norma-run/norma/audit"
	"github.com/norma-run/norma/broker"
	"github.com/norma-run/norma/capability"
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
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.session != nil {
		return nil
	}
	if wait := time.Until(p.nextTry); wait > 0 {
		return &capability.Error{Decision: capability.Decision{Mode: capability.Deny, Reason: ReasonPluginCrashed, Layer: "host"},
			Detail: fmt.Sprintf("restarting after a crash; retry in %s", wait.Round(time.Millisecond))}
	}
	return p.startLocked(ctx)
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

// crashed audits a failed call, stops the process tree and backs off the
// next start: 200ms doubling per consecutive crash, at most 6.4s.
func (p *Plugin) crashed(ctx context.Context, cause error) {
	p.mu.Lock()
	p.crashes++
	backoff := time.Duration(1<<min(p.crashes, 6)) * 100 * time.Millisecond
	p.nextTry = time.Now().Add(backoff)
	p.mu.Unlock()
	p.h.cfg.Audit.Record(context.WithoutCancel(ctx), audit.Event{Type: audit.TypeToolCallFinished, RunID: p.h.cfg.RunID,
		Plugin: p.m.ID, PluginVersion: p.m.Version, IsError: true, Reason: string(ReasonPluginCrashed),
		Detail: map[string]string{"cause": p.h.cfg.Redactor.Redact(cause.Error())}})
	p.stop()
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

func (r *ringBuffer) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return string(r.buf)
}
