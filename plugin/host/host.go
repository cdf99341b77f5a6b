package host

import (
	"context"
	"crypto/x509"
	"errors"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/norma-run/norma/approval"
	"github.com/norma-run/norma/audit"
	"github.com/norma-run/norma/broker"
	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/guard/netguard"
	"github.com/norma-run/norma/manifest"
	"github.com/norma-run/norma/plugin"
	"github.com/norma-run/norma/policy"
	"github.com/norma-run/norma/sandbox"
	"github.com/norma-run/norma/sandbox/sandboxpolicy"
	"github.com/norma-run/norma/secret"
)

// Reason codes of this package.
const (
	ReasonPluginHeld     capability.Reason = "PLUGIN_HELD"
	ReasonPluginCrashed  capability.Reason = "PLUGIN_CRASHED"
	ReasonPluginStart    capability.Reason = "PLUGIN_START_FAILED"
	ReasonToolsChanged   capability.Reason = "PLUGIN_TOOLS_CHANGED"
	ReasonOutputTooLarge capability.Reason = "PLUGIN_OUTPUT_TOO_LARGE"
)

// DefaultCallTimeout bounds a plugin tool call when Config does not.
const DefaultCallTimeout = 2 * time.Minute

// Config configures a Host. Workspace, Audit and Vault are required, and
// Manager for installed plugins ([Host.Load]; [Host.LoadDev] needs none).
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
	// Approver answers a plugin's approval_required brokered requests that
	// no approved tool call covers (see the credits in listener.go); nil
	// refuses them with APPROVAL_REQUIRED.
	Approver approval.Authorizer
	// Resolver and UpstreamRootCAs are for the broker's upstream side
	// (tests map names to loopback and trust a test CA).
	Resolver        netguard.Resolver
	UpstreamRootCAs *x509.CertPool
	// Runner starts the sandbox; the zero Runner re-executes this binary.
	Runner sandbox.Runner
	// Unsafe runs plugins without the OS sandbox (--unsafe-no-sandbox);
	// the host audits it as sandbox_downgraded.
	Unsafe bool
	// CallTimeout bounds one tool call (default DefaultCallTimeout), and
	// ToolTimeouts one tool's calls, by registry name (mcp__SERVER__TOOL).
	// A call that does not answer in time ends with TIMEOUT (layer host)
	// and its process tree is killed; the next call starts a fresh one.
	CallTimeout  time.Duration
	ToolTimeouts map[string]time.Duration
	// MaxOutput bounds the bytes of one tool result (default 4 MiB); a
	// larger result ends the call with an error and restarts the plugin.
	MaxOutput int
	// Limits for the plugin process tree (default sandboxpolicy.DefaultLimits).
	Limits sandbox.Limits
	// Elicit asks the person for a server's elicitation, like an approval
	// (the run's terminal); nil declines every one, audited as
	// ELICITATION_HEADLESS (no terminal, dontAsk, a queued run).
	Elicit func(context.Context, Elicitation) (ElicitAnswer, error)
	// Sampling answers servers' sampling requests within a budget; nil
	// refuses them (SAMPLING_REFUSED), the default.
	Sampling *Sampling
	// Notify receives the servers' logging messages and progress
	// notifications, for the person (escape them); nil drops them. They
	// are audited either way, and never reach the model.
	Notify func(Notice)
}

// Host runs plugins. It is safe for concurrent use.
type Host struct {
	cfg     Config
	ca      *broker.CA
	mu      sync.Mutex
	plugins map[string]*Plugin
	cache   *policy.Cache
	// sampleMu guards sampled: the tokens of the run's sampling so far.
	sampleMu sync.Mutex
	sampled  int
	// progress numbers the calls' progress tokens.
	progress atomic.Int64
	// relays maps a progress token of a relayed call to its progressRelay.
	relays sync.Map
	// prot is the state directory by identity, recorded when the host was
	// created: every plugin sandbox hides it under any name.
	prot sandboxpolicy.Protected
}

// New returns a Host.
func New(cfg Config) (*Host, error) {
	if cfg.Workspace == "" || cfg.Audit == nil || cfg.Vault == nil {
		return nil, errors.New("plugin host: Workspace, Audit and Vault are required")
	}
	if cfg.CallTimeout <= 0 {
		cfg.CallTimeout = DefaultCallTimeout
	}
	if cfg.MaxOutput <= 0 {
		cfg.MaxOutput = 4 << 20
	}
	if cfg.Limits == (sandbox.Limits{}) {
		cfg.Limits = sandboxpolicy.DefaultLimits
	}
	if cfg.Redactor == nil {
		cfg.Redactor = secret.NewRedactor()
	}
	ca, err := broker.LoadOrCreateCA(filepath.Join(cfg.Home, "broker"))
	if err != nil {
		return nil, err
	}
	prot, err := sandboxpolicy.Protect(cfg.Home)
	if err != nil {
		return nil, err
	}
	return &Host{cfg: cfg, ca: ca, plugins: map[string]*Plugin{}, cache: policy.NewCache(0), prot: prot}, nil
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

// Plugin is one loaded plugin. Its tools are reached only through
// [Plugin.Tools], registered with the gate; nothing outside this package
// calls a plugin tool directly.
type Plugin struct {
	h        *Host
	state    *plugin.State
	server   string // its tools' server name: mcp__SERVER__TOOL
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
	// caps are what the server advertised besides tools (pinned with them).
	caps serverFeatures
	// notices counts the logging and progress notices of this process.
	notices int
	// relist serializes the handling of tools/list_changed.
	relist sync.Mutex
	// servedRaw are the declared tools the server listed last, as it
	// listed them (ServedTools); listeners receive its notifications
	// (OnNotification).
	servedRaw *mcp.ListToolsResult
	listeners []func(context.Context, Notification)

	// credits are the idempotency keys of external-write calls in flight;
	// the broker spends one per approval_required request (see
	// creditAuthorizer).
	credits chan string

	// dev is how a plugin that is not installed starts (LoadDev); nil
	// for an installed one.
	dev *devLaunch
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
	p, err := h.prepare(id)
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	old := h.plugins[id]
	h.mu.Unlock()
	if old != nil {
		if old.set == p.set {
			return old, nil
		}
		h.mu.Lock()
		if h.plugins[id] == old {
			delete(h.plugins, id)
		}
		h.mu.Unlock()
		old.Close()
	}
	if held, err := readHold(h.cfg.Home, p.m); err != nil || held != nil {
		if err == nil {
			err = held
		}
		return nil, err
	}
	if pins, caps, ok := p.readPins(); ok {
		p.tools, p.caps = pins, caps
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

// prepare reads plugin id's current state, manifest and grant and returns
// it, not started, with its policy from the host's cache.
// inputs are the policy inputs of a plugin under cfg: its manifest and
// grant under the ceiling layers, out of process, in the sandbox unless
// the operator chose Unsafe. Load, Describe and Declare all compile from
// them.
func (c Config) inputs(m *manifest.Manifest, grant *manifest.Layer, generation uint64) policy.Inputs {
	return policy.Inputs{
		Manifest: m, Grant: grant, Workspace: c.WorkspacePolicy, Run: c.RunPolicy,
		Host:              policy.Host{Sandbox: !c.Unsafe, Unsafe: c.Unsafe, OutOfProcess: true},
		ConsentGeneration: generation,
	}
}

func (h *Host) prepare(id string) (*Plugin, error) {
	if h.cfg.Manager == nil {
		return nil, errors.New("plugin host: no plugin manager: installed plugins cannot be loaded")
	}
	st, err := h.cfg.Manager.Info(id)
	if err != nil {
		return nil, err
	}
	dir := h.cfg.Manager.Dir(id, st.Active)
	m, err := manifest.ParseFile(filepath.Join(dir, "manifest.yaml"))
	if err != nil {
		// Installed packages were checked; one changed on disk since.
		return nil, &capability.Error{Decision: capability.Decision{Mode: capability.Deny, Reason: capability.ReasonPluginManifestInvalid,
			Layer: capability.LayerPlugin}, Detail: err.Error(), Err: err}
	}
	grant, bind, err := h.cfg.Manager.Grant(id)
	if err != nil {
		return nil, err
	}
	set, err := h.cache.Get(h.cfg.inputs(m, grant, bind.Generation))
	if err != nil {
		return nil, err
	}
	return &Plugin{h: h, state: st, server: st.ServerName(), m: m, dir: dir, grant: grant, set: set,
		lockPath: filepath.Join(h.cfg.Home, "plugins", id, "tools.pin.json"), stderr: newRing(64 << 10),
		credits: make(chan string, 16)}, nil
}

// Manifest returns the plugin's manifest.
func (p *Plugin) Manifest() *manifest.Manifest { return p.m }

// ServerName is the server name its tools go by (mcp__SERVER__TOOL).
func (p *Plugin) ServerName() string { return p.server }

// Policy returns the plugin's compiled policy Set.
func (p *Plugin) Policy() *policy.Set { return p.set }

// Stderr returns the tail of the plugin's standard error (redacted).
func (p *Plugin) Stderr() string { return p.h.cfg.Redactor.Redact(p.stderr.String()) }
