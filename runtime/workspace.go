package runtime

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/norma-run/norma/agent"
	"github.com/norma-run/norma/audit"
	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/gate"
	"github.com/norma-run/norma/guard/netguard"
	"github.com/norma-run/norma/hook"
	"github.com/norma-run/norma/manifest"
	"github.com/norma-run/norma/plugin"
	"github.com/norma-run/norma/plugin/host"
	"github.com/norma-run/norma/policy"
	"github.com/norma-run/norma/provider"
	"github.com/norma-run/norma/sandbox"
	"github.com/norma-run/norma/sandbox/sandboxpolicy"
	"github.com/norma-run/norma/secret"
	"github.com/norma-run/norma/settings"
	"github.com/norma-run/norma/tool"
	"github.com/norma-run/norma/tool/builtin"
	"github.com/norma-run/norma/tool/builtin/shell"
)

// PolicyFile is the workspace policy, relative to the workspace directory:
// the user's ceiling over every tool and plugin of the workspace. Its
// network section is also what the built-in web tools may reach.
const PolicyFile = ".norma/policy.yaml"

// Options configures [Open]. Dir is required; every other zero field has
// the documented default.
type Options struct {
	// Dir is the workspace directory.
	Dir string
	// Home is Norma's state directory; the plugins installed there are
	// loaded. Empty means no plugins.
	Home string
	// RunID names the run: the shell's tasks and PTYs, the todo list and
	// the plugin host belong to it. Empty means a new run id.
	RunID string
	// Resume continues run RunID from its saved state (the session's
	// state directory is the door's agent.WithStateDir).
	Resume bool
	// Policy replaces the workspace policy read from Dir/[PolicyFile];
	// nil reads the file, applied as far as the user accepted it (see
	// [TrustedFiles]). An embedder's own Policy is its own choice and is
	// applied as given.
	Policy *manifest.Layer
	// Accept asks the user whether to accept a held change of a trusted
	// file (a terminal's prompt, like plugin consent); true records it as
	// accepted and applies it. Nil holds every widening change (headless).
	Accept func(FileChange) bool
	// RunPolicy is the run's ceiling layer over every tool; nil means none.
	RunPolicy *manifest.Layer
	// Plugins are plugins besides the installed ones (an embedder's own).
	Plugins []agent.Plugin
	// Declared are plugins known by their manifest only, not installed:
	// registered with the policy the plugin host would compile for them
	// here. One without a Launch is never started (`policy explain
	// --manifest`); one with a Launch is loaded by the plugin host and
	// served like an installed plugin (`mcp proxy --manifest`), unless
	// Describe.
	Declared []Declaration
	// NoSubagents leaves out the Task tool; by default the session may run
	// subagents, agent.DefaultMaxSubagentDepth deep.
	NoSubagents bool
	// Mode is the permission mode the session starts in, unless the
	// settings set one: see ModeGiven.
	Mode gate.Mode
	// ModeGiven says Mode was given on the command line: it then wins
	// over the settings' defaultMode, but not over managed settings.
	ModeGiven bool
	// NarrowMode, when set, is given the mode the settings and Mode
	// decided and returns the mode the session runs in. A door deciding
	// for another agent (package agenthook) passes the agent's own mode
	// through it, so that the agent's mode can make Norma's stricter and
	// never wider.
	NarrowMode func(gate.Mode) gate.Mode
	// Settings names the settings files besides the workspace's own
	// (user, --settings, managed); see package settings.
	Settings settings.Options
	// Rules are the permission rules (allow, ask, deny). Rules written
	// with a path outside the workspace's own syntax (//abs, ~/x) are
	// placed by Rules.Root and Rules.Home: by default the workspace
	// directory, symbolic links resolved, and this user's home directory.
	Rules policy.Rules
	// Services are the state directory's services (OpenServices), which
	// every door that serves runs gives: the audit log and the redactor
	// come from them, and each session gets their approval service, their
	// store as its ledger of executions, and its run state and spill files
	// under their Home. Nil for a runtime that only decides (OpenExplain),
	// which is then given Audit.
	Services *Services
	// Audit receives every decision and the registry's replacements;
	// required without Services, and must be unset with them.
	Audit audit.Sink
	// Vault opens the secret vault, once and only when a plugin is
	// installed (so that no key file is created for nothing). Nil means
	// plugins are not loaded.
	Vault func(ctx context.Context) (secret.Vault, error)
	// Todos persists TodoWrite's lists; nil means a file per run under
	// Home/runs/RUN (in memory without Home).
	Todos builtin.TodoStore
	// ShellEnv is the shell's whole environment (KEY=VALUE); nil means
	// LANG=C.UTF-8 and the shell's defaults.
	ShellEnv []string
	// NoSandbox pretends the OS sandbox is unavailable: no shell tools, no
	// process spawning. By default sandbox.Probe decides.
	NoSandbox bool
	// UnsafeNoSandbox runs plugins without the OS sandbox (audited by the
	// plugin host).
	UnsafeNoSandbox bool
	// Limits are the resource limits of every sandboxed process tree, the
	// built-in tools' and the plugins'; the zero value means
	// sandboxpolicy.DefaultLimits.
	Limits sandbox.Limits
	// Redactor masks secrets in every tool result and process output (the
	// gate's step 7), in the run state and in what plugins print: the
	// door tells it the vault's values and the provider keys; the broker
	// adds the values it hands out. Nil means one that knows the token
	// formats only. Give the audit log the same one.
	Redactor *secret.Redactor
	// Environ is an environment whose credentials the redactor learns as
	// known values (secret.Redactor.AddEnvironment): masked in output and
	// refused at the exits. norma run gives its own (the sandbox withholds
	// it from every tool); the agents' hooks the agent's.
	Environ []string
	// Resolver and RootCAs are the upstream side of the network, for the
	// built-in tools' HTTP client and the plugins' egress broker: nil means
	// the system's resolver and roots. Tests and the demo map names to
	// loopback and trust a test CA.
	Resolver netguard.Resolver
	RootCAs  *x509.CertPool
	// CallTimeout bounds one plugin tool call; zero means the plugin
	// host's default. The settings' plugins.callTimeout and
	// plugins.toolTimeouts override it, under the managed caps.
	CallTimeout time.Duration
	// WrapPlugin, when set, decorates each loaded plugin before it is
	// registered (a host's own logging, the demo's report capture). The
	// gate still decides every call of the decorated tools.
	WrapPlugin func(agent.Plugin) agent.Plugin
	// Describe registers the installed plugins as they were last served
	// (host.Describe) instead of loading them: nothing is started, no
	// vault is opened, no state is written, and their tools cannot be
	// called. For deciding without running (Explain).
	Describe bool
	// ReadOnly writes nothing to the state directory: a narrowing change
	// of a workspace file is applied but not recorded as accepted, so that
	// deciding without running (Explain) leaves no trace. Describe
	// implies it.
	ReadOnly bool
	// Warn receives problems that Open does not stop for, such as a
	// plugin that does not load (a *[PluginFailure], also listed by
	// [Runtime.PluginFailures]: the door decides whether a run goes on
	// without it); nil discards them.
	Warn func(error)
	// Elicit asks the person for what a plugin's MCP server requests
	// (elicitation), like an approval; nil declines every request
	// (headless: no terminal, dontAsk, a queued run), audited.
	Elicit func(context.Context, host.Elicitation) (host.ElicitAnswer, error)
	// Sampler and SamplerModel answer the plugins' sampling requests when
	// the settings allow it (mcp.sampling), within the settings' budget;
	// otherwise every request is refused, audited.
	Sampler      provider.Provider
	SamplerModel string
	// Notify receives the plugins' logging messages and progress
	// notifications for the person (escape them); nil drops them. They
	// are audited either way and never reach the model.
	Notify func(host.Notice)
}

// Declaration is a plugin known by its manifest, as if installed with
// Grant (nil: no grant layer, so the manifest's own requests under the
// workspace, settings and run layers).
type Declaration struct {
	Manifest *manifest.Manifest
	Grant    *manifest.Layer
	// Launch, when set, starts the plugin for development: its server is
	// Launch (CMD ARGS, in place of the manifest's entrypoint and args),
	// run in Dir, the manifest's directory and its package, through the
	// plugin host as an installed plugin runs (host.LoadDev): in the
	// sandbox, behind the broker, its tools through the gate. Nothing is
	// written to the plugin state. It needs Home and Vault; an installed
	// plugin with the same id or server name is left out for the run.
	Launch []string
	Dir    string
}

// Runtime is a workspace's assembled runtime: the policy compiled once,
// the sandbox runner, the plugins and the hooks, shared by every session
// it serves ([Runtime.Session], [Runtime.SessionOf]) and by
// [Runtime.Explain]. Each session has its own registry, built-in tools,
// shell (tasks and PTYs) and todo list. Its methods are safe for
// concurrent use once Open has returned.
type Runtime struct {
	opts    Options
	dir     string
	layer   *manifest.Layer
	sandbox bool
	builtin *builtin.Builtin      // the first session's tools, with the one compiled policy
	exec    *sandboxpolicy.Runner // the built-in tools' process capability; nil without the sandbox
	host    *host.Host
	plugins []agent.Plugin
	failed  []*PluginFailure // installed plugins that did not load

	declared []agent.Plugin // the Declared plugins, also in plugins
	settings *settings.Settings
	features []tool.CoreTool // the plugins' resource and prompt tools
	hooks    *hook.Registry
	changes  []FileChange
	todoDirs bool // Options.Todos was not given: a file per run under Home

	mu      sync.Mutex       // guards what follows
	first   *parts           // the parts Open built, until a session or Explain takes them
	runs    map[string]bool  // the runs a session was started for
	shells  []*shell.Manager // every session's shell, closed with the runtime
	served  *agent.Session   // the first session started, which Explain asks
	explain *agent.Session   // the model-less session of Explain, when none was started
}

// Open reads the workspace policy, builds the built-in tools with their
// policy compiled once, and loads the installed plugins. Errors name the
// file (and line and column for a bad policy file).
func Open(ctx context.Context, o Options) (*Runtime, error) {
	if err := o.useServices(); err != nil {
		return nil, err
	}
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("workspace: %s is not a directory", o.Dir)
	}
	if o.Home != "" {
		// The floor keeps the state directory out of a workspace that
		// holds it; a workspace inside the state directory would hand the
		// tools the part of it below the workspace, under names no deny
		// rule matches.
		if rel, err := filepath.Rel(realPath(o.Home), realPath(dir)); err == nil && rel != "." && filepath.IsLocal(rel) {
			return nil, fmt.Errorf("workspace: %s lies inside Norma's state directory %s; choose a workspace outside it", o.Dir, o.Home)
		}
	}
	tr, err := resolve(dir, &o, o.Policy != nil)
	if err != nil {
		return nil, err
	}
	for _, c := range tr.changes {
		if c.Held && o.Warn != nil {
			o.Warn(heldNote(dir, c))
		}
	}
	layer := o.Policy
	if layer == nil {
		if layer, err = parsePolicy(dir, tr.versions[PolicyFile]); err != nil {
			return nil, err
		}
	}
	st, err := loadSettings(dir, &o, tr.readWorkspace(dir))
	if err != nil {
		return nil, err
	}
	layer = withNetwork(layer, st.Network)
	if err := makeInside(dir, o.Settings.UserDir); err != nil {
		return nil, err
	}
	placeRules(&o.Rules, dir)
	hidden, readOnly := ruleDenies(o.Rules)
	layer = withFloor(layer, dir, hidden, readOnly, o.Home, o.Settings.UserDir)
	if o.RunID == "" {
		o.RunID = agent.NewRunID()
	}
	if !agent.ValidRunID(o.RunID) {
		return nil, fmt.Errorf("workspace: %q is not a run id", o.RunID)
	}
	todoDirs := o.Todos == nil && o.Home != ""
	if o.ShellEnv == nil {
		o.ShellEnv = []string{"LANG=C.UTF-8"}
	}
	if o.Redactor == nil {
		o.Redactor = secret.NewRedactor()
	}
	o.Redactor.AddEnvironment(o.Environ)
	// What a credential or identifier found at an exit does (issue 29):
	// the settings' egress section, on the one detector engine every exit
	// of this process shares (the gate, every plugin's broker).
	o.Redactor.SetEgress(st.Egress.Rules())
	r := &Runtime{opts: o, dir: dir, layer: layer, settings: st, changes: tr.changes, sandbox: !o.NoSandbox && sandbox.Ready(),
		plugins: o.Plugins, todoDirs: todoDirs, runs: map[string]bool{}}
	if r.first, err = r.newParts(o.RunID); err != nil {
		return nil, err
	}
	r.builtin = r.first.tools
	if r.sandbox {
		if r.exec, err = r.processRunner(); err != nil {
			r.Close()
			return nil, fmt.Errorf("workspace: %w", err)
		}
	}
	if err := r.declare(); err != nil {
		r.Close()
		return nil, err
	}
	if err := r.loadPlugins(ctx); err != nil {
		r.Close()
		return nil, err
	}
	if r.hooks, err = r.hookRegistry(); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// useServices takes the audit log and the redactor from o.Services, and
// checks that a runtime has exactly one of each.
func (o *Options) useServices() error {
	s := o.Services
	switch {
	case s == nil && o.Audit == nil:
		return errors.New("runtime: Open: Services (or, to only decide, Audit) is required")
	case s == nil:
		return nil
	case o.Audit != nil || (o.Redactor != nil && o.Redactor != s.Redactor):
		return errors.New("runtime: Open: Audit and Redactor come from Services; give one or the other")
	}
	if o.Home == "" {
		o.Home = s.Home
	} else if filepath.Clean(o.Home) != filepath.Clean(s.Home) {
		return fmt.Errorf("runtime: Open: Home %s is not the services' state directory %s", o.Home, s.Home)
	}
	o.Audit, o.Redactor = s.Audit, s.Redactor
	return nil
}

// placeRules gives rules the directories their //abs and ~/ forms are
// placed against, where the caller has not (package agenthook gives the
// agent's).
func placeRules(rules *policy.Rules, dir string) {
	if rules.Root == "" {
		rules.Root = realPath(dir)
	}
	if rules.Home == "" {
		if h, err := os.UserHomeDir(); err == nil && filepath.IsAbs(h) {
			rules.Home = realPath(h)
		}
	}
}

// LoadPolicy reads dir's workspace policy ([PolicyFile]); nil when there is
// none.
func LoadPolicy(dir string) (*manifest.Layer, error) {
	p := filepath.Join(dir, PolicyFile)
	if fi, err := os.Stat(p); err != nil || !fi.Mode().IsRegular() {
		return nil, nil
	}
	return manifest.ParseLayerFile(p)
}

// toolsConfig configures the built-in tools of p's session: the web tools
// may request what
// the workspace policy's network section lists (the policy is then both
// their request and their ceiling), the shell tools are installed only
// with the OS sandbox, and the policy is compiled by the first call only.
func (r *Runtime) toolsConfig(p *parts) builtin.Config {
	cfg := builtin.Config{SessionID: p.run, Todos: p.todos, Gate: p.ref, Registry: p.reg,
		Policy: func(m *manifest.Manifest) (*policy.Set, error) {
			if r.builtin != nil {
				return r.builtin.Policy, nil // compiled once, for every session
			}
			return policy.Compile(policy.Inputs{Manifest: m, Workspace: r.layer, Run: r.opts.RunPolicy, Host: policy.Host{Sandbox: r.sandbox}})
		}}
	if r.layer != nil && r.layer.Permissions.Network != nil {
		cfg.Network = slices.Clone(r.layer.Permissions.Network.Requests)
	}
	if n := r.settings.Network; n != nil {
		cfg.Network = append(cfg.Network, n.Requests...)
	}
	if r.sandbox {
		cfg.Shell = &shell.Config{SessionID: p.run}
	}
	return cfg
}

// processRunner is the built-in tools' process capability: the OS sandbox,
// derived for every command from the one compiled built-in policy, with
// the shell's environment and the configured limits (default
// sandboxpolicy.DefaultLimits). The gate hands it to
// each call it allows to spawn (tool.Env.Exec) and checks every argv.
func (r *Runtime) processRunner() (*sandboxpolicy.Runner, error) {
	layers := []manifest.Permissions{r.builtin.Manifest.Permissions}
	for _, l := range []*manifest.Layer{r.layer, r.opts.RunPolicy} {
		if l != nil {
			layers = append(layers, l.Permissions)
		}
	}
	return sandboxpolicy.NewRunner(sandboxpolicy.RunnerConfig{Workspace: r.dir, Policy: r.builtin.Policy,
		Layers: layers, Protected: []string{r.opts.Home, r.opts.Settings.UserDir}, Env: r.opts.ShellEnv, Limits: r.opts.Limits})
}

// RunShell runs command as the Bash tool of a run in this workspace
// would: the same shell, the same process runner (the OS sandbox derived
// from the one compiled policy), in the workspace root, with cmd's
// streams. Without the OS sandbox nothing runs: the error is coded
// SANDBOX_UNAVAILABLE. cmd.Argv is ignored.
func (r *Runtime) RunShell(ctx context.Context, command string, cmd tool.Command) (tool.CommandResult, error) {
	if r.exec == nil || r.builtin.Shell == nil {
		return tool.CommandResult{}, &capability.Error{Decision: capability.Decision{Mode: capability.Deny, Reason: capability.ReasonSandboxUnavailable, Layer: capability.LayerSandbox},
			Detail: "the OS sandbox is not available here, so the command is not run"}
	}
	cmd.Argv = r.builtin.Shell.Argv(command)
	return r.exec.Run(ctx, cmd)
}

// loadPlugins loads every installed plugin and every launched
// Declaration through the plugin host, with the workspace policy as a
// ceiling. An installed plugin that does not load is left out, recorded
// as a [PluginFailure] and reported to Warn; a launched one that does not
// load fails Open (the door asked for it by name).
func (r *Runtime) loadPlugins(ctx context.Context) (err error) {
	home := r.opts.Home
	dev := r.launched()
	if home == "" || (r.opts.Vault == nil && !r.opts.Describe) {
		if len(dev) > 0 {
			return errors.New("workspace: a launched declaration needs Home and Vault")
		}
		return nil
	}
	list, m, err := r.installed()
	if err != nil || len(list)+len(dev) == 0 {
		return err
	}
	cfg := r.hostConfig()
	cfg.Manager = m // nil when nothing is installed: none is created for a dev plugin
	load := func(id string) (agent.Plugin, error) { return host.Describe(cfg, id) }
	if !r.opts.Describe {
		if cfg.Vault, err = r.opts.Vault(ctx); err != nil {
			return err
		}
		if r.host, err = host.New(cfg); err != nil {
			return err
		}
		load = func(id string) (agent.Plugin, error) { return r.host.Load(ctx, id) }
		defer func() {
			if err == nil {
				r.features, err = r.host.FeatureTools()
			}
		}()
	}
	shadowed := map[string]bool{}
	for _, d := range dev {
		p, err := r.host.LoadDev(ctx, d.Manifest, d.Dir, d.Launch, d.Grant)
		if err != nil {
			return err
		}
		shadowed[d.Manifest.ID] = true
		r.declared = append(r.declared, p)
		var ap agent.Plugin = p
		if r.opts.WrapPlugin != nil {
			ap = r.opts.WrapPlugin(ap)
		}
		r.plugins = append(r.plugins, ap)
	}
	var described []*host.Declared
	for _, st := range list {
		if !st.LoadsIn(r.dir) {
			continue // added with --scope workspace for another workspace
		}
		if shadowed[st.ID] || shadowed[st.ServerName()] {
			r.warn(fmt.Errorf("installed plugin %s is left out: the manifest given for development takes its name", st.ID))
			continue
		}
		p, err := load(st.ID)
		if err != nil {
			f := newPluginFailure(st.ID, err)
			r.failed = append(r.failed, f)
			r.warn(f)
			continue
		}
		if d, ok := p.(*host.Declared); ok {
			described = append(described, d)
		}
		if r.opts.WrapPlugin != nil {
			p = r.opts.WrapPlugin(p)
		}
		r.plugins = append(r.plugins, p)
	}
	if r.opts.Describe {
		// Explain decides on the resource and prompt tools as the run
		// registers them.
		r.features, err = host.DescribedFeatureTools(described)
	}
	return err
}

// installed lists the installed plugins with their manager; none, and no
// manager (nothing is created in the state directory), when nothing is
// installed.
func (r *Runtime) installed() ([]*plugin.State, *plugin.Manager, error) {
	if fi, err := os.Stat(filepath.Join(r.opts.Home, "plugins")); err != nil || !fi.IsDir() {
		return nil, nil, nil // nothing installed
	}
	m, err := plugin.NewManager(plugin.Options{Home: r.opts.Home, Audit: r.opts.Audit, Workspace: r.layer})
	if err != nil {
		return nil, nil, err
	}
	list, err := m.List()
	return list, m, err
}

// launched returns the Declarations to start (with a Launch), none when
// describing.
func (r *Runtime) launched() []Declaration {
	if r.opts.Describe {
		return nil
	}
	var out []Declaration
	for _, d := range r.opts.Declared {
		if d.Launch != nil {
			out = append(out, d)
		}
	}
	return out
}

// hostConfig is the plugin host's configuration for this workspace, less
// the manager and the vault.
func (r *Runtime) hostConfig() host.Config {
	def := r.opts.CallTimeout
	if def <= 0 {
		def = host.DefaultCallTimeout
	}
	call, tools := r.settings.Plugins.Resolve(def)
	return host.Config{Home: r.opts.Home, Workspace: r.dir, WorkspacePolicy: r.layer,
		RunPolicy: r.opts.RunPolicy, RunID: r.opts.RunID, Audit: r.opts.Audit, Unsafe: r.opts.UnsafeNoSandbox,
		Redactor: r.opts.Redactor, Resolver: r.opts.Resolver, UpstreamRootCAs: r.opts.RootCAs,
		CallTimeout: call, ToolTimeouts: tools, Limits: r.opts.Limits, Elicit: r.elicit(), Notify: r.opts.Notify, Sampling: r.sampling()}
}

// elicit is the door's elicitation prompt, except in dontAsk mode, which
// asks nobody: its requests are declined as headless ones are.
func (r *Runtime) elicit() func(context.Context, host.Elicitation) (host.ElicitAnswer, error) {
	if r.opts.Mode == gate.ModeDontAsk {
		return nil
	}
	return r.opts.Elicit
}

// sampling is the plugins' sampling: the door's sampler within the
// settings' budget when they allow it, else nil (refused).
func (r *Runtime) sampling() *host.Sampling {
	s := r.settings
	if s == nil || s.Sampling == nil || !s.Sampling.Allow || r.opts.Sampler == nil {
		return nil
	}
	return &host.Sampling{Provider: r.opts.Sampler, Model: r.opts.SamplerModel, MaxTokens: s.Sampling.MaxTokens}
}

// Declared returns the first Declared plugin, registered (a launched one
// is a *host.Plugin); nil when there is none.
func (r *Runtime) Declared() agent.Plugin {
	if len(r.declared) == 0 {
		return nil
	}
	return r.declared[0]
}

// declare registers the Declared plugins that are not launched, after
// Plugins (loadPlugins starts the launched ones).
func (r *Runtime) declare() error {
	for _, d := range r.opts.Declared {
		if d.Launch != nil && !r.opts.Describe {
			continue
		}
		p, err := host.Declare(r.hostConfig(), d.Manifest, d.Grant)
		if err != nil {
			return err
		}
		r.plugins = append(r.plugins, p)
		r.declared = append(r.declared, p)
	}
	return nil
}

func (r *Runtime) warn(err error) {
	if r.opts.Warn != nil {
		r.opts.Warn(err)
	}
}

// Changes returns the trusted files that differ from the versions the
// user accepted, as Open found them: a held one is not applied.
func (r *Runtime) Changes() []FileChange { return r.changes }

// Dir returns the absolute workspace directory.
func (r *Runtime) Dir() string { return r.dir }

// RunID returns the run's id.
func (r *Runtime) RunID() string { return r.opts.RunID }

// Mode returns the permission mode the runtime decides in.
func (r *Runtime) Mode() gate.Mode { return r.opts.Mode }

// Rules returns the permission rules in effect: Options.Rules and the
// settings' rules.
func (r *Runtime) Rules() policy.Rules { return r.opts.Rules }

// Layer returns the workspace policy; nil when there is none.
func (r *Runtime) Layer() *manifest.Layer { return r.layer }

// Policy returns the built-in tools' policy: the one value that decides
// their calls at the gate and bounds their file guard, shell sandbox and
// HTTP client.
func (r *Runtime) Policy() *policy.Set { return r.builtin.Policy }

// Sandbox reports whether the OS sandbox is used.
func (r *Runtime) Sandbox() bool { return r.sandbox }

// Plugins returns the loaded plugins.
func (r *Runtime) Plugins() []agent.Plugin { return r.plugins }

// PluginFailures returns the installed plugins that did not load, in the
// order they are installed; their tools are not registered.
func (r *Runtime) PluginFailures() []*PluginFailure { return slices.Clone(r.failed) }

// PluginFailure is an installed plugin that did not load: a manifest on
// disk that does not parse, a start that failed (with the server's last
// stderr line in Detail), a served tool the manifest does not declare
// (TOOL_UNDECLARED), a hold (PLUGIN_HELD).
type PluginFailure struct {
	Plugin string            // the plugin id
	Reason capability.Reason // why, coded
	// Detail says what went wrong (redacted by the host; it may hold what
	// the plugin printed, so escape it for a terminal).
	Detail string
	Err    error
}

// newPluginFailure codes err: the host's and the plugin manager's errors
// carry a reason; any other is a failed start.
func newPluginFailure(id string, err error) *PluginFailure {
	f := &PluginFailure{Plugin: id, Reason: capability.ReasonOf(err), Detail: err.Error(), Err: err}
	if e, ok := errors.AsType[*capability.Error](err); ok {
		f.Detail = e.Detail
	}
	if f.Reason == "" {
		f.Reason = host.ReasonPluginStart
	}
	return f
}

func (f *PluginFailure) Error() string {
	return fmt.Sprintf("plugin %s not loaded: %s: %s", f.Plugin, f.Reason, f.Detail)
}

func (f *PluginFailure) Unwrap() error { return f.Err }

// OpenExplain opens the runtime that decides without running — for
// `norma policy explain` and the agent hooks (package agenthook): it
// writes nothing to the state directory and opens no vault. With
// o.Describe, the installed plugins are registered as last served.
func OpenExplain(ctx context.Context, o Options) (*Runtime, error) {
	o.ReadOnly, o.Vault = true, nil
	if o.Dir == "" {
		o.Dir = "."
	}
	return Open(ctx, o)
}
