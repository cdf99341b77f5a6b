package host

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/x509"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/norma-run/norma/audit"
	"github.com/norma-run/norma/broker"
	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/guard/netguard"
	"github.com/norma-run/norma/internal/atomicfile"
	"github.com/norma-run/norma/manifest"
	"github.com/norma-run/norma/plugin"
	"github.com/norma-run/norma/policy"
	"github.com/norma-run/norma/sandbox"
	"github.com/norma-run/norma/secret"
	"github.com/norma-run/norma/tool"
)

// Reason codes of this package.
const (
	ReasonPluginHeld     capability.Reason = "PLUGIN_HELD"
	ReasonPluginCrashed  capability.Reason = "PLUGIN_CRASHED"
	ReasonPluginStart    capability.Reason = "PLUGIN_START_FAILED"
	ReasonToolsChanged   capability.Reason = "PLUGIN_TOOLS_CHANGED"
	ReasonOutputTooLarge capability.Reason = "PLUGIN_OUTPUT_TOO_LARGE"
)

// Config configures a Host. Manager, Workspace, Audit and Vault are required.
type Config struct {
	Home      string // state directory (broker CA, tool pins)
	Manager   *plugin.Manager
	Workspace string
	// WorkspacePolicy and RunPolicy are the ceiling layers (nil: none).
	WorkspacePolicy, RunPolicy *manifest.Layer
	RunID                      string
	Vault                      secret.Vault
	Redactor                   *secret.Redactor
	Audit                      audit.Sink
	Approver                   broker.Approver
	// Resolver and UpstreamRootCAs are for the broker's upstream side
	// (tests map names to loopback and trust a test CA).
	Resolver        netguard.Resolver
	UpstreamRootCAs *x509.CertPool
	// Runner starts the sandbox; the zero Runner re-executes this binary.
	Runner sandbox.Runner
	// Unsafe runs plugins without the OS sandbox (--unsafe-no-sandbox);
	// the host audits it as sandbox_downgraded.
	Unsafe bool
	// CallTimeout bounds one tool call (default 2 minutes).
	CallTimeout time.Duration
	// MaxOutput bounds the bytes of one tool result (default 4 MiB); a
	// larger result ends the call with an error and restarts the plugin.
	MaxOutput int
	// Limits for the plugin process tree (defaults below).
	Limits sandbox.Limits
}

// DefaultLimits bound a plugin process tree.
var DefaultLimits = sandbox.Limits{NProc: 64, NoFile: 512, FSize: 256 << 20, CPU: 600}

// Host runs plugins. It is safe for concurrent use.
type Host struct {
	cfg     Config
	ca      *broker.CA
	mu      sync.Mutex
	plugins map[string]*Plugin
	cache   *policy.Cache
}

// New returns a Host.
func New(cfg Config) (*Host, error) {
	if cfg.Manager == nil || cfg.Workspace == "" || cfg.Audit == nil || cfg.Vault == nil {
		return nil, errors.New("plugin host: Manager, Workspace, Audit and Vault are required")
	}
	if cfg.CallTimeout <= 0 {
		cfg.CallTimeout = 2 * time.Minute
	}
	if cfg.MaxOutput <= 0 {
		cfg.MaxOutput = 4 << 20
	}
	if cfg.Limits == (sandbox.Limits{}) {
		cfg.Limits = DefaultLimits
	}
	if cfg.Redactor == nil {
		cfg.Redactor = secret.NewRedactor()
	}
	ca, err := broker.LoadOrCreateCA(filepath.Join(cfg.Home, "broker"))
	if err != nil {
		return nil, err
	}
	return &Host{cfg: cfg, ca: ca, plugins: map[string]*Plugin{}, cache: policy.NewCache(0)}, nil
}

// Close stops every plugin.
func (h *Host) Close() error {
	h.mu.Lock()
	ps := make([]*Plugin, 0, len(h.plugins))
	for _, p := range h.plugins {
		ps = append(ps, p)
	}
	h.mu.Unlock()
	var errs []error
	for _, p := range ps {
		errs = append(errs, p.Close())
	}
	return errors.Join(errs...)
}

// Stop implements plugin.Stopper: the manager calls it on remove.
func (h *Host) Stop(ctx context.Context, id string) error {
	h.mu.Lock()
	p := h.plugins[id]
	delete(h.plugins, id)
	h.mu.Unlock()
	if p == nil {
		return nil
	}
	return p.Close()
}

// Plugin is one loaded plugin.
type Plugin struct {
	h        *Host
	state    *plugin.State
	m        *manifest.Manifest
	dir      string
	grant    *manifest.Layer
	set      *policy.Set
	lockPath string

	mu      sync.Mutex
	proc    *sandbox.Process
	session *mcp.ClientSession
	brk     *broker.Broker
	cancel  context.CancelFunc
	held    error
	crashes int
	nextTry time.Time
	tools   map[string]pinnedTool
	stderr  *ringBuffer
	started int

	// credits are the idempotency keys of external-write calls in flight;
	// the broker spends one per approval_required request (see approve).
	credits chan string
}

type pinnedTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
	Digest      string          `json:"digest"`
}

type pinFile struct {
	Version          string       `json:"version"`
	PermissionDigest string       `json:"permissionDigest"`
	Tools            []pinnedTool `json:"tools"`
}

// Load prepares the installed plugin id: its active version, manifest,
// grant and compiled policy. It starts the process only when it has never
// been started since consent (to pin its tools); otherwise lazily.
//
// Every Load reads the plugin's current state: its policy comes from the
// host's policy cache, keyed by plugin, version, manifest digest, consent
// generation and the digests of every layer, so a plugin already loaded
// under the same key is returned as it is, and one whose version or grant
// changed since (an update, a consent) is stopped and loaded again — an
// old compile is never used.
func (h *Host) Load(ctx context.Context, id string) (*Plugin, error) {
	st, err := h.cfg.Manager.Info(id)
	if err != nil {
		return nil, err
	}
	dir := h.cfg.Manager.Dir(id, st.Active)
	m, err := manifest.ParseFile(filepath.Join(dir, "manifest.yaml"))
	if err != nil {
		return nil, err
	}
	grant, bind, err := h.cfg.Manager.Grant(id)
	if err != nil {
		return nil, err
	}
	set, err := h.cache.Get(policy.Inputs{
		Manifest: m, Grant: grant, Workspace: h.cfg.WorkspacePolicy, Run: h.cfg.RunPolicy,
		Host:              policy.Host{Sandbox: !h.cfg.Unsafe, Unsafe: h.cfg.Unsafe, OutOfProcess: true},
		ConsentGeneration: bind.Generation,
	})
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	old := h.plugins[id]
	h.mu.Unlock()
	if old != nil {
		if old.set == set {
			return old, nil
		}
		h.mu.Lock()
		if h.plugins[id] == old {
			delete(h.plugins, id)
		}
		h.mu.Unlock()
		old.Close()
	}
	if held, err := readHold(h.cfg.Home, m); err != nil || held != nil {
		if err == nil {
			err = held
		}
		return nil, err
	}
	p := &Plugin{h: h, state: st, m: m, dir: dir, grant: grant, set: set,
		lockPath: filepath.Join(h.cfg.Home, "plugins", id, "tools.pin.json"), stderr: newRing(64 << 10),
		credits: make(chan string, 16)}
	if pins, ok := p.readPins(); ok {
		p.tools = pins
	} else if err := p.ensureStarted(ctx); err != nil {
		return nil, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if q := h.plugins[id]; q != nil {
		p.Close()
		return q, nil
	}
	h.plugins[id] = p
	return p, nil
}

// Manifest returns the plugin's manifest.
func (p *Plugin) Manifest() *manifest.Manifest { return p.m }

// Policy returns the plugin's compiled policy Set.
func (p *Plugin) Policy() *policy.Set { return p.set }

// Stderr returns the tail of the plugin's standard error (redacted).
func (p *Plugin) Stderr() string { return p.h.cfg.Redactor.Redact(p.stderr.String()) }

// ToolName is the registry name of a plugin tool.
func ToolName(pluginID, name string) string { return "mcp__" + pluginID + "__" + name }

// Tools returns the plugin's tools as CoreTools for the registry. Their
// security metadata comes from the manifest, never from the server.
func (p *Plugin) Tools() ([]tool.CoreTool, error) {
	var out []tool.CoreTool
	for _, mt := range p.m.Tools {
		pt, ok := p.tools[mt.Name]
		if !ok {
			continue // declared but not served: nothing to call
		}
		mt := mt
		writes := mt.WritesExternal()
		readOnly := !writes && mt.Effects.Data != "send"
		t, err := tool.Build(tool.Spec{
			Name:            ToolName(p.m.ID, mt.Name),
			Description:     pt.Description,
			Prompt:          fmt.Sprintf("Plugin %s tool %s. %s", p.m.Ref(), mt.Name, mt.Description),
			Schema:          pt.InputSchema,
			ReadOnly:        func(tool.Input) bool { return readOnly },
			ConcurrencySafe: func(tool.Input) bool { return readOnly },
			CheckPermissions: func(context.Context, tool.Input) tool.Permission {
				if mt.NeedsApproval() {
					return tool.Permission{Behavior: tool.Ask, Reason: "the manifest asks for approval on every call"}
				}
				return tool.Permission{Behavior: tool.Allow}
			},
			Accesses: func(in tool.Input) ([]tool.Access, error) {
				if !writes {
					return nil, nil
				}
				return []tool.Access{{Kind: capability.ExternalWrite, Tool: mt.Name, Target: Target(in)}}, nil
			},
			Timeout: p.h.cfg.CallTimeout,
			Call: func(ctx context.Context, env tool.Env, in tool.Input) (tool.Result, error) {
				return p.Call(ctx, mt.Name, in.Raw(), env.IdempotencyKey)
			},
		})
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// Target is the short description of what an external write touches, as
// the gate and the approval prompt show it: "owner#42" for issue-style
// inputs (a target, repo or owner field, with number when present), else
// "-". `norma policy explain --tool` uses it too, so both name the same
// target.
func Target(in tool.Input) string {
	var m map[string]any
	if in.Decode(&m) != nil {
		return "-"
	}
	for _, k := range []string{"target", "repo", "owner"} {
		if s, ok := m[k].(string); ok {
			if n, ok := m["number"]; ok {
				return fmt.Sprintf("%s#%v", s, n)
			}
			return s
		}
	}
	return "-"
}

// Call calls a declared tool on the plugin. The idempotency key travels as
// MCP request metadata (norma/idempotency_key).
func (p *Plugin) Call(ctx context.Context, name string, args json.RawMessage, idem string) (tool.Result, error) {
	if _, ok := p.m.Tool(name); !ok {
		return tool.Result{}, capability.Denied(capability.ReasonToolUndeclared, name, "not in the manifest")
	}
	if err := p.ensureStarted(ctx); err != nil {
		return tool.Result{}, err
	}
	p.mu.Lock()
	session := p.session
	p.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, p.h.cfg.CallTimeout)
	defer cancel()
	if mt, _ := p.m.Tool(name); mt.WritesExternal() && idem != "" {
		// The gate let this external-write call run (approved, or allowed
		// by an explicit rule): it may make one approval_required request.
		select {
		case p.credits <- idem:
		default:
		}
		defer p.drainCredit(idem)
	}
	params := &mcp.CallToolParams{Name: name, Arguments: args}
	if idem != "" {
		params.Meta = mcp.Meta{"norma/idempotency_key": idem}
	}
	res, err := session.CallTool(ctx, params)
	if err != nil {
		// A hang (deadline), a crash or a protocol error: end the call,
		// kill the tree, restart later with backoff.
		p.crashed(ctx, err)
		return tool.Result{}, &capability.Error{Decision: capability.Decision{Mode: capability.Deny, Reason: ReasonPluginCrashed, Layer: "host"},
			Detail: p.h.cfg.Redactor.Redact(err.Error())}
	}
	if held := p.isHeld(); held != nil {
		return tool.Result{}, held
	}
	var b strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			b.WriteString(t.Text)
		}
		if b.Len() > p.h.cfg.MaxOutput {
			p.crashed(ctx, errors.New("output flood"))
			return tool.Result{}, capability.Denied(ReasonOutputTooLarge, name, fmt.Sprintf("result larger than %d bytes", p.h.cfg.MaxOutput))
		}
	}
	return tool.Result{Content: p.h.cfg.Redactor.Redact(b.String()), IsError: res.IsError}, nil
}

func (p *Plugin) isHeld() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.held
}

// hold stops the plugin until re-consent and audits it.
func (p *Plugin) hold(ctx context.Context, reason capability.Reason, detail string) error {
	err := &capability.Error{Decision: capability.Decision{Mode: capability.Deny, Reason: reason, Layer: "host"}, Detail: detail}
	p.mu.Lock()
	p.held = err
	p.mu.Unlock()
	// The hold outlives this process: a restart must not quietly serve the
	// changed tools. `norma plugin consent ID --tools` releases it.
	if werr := writeHold(p.h.cfg.Home, p.m, reason, detail); werr != nil {
		p.h.cfg.Audit.Record(context.WithoutCancel(ctx), audit.Event{Type: audit.TypePluginHeld, Plugin: p.m.ID,
			PluginVersion: p.m.Version, Reason: string(reason), Detail: map[string]string{"persist": werr.Error()}})
	}
	p.h.cfg.Audit.Record(context.WithoutCancel(ctx), audit.Event{Type: audit.TypePluginHeld, RunID: p.h.cfg.RunID,
		Plugin: p.m.ID, PluginVersion: p.m.Version, ManifestDigest: p.m.Digest(), Reason: string(reason),
		Detail: map[string]string{"why": detail}})
	p.stop()
	return err
}

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

// ensureStarted starts the process when it is not running.
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

func (p *Plugin) startLocked(ctx context.Context) error {
	cfg := p.h.cfg
	// The process outlives the call that started it: its context is the
	// host's, cancelled by stop.
	pctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	fail := func(err error) error {
		cancel()
		return &capability.Error{Decision: capability.Decision{Mode: capability.Deny, Reason: ReasonPluginStart, Layer: "host"}, Detail: cfg.Redactor.Redact(err.Error())}
	}
	handles, err := secret.Handles(p.m)
	if err != nil {
		return fail(err)
	}
	// Only secrets the policy lets this plugin use toward their purpose.
	handles = slices.DeleteFunc(handles, func(h secret.Handle) bool {
		return p.set.Decide(ctx, capability.Request{Kind: capability.SecretUse, Secret: h.Name(), Origin: h.Purpose()}).Mode != capability.Allow
	})
	ln := newConnListener()
	brk, err := broker.New(ln, broker.Config{
		Identity:        broker.Identity{Plugin: p.m.ID, Version: p.m.Version, ManifestDigest: p.m.Digest(), RunID: cfg.RunID, Process: fmt.Sprint(p.started + 1)},
		Policy:          p.set,
		AllowPrivate:    p.set.AllowPrivate(),
		Resolver:        cfg.Resolver,
		CA:              p.h.ca,
		UpstreamRootCAs: cfg.UpstreamRootCAs,
		Secrets:         handles,
		Vault:           cfg.Vault,
		Redactor:        cfg.Redactor,
		Approver:        broker.ApproverFunc(p.approve),
		Audit:           cfg.Audit,
	})
	if err != nil {
		return fail(err)
	}
	go brk.Serve(pctx)
	env := []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/tmp", "TMPDIR=/tmp", "LANG=C.UTF-8"}
	for _, e := range brk.Env() {
		k, _, _ := strings.Cut(e, "=")
		if strings.Contains(strings.ToLower(k), "proxy") {
			continue // the sandbox points the proxy variables at its own endpoint
		}
		env = append(env, e)
	}
	paths, err := SandboxPaths(ctx, cfg.Workspace, p.set, p.m.Permissions, p.grantPerms())
	if err != nil {
		brk.Close()
		return fail(err)
	}
	var stdout io.Writer
	spec := sandbox.Spec{
		Argv:      []string{filepath.Join(p.dir, filepath.FromSlash(p.m.Entrypoint))},
		Dir:       "/tmp",
		ReadOnly:  append([]string{p.dir, p.h.ca.CertPath()}, paths.ReadOnly...),
		ReadWrite: paths.ReadWrite,
		Deny:      paths.Deny,
		Env:       env,
		Network:   sandbox.NetBroker,
		Broker:    ln.serve,
		Limits:    cfg.Limits,
		Stdout:    stdout,
		Stderr:    p.stderr,
		Unsafe:    cfg.Unsafe,
	}
	// A plugin that may not spawn can execute its entrypoint and nothing else.
	if p.set.Decide(ctx, capability.Request{Kind: capability.ProcessSpawn, Argv: []string{"*"}}).Mode != capability.Allow {
		spec.ExecOnly = execOnly(spec.Argv[0])
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
	client := mcp.NewClient(&mcp.Implementation{Name: "norma", Version: "2"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(ctx context.Context, _ *mcp.ToolListChangedRequest) {
			go p.hold(ctx, ReasonToolsChanged, "the plugin changed its tool list after consent")
		},
	})
	cctx, ccancel := context.WithTimeout(ctx, 30*time.Second)
	defer ccancel()
	session, err := client.Connect(cctx, &mcp.IOTransport{Reader: proc.Stdout, Writer: proc.Stdin}, nil)
	if err != nil {
		proc.Kill()
		proc.Wait()
		brk.Close()
		return fail(fmt.Errorf("connect: %w (stderr: %s)", err, lastLine(p.stderr.String())))
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

func (p *Plugin) grantPerms() manifest.Permissions {
	if p.grant == nil {
		return manifest.Permissions{}
	}
	return p.grant.Permissions
}

// checkToolsLocked lists the served tools: every one must be declared, and
// their digests must match the pins (pinned now when there are none).
func (p *Plugin) checkToolsLocked(ctx context.Context) error {
	res, err := p.session.ListTools(ctx, nil)
	if err != nil {
		return &capability.Error{Decision: capability.Decision{Mode: capability.Deny, Reason: ReasonPluginStart, Layer: "host"}, Detail: "tools/list: " + err.Error()}
	}
	served := map[string]pinnedTool{}
	var undeclared []string
	for _, t := range res.Tools {
		if _, ok := p.m.Tool(t.Name); !ok {
			undeclared = append(undeclared, t.Name)
			continue
		}
		schema, _ := json.Marshal(t.InputSchema)
		pt := pinnedTool{Name: t.Name, Description: t.Description, InputSchema: schema}
		sum := sha256.Sum256(bytes.Join([][]byte{[]byte(t.Name), []byte(t.Description), schema}, []byte{0}))
		pt.Digest = "sha256:" + hex.EncodeToString(sum[:])
		served[t.Name] = pt
	}
	if len(undeclared) > 0 {
		slices.Sort(undeclared)
		detail := "tools not in the manifest: " + strings.Join(undeclared, ", ")
		p.h.cfg.Audit.Record(context.WithoutCancel(ctx), audit.Event{Type: audit.TypeCapabilityDecision, RunID: p.h.cfg.RunID,
			Plugin: p.m.ID, PluginVersion: p.m.Version, ManifestDigest: p.m.Digest(), Decision: "deny",
			Reason: string(capability.ReasonToolUndeclared), Layer: policy.LayerPlugin, Detail: map[string]string{"tools": strings.Join(undeclared, ",")}})
		p.tools = nil
		return &capability.Error{Decision: capability.Decision{Mode: capability.Deny, Reason: capability.ReasonToolUndeclared, Layer: policy.LayerPlugin}, Detail: detail}
	}
	if p.tools == nil {
		p.tools = served
		return p.writePins()
	}
	for name, pt := range served {
		if old, ok := p.tools[name]; !ok || old.Digest != pt.Digest {
			p.mu.Unlock()
			err := p.hold(ctx, ReasonToolsChanged, "tool "+name+" changed since consent")
			p.mu.Lock()
			return err
		}
	}
	return nil
}

func (p *Plugin) readPins() (map[string]pinnedTool, bool) {
	b, err := os.ReadFile(p.lockPath)
	if err != nil {
		return nil, false
	}
	var f pinFile
	if json.Unmarshal(b, &f) != nil || f.Version != p.m.Version || f.PermissionDigest != p.m.Permissions.Digest() {
		return nil, false
	}
	out := map[string]pinnedTool{}
	for _, t := range f.Tools {
		out[t.Name] = t
	}
	return out, true
}

func (p *Plugin) writePins() error {
	f := pinFile{Version: p.m.Version, PermissionDigest: p.m.Permissions.Digest()}
	for _, t := range p.tools {
		f.Tools = append(f.Tools, t)
	}
	slices.SortFunc(f.Tools, func(a, b pinnedTool) int { return strings.Compare(a.Name, b.Name) })
	b, _ := json.MarshalIndent(f, "", "  ")
	if err := os.MkdirAll(filepath.Dir(p.lockPath), 0o700); err != nil {
		return err
	}
	return atomicfile.Write(p.lockPath, b, 0o600)
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// connListener turns the sandbox's per-connection broker callback into a
// net.Listener for the broker's HTTP server.
type connListener struct {
	ch     chan net.Conn
	done   chan struct{}
	closed sync.Once
}

func newConnListener() *connListener {
	return &connListener{ch: make(chan net.Conn), done: make(chan struct{})}
}

func (l *connListener) serve(ctx context.Context, c net.Conn) {
	select {
	case l.ch <- c:
	case <-ctx.Done():
		c.Close()
	case <-l.done:
		c.Close()
	}
}

func (l *connListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ch:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *connListener) Close() error {
	l.closed.Do(func() { close(l.done) })
	return nil
}

func (l *connListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 3128} }

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

// approve answers the broker's approval_required requests. A request made
// while an approved external-write tool call is in flight spends that call's
// credit: one approved call, one write, under the call's idempotency key.
// Any other request goes to the configured approver, or is refused.
func (p *Plugin) approve(ctx context.Context, info broker.RequestInfo) (broker.Grant, error) {
	select {
	case key := <-p.credits:
		return broker.Grant{ApprovalID: "call:" + key, IdempotencyKey: key}, nil
	default:
	}
	if a := p.h.cfg.Approver; a != nil {
		return a.ApproveRequest(ctx, info)
	}
	return broker.Grant{}, capability.Denied(capability.ReasonApprovalRequired, info.Method+" "+info.Origin+info.Path, "no approved tool call covers this request")
}

// drainCredit removes key if the call ended without spending it.
func (p *Plugin) drainCredit(key string) {
	for {
		select {
		case k := <-p.credits:
			if k == key {
				return
			}
			p.credits <- k
			return
		default:
			return
		}
	}
}

type holdFile struct {
	Version string    `json:"version"`
	Reason  string    `json:"reason"`
	Detail  string    `json:"detail"`
	At      time.Time `json:"at"`
}

func holdPath(home, id string) string { return filepath.Join(home, "plugins", id, "tools.held.json") }

func writeHold(home string, m *manifest.Manifest, reason capability.Reason, detail string) error {
	b, _ := json.MarshalIndent(holdFile{Version: m.Version, Reason: string(reason), Detail: detail, At: time.Now().UTC()}, "", "  ")
	path := holdPath(home, m.ID)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return atomicfile.Write(path, b, 0o600)
}

// readHold returns the hold recorded for m's version, as an error, or nil.
// An unreadable hold file holds too (fail closed).
func readHold(home string, m *manifest.Manifest) (*capability.Error, error) {
	b, err := os.ReadFile(holdPath(home, m.ID))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	held := func(detail string) *capability.Error {
		return &capability.Error{Decision: capability.Decision{Mode: capability.Deny, Reason: ReasonPluginHeld, Layer: "host"}, Detail: detail}
	}
	if err != nil {
		return held("the hold file cannot be read: " + err.Error()), nil
	}
	var h holdFile
	if json.Unmarshal(b, &h) != nil {
		return held("the hold file is corrupt"), nil
	}
	if h.Version != m.Version {
		return nil, nil // a new version was consented to since
	}
	return held(fmt.Sprintf("%s since %s: %s; review it, then run `norma plugin consent %s --tools`", h.Reason, h.At.Format(time.RFC3339), h.Detail, m.ID)), nil
}

// Hold describes a recorded tool hold of plugin id, or "" when none.
func Hold(home, id string) string {
	b, err := os.ReadFile(holdPath(home, id))
	if err != nil {
		return ""
	}
	var h holdFile
	if json.Unmarshal(b, &h) != nil {
		return "the hold file is corrupt"
	}
	return fmt.Sprintf("%s@%s: %s (%s)", id, h.Version, h.Detail, h.Reason)
}

// ReleaseHold is the user's consent to a plugin's changed tools: it drops
// the hold and the tool pins, so the next start pins what the plugin serves
// now (every tool must still be declared in its signed manifest).
func ReleaseHold(home, id string) error {
	for _, p := range []string{holdPath(home, id), filepath.Join(home, "plugins", id, "tools.pin.json")} {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}
