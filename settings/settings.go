package settings

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/norma-run/norma/hook"
	"github.com/norma-run/norma/internal/codeenv"
	"github.com/norma-run/norma/internal/shellcmd"
	"github.com/norma-run/norma/internal/termtext"
	"github.com/norma-run/norma/manifest"
	"github.com/norma-run/norma/policy"
)

//go:embed schema/v1.json
var schemaJSON []byte

// SchemaURL is where the settings JSON Schema is published.
const SchemaURL = "https://norma.dev/schema/settings/v1.json"

// SchemaJSON returns the settings JSON Schema (for editors).
func SchemaJSON() []byte { return slices.Clone(schemaJSON) }

var fields = []string{
	"permissions", "allow", "ask", "deny", "defaultMode", "additionalDirectories",
	"hooks", "matcher", "type", "command", "timeout", "network", "requests", "origin", "methods",
	"paths", "approval", "allow_private", "env", "allowManagedPermissionRulesOnly", "allowManagedHooksOnly",
	"plugins", "callTimeout", "toolTimeouts",
	"PreToolUse", "PostToolUse", "PostToolUseFailure", "UserPromptSubmit", "SessionStart", "SessionEnd",
	"Stop", "SubagentStart", "SubagentStop", "mcp", "sampling", "max_tokens",
	"agentHooks", "confineBash", "store", "egress", "secret", "sensitive", "to", "detector", "sha256",
}

var compiled = sync.OnceValues(func() (*manifest.Schema, error) {
	return manifest.CompileSchema(SchemaURL, schemaJSON, fields)
})

// Scope is where a settings file sits; a higher scope takes precedence for
// single values.
type Scope uint8

// Scopes, from the lowest precedence to the highest.
const (
	ScopeUser Scope = iota + 1
	ScopeWorkspace
	ScopeLocal
	ScopeFlag
	ScopeManaged
)

var scopeNames = [...]string{"", "user", "workspace", "local", "flag", "managed"}

// String returns the scope's name.
func (s Scope) String() string {
	if int(s) < len(scopeNames) && s != 0 {
		return scopeNames[s]
	}
	return fmt.Sprintf("unknown(%d)", uint8(s))
}

// MarshalText makes scopes print by name in JSON.
func (s Scope) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// trusted reports whether hooks of this scope run without `norma hooks
// trust`: the user's own file and the administrator's.
func (s Scope) trusted() bool { return s == ScopeUser || s == ScopeManaged }

// Source is where a value came from.
type Source struct {
	File  string `json:"file"`
	Line  int    `json:"line"`
	Col   int    `json:"col"`
	Scope Scope  `json:"scope"`
}

func (s Source) String() string {
	// The file's name is the workspace's or the caller's: escaped, so that
	// printing a Source on a terminal is safe (internal/termtext).
	return fmt.Sprintf("%s:%d:%d (%s)", termtext.Escape(s.File), s.Line, s.Col, s.Scope)
}

// Rule is one permission rule.
type Rule struct {
	// List is allow, ask or deny.
	List   string `json:"list"`
	Text   string `json:"rule"`
	Source Source `json:"source"`
}

// Hook is one command hook.
type Hook struct {
	Event   hook.Event    `json:"event"`
	Matcher string        `json:"matcher,omitempty"`
	Command string        `json:"command"`
	Timeout time.Duration `json:"timeout_ns,omitempty"`
	// Argv is the command with the workspace substituted: the program and
	// its literal arguments.
	Argv   []string `json:"argv"`
	Source Source   `json:"source"`
}

// Trusted reports whether the hook runs without `norma hooks trust`.
func (h Hook) Trusted() bool { return h.Source.Scope.trusted() }

// Settings are the effective settings of a workspace.
type Settings struct {
	// Files are the files read, lowest precedence first.
	Files []Source `json:"files"`
	Rules []Rule   `json:"rules"`
	// DefaultMode is the highest file's defaultMode ("" when none sets one).
	DefaultMode       string   `json:"default_mode,omitempty"`
	DefaultModeSource *Source  `json:"default_mode_source,omitempty"`
	ManagedMode       bool     `json:"-"` // the mode comes from managed settings
	AdditionalDirs    []string `json:"additional_directories,omitempty"`
	Hooks             []Hook   `json:"hooks"`
	// Network is the union of the files' network sections; nil when none
	// has one.
	Network *manifest.Network `json:"network,omitempty"`
	// Env is the shell's environment from the files (a higher file wins a
	// name).
	Env map[string]string `json:"env,omitempty"`
	// Plugins are the timeouts of plugin tool calls.
	Plugins PluginTimeouts `json:"plugins,omitzero"`
	// ManagedRulesOnly and ManagedHooksOnly are the managed locks.
	ManagedRulesOnly bool `json:"managed_rules_only,omitempty"`
	ManagedHooksOnly bool `json:"managed_hooks_only,omitempty"`
	// Ignored lists what a managed lock left out.
	Ignored []string `json:"ignored,omitempty"`
	// Sampling is the highest file's mcp.sampling; nil when none sets it.
	Sampling *Sampling `json:"sampling,omitempty"`
	// ConfineBash is the highest file's agentHooks.confineBash: whether
	// `norma hook claude-code` runs Claude Code's Bash commands inside
	// Norma's sandbox (nil: not set, which is yes). Turning it off lets
	// commands run in the agent's own shell, so only the user's own file,
	// --settings and managed settings may set it, not a workspace's.
	ConfineBash *bool `json:"confine_bash,omitempty"`
	// Store is the highest file's store: where the durable state lives
	// (a SQLite path or a postgres:// URL, see `norma --store`). It says
	// where approvals are decided and the audit chain is kept, so only
	// the user's own file, --settings and managed settings may set it,
	// not a workspace's. It may hold a password: never print it
	// unredacted (store.Redact).
	Store       string  `json:"-"`
	StoreSource *Source `json:"store_source,omitempty"`
	// Egress is the merged egress section (egress.go); nil when no file
	// has one.
	Egress *Egress `json:"egress,omitempty"`
}

// Sampling is mcp.sampling: whether plugins' MCP servers may ask the run's
// model for completions, and the token budget of the whole run. It spends
// the user's provider budget, so only the user's own file, --settings and
// managed settings may set it, not a workspace's.
type Sampling struct {
	Allow     bool   `json:"allow"`
	MaxTokens int    `json:"max_tokens,omitempty"`
	Source    Source `json:"source"`
}

// PluginTimeouts are the timeouts of plugin tool calls: plugins.callTimeout
// and plugins.toolTimeouts (seconds, by registry name mcp__SERVER__TOOL)
// of the highest file that sets each; managed settings' values are caps
// instead, that no call exceeds (see [PluginTimeouts.Resolve]).
type PluginTimeouts struct {
	Call  time.Duration            `json:"call_timeout_ns,omitempty"`
	Tools map[string]time.Duration `json:"tool_timeouts_ns,omitempty"`
	// CallSource and ToolSources say where each value came from.
	CallSource  *Source           `json:"call_timeout_source,omitempty"`
	ToolSources map[string]Source `json:"tool_timeout_sources,omitempty"`
	// MaxCall and MaxTools are the managed caps (zero, none).
	MaxCall  time.Duration            `json:"max_call_timeout_ns,omitempty"`
	MaxTools map[string]time.Duration `json:"max_tool_timeouts_ns,omitempty"`
}

// Resolve returns the timeout of every plugin tool call (Call, else def,
// the host's default) and those of the tools named in the settings
// (Tools, else that), each lowered to the managed caps: MaxCall for every
// call, MaxTools for its tool.
func (p PluginTimeouts) Resolve(def time.Duration) (call time.Duration, tools map[string]time.Duration) {
	capped := func(d, c time.Duration) time.Duration {
		if c > 0 && (d <= 0 || d > c) {
			return c
		}
		return d
	}
	call = def
	if p.Call > 0 {
		call = p.Call
	}
	call = capped(call, p.MaxCall)
	for _, m := range []map[string]time.Duration{p.Tools, p.MaxTools} {
		for name := range m {
			d := call
			if v := p.Tools[name]; v > 0 {
				d = v
			}
			if tools == nil {
				tools = map[string]time.Duration{}
			}
			tools[name] = capped(capped(d, p.MaxCall), p.MaxTools[name])
		}
	}
	return call, tools
}

// PolicyRules returns the permission rules for the gate.
func (s *Settings) PolicyRules() policy.Rules {
	var r policy.Rules
	for _, x := range s.Rules {
		switch x.List {
		case "allow":
			r.Allow = append(r.Allow, x.Text)
		case "ask":
			r.Ask = append(r.Ask, x.Text)
		case "deny":
			r.Deny = append(r.Deny, x.Text)
		}
	}
	return r
}

// Options names the files Load reads. Empty fields are not read.
type Options struct {
	// Workspace is the workspace directory (its .norma/settings.yaml and
	// .norma/settings.local.yaml).
	Workspace string
	// UserDir is the user's configuration directory
	// ($XDG_CONFIG_HOME/norma): its settings.yaml.
	UserDir string
	// Flag is the --settings file; it must exist.
	Flag string
	// Managed is the managed settings file (by default the caller passes
	// [ManagedPath]); a missing one is fine, a symbolic link or one not
	// owned by root or writable by group or others is refused.
	Managed string
	// ReadWorkspace, when set, stands in for reading the workspace's own
	// files (path, scope ScopeWorkspace or ScopeLocal): it returns the file
	// to merge, nil for none. Package workspace passes the version the
	// user accepted (see its Open).
	ReadWorkspace func(path string, scope Scope) (*File, error)
}

// ManagedPath is where managed settings live.
const ManagedPath = "/etc/norma/managed-settings.yaml"

// Files of the workspace, relative to it.
const (
	WorkspaceFile = ".norma/settings.yaml"
	LocalFile     = ".norma/settings.local.yaml"
)

// Load reads and merges the settings files o names. Errors are
// manifest.Errors (FILE:LINE:COL: field: message) for a bad file.
func Load(o Options) (*Settings, error) {
	type named struct {
		path     string
		scope    Scope
		required bool
	}
	var list []named
	if o.UserDir != "" {
		list = append(list, named{filepath.Join(o.UserDir, "settings.yaml"), ScopeUser, false})
	}
	if o.Workspace != "" {
		list = append(list, named{filepath.Join(o.Workspace, WorkspaceFile), ScopeWorkspace, false},
			named{filepath.Join(o.Workspace, LocalFile), ScopeLocal, false})
	}
	if o.Flag != "" {
		list = append(list, named{o.Flag, ScopeFlag, true})
	}
	if o.Managed != "" {
		list = append(list, named{o.Managed, ScopeManaged, false})
	}
	var files []*File
	for _, n := range list {
		if o.ReadWorkspace != nil && (n.scope == ScopeWorkspace || n.scope == ScopeLocal) {
			f, err := o.ReadWorkspace(n.path, n.scope)
			if err != nil {
				return nil, err
			}
			if f != nil {
				files = append(files, f)
			}
			continue
		}
		f, err := ReadFile(n.path, n.scope, o.Workspace)
		if errors.Is(err, fs.ErrNotExist) && !n.required {
			continue
		}
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	return Merge(files), nil
}

// ReadFile reads one settings file of scope. workspace substitutes
// $CLAUDE_PROJECT_DIR and $NORMA_WORKSPACE in hook commands. A managed
// file must be a regular file (not a symbolic link) owned by root and not
// writable by group or others; workspace and local files must be regular
// files. At most [manifest.MaxFileSize] bytes are read (a larger file is
// refused by [Parse]). A missing file is an error matching fs.ErrNotExist.
func ReadFile(path string, scope Scope, workspace string) (*File, error) {
	data, err := ReadData(path, scope)
	if err != nil {
		return nil, err
	}
	return Parse(path, data, scope, workspace)
}

// ReadData reads the bytes of one settings file of scope with the checks
// of [ReadFile], without parsing them.
func ReadData(path string, scope Scope) ([]byte, error) {
	flags := os.O_RDONLY
	switch scope {
	case ScopeManaged:
		// O_NOFOLLOW: the file itself is checked, not what a link names;
		// O_NONBLOCK: a FIFO does not block the open.
		flags |= syscall.O_NOFOLLOW | syscall.O_NONBLOCK
	case ScopeWorkspace, ScopeLocal:
		flags |= syscall.O_NONBLOCK
	}
	fh, err := os.OpenFile(path, flags, 0)
	if err != nil {
		if scope == ScopeManaged && errors.Is(err, syscall.ELOOP) {
			return nil, refuseManaged(path)
		}
		return nil, err
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil {
		return nil, err
	}
	switch scope {
	case ScopeManaged:
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok || st.Uid != 0 || fi.Mode().Perm()&0o022 != 0 || !fi.Mode().IsRegular() {
			return nil, refuseManaged(path)
		}
	case ScopeWorkspace, ScopeLocal:
		if !fi.Mode().IsRegular() {
			return nil, manifest.Errors{{File: path, Msg: "settings file is not a regular file"}}
		}
	}
	return io.ReadAll(io.LimitReader(fh, manifest.MaxFileSize+1))
}

func refuseManaged(path string) error {
	return manifest.Errors{{File: path, Msg: "managed settings are refused: the file must be a regular file owned by root and not writable by group or others"}}
}

// Merge merges parsed files, lowest precedence first.
func Merge(files []*File) *Settings {
	sort.SliceStable(files, func(i, j int) bool { return files[i].Scope < files[j].Scope })
	s := &Settings{}
	for _, f := range files {
		s.Files = append(s.Files, Source{File: f.Path, Scope: f.Scope, Line: 1, Col: 1})
		if f.Scope == ScopeManaged {
			s.ManagedRulesOnly = f.body.ManagedRulesOnly
			s.ManagedHooksOnly = f.body.ManagedHooksOnly
		}
	}
	for _, f := range files {
		s.merge(f)
	}
	return s
}

func (s *Settings) merge(f *File) {
	managed := f.Scope == ScopeManaged
	if s.ManagedRulesOnly && !managed {
		// The lock keeps out what widens: allow and ask rules. A deny
		// still narrows, so it still applies.
		dropped := 0
		for _, r := range f.Rules {
			if r.List == "deny" {
				s.Rules = append(s.Rules, r)
			} else {
				dropped++
			}
		}
		if dropped > 0 {
			s.Ignored = append(s.Ignored, fmt.Sprintf("%d allow and ask rules of %s (managed settings allow their own only; deny rules still apply)", dropped, termtext.Escape(f.Path)))
		}
	} else {
		s.Rules = append(s.Rules, f.Rules...)
	}
	if s.ManagedHooksOnly && !managed && len(f.Hooks) > 0 {
		s.Ignored = append(s.Ignored, fmt.Sprintf("%d hooks of %s (managed settings allow their own hooks only)", len(f.Hooks), termtext.Escape(f.Path)))
	} else {
		s.Hooks = append(s.Hooks, f.Hooks...)
	}
	if f.mode != "" {
		src := f.modeSource
		s.DefaultMode, s.DefaultModeSource, s.ManagedMode = f.mode, &src, managed
	}
	s.AdditionalDirs = append(s.AdditionalDirs, f.dirs...)
	if n := f.body.Network; n != nil {
		if s.Network == nil {
			s.Network = &manifest.Network{}
		}
		s.Network.Requests = append(s.Network.Requests, n.Requests...)
		for _, p := range n.AllowPrivate {
			if !slices.Contains(s.Network.AllowPrivate, p) {
				s.Network.AllowPrivate = append(s.Network.AllowPrivate, p)
			}
		}
	}
	if f.sampling != nil {
		s.Sampling = f.sampling
	}
	if c := f.body.AgentHooks; c != nil && c.ConfineBash != nil {
		v := *c.ConfineBash
		s.ConfineBash = &v
	}
	if f.body.Store != "" {
		src := f.storeSource
		s.Store, s.StoreSource = f.body.Store, &src
	}
	s.mergePlugins(f)
	s.mergeEgress(f)
	for k, v := range f.body.Env {
		if s.Env == nil {
			s.Env = map[string]string{}
		}
		s.Env[k] = v
	}
}

// mergePlugins folds f's plugin timeouts in: a higher file's value wins,
// a managed file's is a cap.
func (s *Settings) mergePlugins(f *File) {
	pl := f.body.Plugins
	if pl == nil {
		return
	}
	p := &s.Plugins
	managed := f.Scope == ScopeManaged
	if pl.CallTimeout > 0 {
		d := seconds(pl.CallTimeout)
		if managed {
			p.MaxCall = d
		} else {
			src := f.pluginSources["/plugins/callTimeout"]
			p.Call, p.CallSource = d, &src
		}
	}
	for name, v := range pl.ToolTimeouts {
		d := seconds(v)
		if managed {
			if p.MaxTools == nil {
				p.MaxTools = map[string]time.Duration{}
			}
			p.MaxTools[name] = d
			continue
		}
		if p.Tools == nil {
			p.Tools, p.ToolSources = map[string]time.Duration{}, map[string]Source{}
		}
		p.Tools[name], p.ToolSources[name] = d, f.pluginSources["/plugins/toolTimeouts/"+name]
	}
}

func seconds(v float64) time.Duration { return time.Duration(v * float64(time.Second)) }

// EnvList returns Env as KEY=VALUE entries, sorted.
func (s *Settings) EnvList() []string {
	out := make([]string, 0, len(s.Env))
	for k, v := range s.Env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// File is one parsed settings file.
type File struct {
	Path  string
	Scope Scope
	Rules []Rule
	Hooks []Hook

	body          body
	mode          string
	modeSource    Source
	dirs          []string
	pluginSources map[string]Source // by JSON pointer
	sampling      *Sampling
	storeSource   Source
	egressSet     *Egress
}

type body struct {
	Permissions *struct {
		Allow                 []string `yaml:"allow"`
		Ask                   []string `yaml:"ask"`
		Deny                  []string `yaml:"deny"`
		DefaultMode           string   `yaml:"defaultMode"`
		AdditionalDirectories []string `yaml:"additionalDirectories"`
	} `yaml:"permissions"`
	Hooks map[string][]struct {
		Matcher string `yaml:"matcher"`
		Hooks   []struct {
			Type    string  `yaml:"type"`
			Command string  `yaml:"command"`
			Timeout float64 `yaml:"timeout"`
		} `yaml:"hooks"`
	} `yaml:"hooks"`
	Network *manifest.Network `yaml:"network"`
	Env     map[string]string `yaml:"env"`
	Plugins *struct {
		CallTimeout  float64            `yaml:"callTimeout"`
		ToolTimeouts map[string]float64 `yaml:"toolTimeouts"`
	} `yaml:"plugins"`
	ManagedRulesOnly bool `yaml:"allowManagedPermissionRulesOnly"`
	ManagedHooksOnly bool `yaml:"allowManagedHooksOnly"`
	MCP              *struct {
		Sampling *struct {
			Allow     bool `yaml:"allow"`
			MaxTokens int  `yaml:"max_tokens"`
		} `yaml:"sampling"`
	} `yaml:"mcp"`
	AgentHooks *struct {
		ConfineBash *bool `yaml:"confineBash"`
	} `yaml:"agentHooks"`
	Store  string      `yaml:"store"`
	Egress *egressBody `yaml:"egress"`
}

// Parse parses a settings file (YAML, or JSON, which is YAML) of scope.
// Every problem is reported, as manifest.Errors. Lines end in \n or
// \r\n; a bare \r is refused at its FILE:LINE:COL, since YAML would
// break a line there that positions, editors and grep do not.
func Parse(path string, data []byte, scope Scope, workspace string) (*File, error) {
	schema, err := compiled()
	if err != nil {
		return nil, err
	}
	if line, col, ok := bareCR(data); ok {
		return nil, manifest.Errors{{File: path, Line: line, Col: col,
			Msg: `line break is a bare carriage return (\r): end lines with \n or \r\n`}}
	}
	f := &File{Path: path, Scope: scope}
	if blank(data) {
		// An empty file, or one of comments only, sets nothing (a YAML
		// stream with no document).
		return f, nil
	}
	doc, err := manifest.ParseDocument(path, data, schema, &f.body)
	if err != nil {
		if probs, ok := err.(manifest.Errors); ok {
			// Schema problems at one position (propertyNames) come in map
			// order; make the report the same every time.
			sortProblems(probs)
		}
		return nil, err
	}
	var probs manifest.Errors
	if scope != ScopeManaged {
		for _, k := range []struct {
			name string
			set  bool
		}{{"allowManagedPermissionRulesOnly", f.body.ManagedRulesOnly}, {"allowManagedHooksOnly", f.body.ManagedHooksOnly}} {
			if k.set {
				probs = append(probs, doc.Problem("/"+k.name, "belongs in managed settings only"))
			}
		}
	}
	probs = append(probs, f.permissions(doc)...)
	probs = append(probs, f.hooks(doc, workspace)...)
	probs = append(probs, f.network(doc)...)
	probs = append(probs, f.env(doc, scope)...)
	probs = append(probs, f.mcp(doc, scope)...)
	probs = append(probs, f.agentHooks(doc, scope)...)
	probs = append(probs, f.store(doc, scope)...)
	probs = append(probs, f.plugins(doc)...)
	probs = append(probs, f.egress(doc, scope)...)
	if len(probs) > 0 {
		// In file order, as manifest.Errors are (hooks are checked in
		// event order, network problems come from a second parse).
		sortProblems(probs)
		return nil, probs
	}
	return f, nil
}

// mcp checks mcp.sampling: not in a workspace's files, and a budget
// (max_tokens) whenever it is allowed.
func (f *File) mcp(doc *manifest.Document, scope Scope) manifest.Errors {
	if f.body.MCP == nil || f.body.MCP.Sampling == nil {
		return nil
	}
	smp := f.body.MCP.Sampling
	if scope == ScopeWorkspace || scope == ScopeLocal {
		return manifest.Errors{doc.Problem("/mcp/sampling", "sampling spends your provider budget: set it in your user settings, --settings or managed settings, not in a workspace's")}
	}
	if smp.Allow && smp.MaxTokens == 0 {
		return manifest.Errors{doc.Problem("/mcp/sampling", "allow: true needs max_tokens, the token budget of a run")}
	}
	f.sampling = &Sampling{Allow: smp.Allow, MaxTokens: smp.MaxTokens, Source: f.source(doc, "/mcp/sampling")}
	return nil
}

// agentHooks checks agentHooks.confineBash: not in a workspace's files,
// whose author would otherwise let the agent's commands out of the
// sandbox.
func (f *File) agentHooks(doc *manifest.Document, scope Scope) manifest.Errors {
	if f.body.AgentHooks == nil || f.body.AgentHooks.ConfineBash == nil {
		return nil
	}
	if scope == ScopeWorkspace || scope == ScopeLocal {
		return manifest.Errors{doc.Problem("/agentHooks/confineBash", "whether an agent's commands run in Norma's sandbox is yours to choose: set it in your user settings, --settings or managed settings, not in a workspace's")}
	}
	return nil
}

// store checks store: not in a workspace's files, whose author would
// otherwise send the run's approvals and audit events to a database of
// their choosing (and have its requests approved there).
func (f *File) store(doc *manifest.Document, scope Scope) manifest.Errors {
	if f.body.Store == "" {
		return nil
	}
	if scope == ScopeWorkspace || scope == ScopeLocal {
		return manifest.Errors{doc.Problem("/store", "where approvals are decided and the audit log is kept is yours to choose: set store in your user settings or managed settings, not in a workspace's")}
	}
	f.storeSource = f.source(doc, "/store")
	return nil
}

// env refuses the variables that change which code runs ([codeenv]): the
// search paths and options of programs (PATH, HOME, GIT_*, NODE_OPTIONS,
// …) outside managed settings, where only an administrator sets them; a
// shell's code and options and the loader's (BASH_ENV, PS4, LD_PRELOAD,
// …) in every scope, as the sandbox refuses them in every environment.
func (f *File) env(doc *manifest.Document, scope Scope) manifest.Errors {
	var probs manifest.Errors
	for k := range f.body.Env {
		var msg string
		switch c := codeenv.Of(k); {
		case c == codeenv.Shell:
			msg = "changes which code runs; the shell or the loader runs what it holds, out of the gate's sight: refused in every settings file and by the sandbox"
		case c == codeenv.Search && scope != ScopeManaged:
			msg = "changes which code runs; programs load the code, modules or configuration it names, out of the gate's sight: only managed settings may set it"
		default:
			continue
		}
		probs = append(probs, doc.KeyProblem("/env/"+k, msg))
	}
	return probs
}

// pluginTool is a plugin tool's registry name, mcp__SERVER__TOOL (a
// server name or plugin id, a manifest tool name).
var pluginTool = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^mcp__[A-Za-z0-9_.-]+__[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$`)
})

// plugins checks the tool names of plugins.toolTimeouts (the schema checks
// the values) and records where each timeout was set.
func (f *File) plugins(doc *manifest.Document) manifest.Errors {
	pl := f.body.Plugins
	if pl == nil {
		return nil
	}
	var probs manifest.Errors
	f.pluginSources = map[string]Source{}
	if pl.CallTimeout > 0 {
		f.pluginSources["/plugins/callTimeout"] = f.source(doc, "/plugins/callTimeout")
	}
	for name := range pl.ToolTimeouts {
		ptr := "/plugins/toolTimeouts/" + name
		if !pluginTool().MatchString(name) {
			probs = append(probs, doc.KeyProblem(ptr, fmt.Sprintf("%q is not a plugin tool's name: mcp__SERVER__TOOL, as the run lists them", name)))
			continue
		}
		f.pluginSources[ptr] = f.source(doc, ptr)
	}
	return probs
}

// bareCR finds the first \r not followed by \n, at the line and column
// (in characters) where grep, editors' "go to line" and every position
// Parse reports count it: lines end at \n. YAML also breaks lines at a
// bare \r, so a file with one would have rules on lines nobody else
// sees: "# x\rpermissions: ..." is a comment to a reader (and to blank)
// and a mapping to the YAML parser, and its positions point past the
// line they name. Refusing it keeps one line-break rule for everyone.
func bareCR(data []byte) (line, col int, ok bool) {
	line, col = 1, 1
	for i := 0; i < len(data); {
		r, n := utf8.DecodeRune(data[i:])
		switch {
		case r == '\r' && (i+1 == len(data) || data[i+1] != '\n'):
			return line, col, true
		case r == '\n':
			line, col = line+1, 1
		default:
			col++
		}
		i += n
	}
	return 0, 0, false
}

// blank reports whether data is blank lines and comments only, within the
// limits ParseDocument would check.
func blank(data []byte) bool {
	if len(data) > manifest.MaxFileSize || !utf8.Valid(data) || bytes.IndexByte(data, 0) >= 0 {
		return false
	}
	for line := range bytes.Lines(data) {
		if l := bytes.TrimSpace(line); len(l) > 0 && l[0] != '#' {
			return false
		}
	}
	return true
}

// sortProblems puts problems in file order, and those at one position in
// the order of their messages.
func sortProblems(probs manifest.Errors) {
	sort.SliceStable(probs, func(i, j int) bool {
		a, b := probs[i], probs[j]
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		if a.Col != b.Col {
			return a.Col < b.Col
		}
		return a.String() < b.String()
	})
}

func (f *File) source(doc *manifest.Document, ptr string) Source {
	l, c := doc.Pos(ptr)
	return Source{File: f.Path, Line: l, Col: c, Scope: f.Scope}
}

func (f *File) permissions(doc *manifest.Document) manifest.Errors {
	p := f.body.Permissions
	if p == nil {
		return nil
	}
	var probs manifest.Errors
	for _, l := range []struct {
		name  string
		rules []string
	}{{"allow", p.Allow}, {"ask", p.Ask}, {"deny", p.Deny}} {
		for i, text := range l.rules {
			ptr := fmt.Sprintf("/permissions/%s/%d", l.name, i)
			if err := checkRule(text); err != nil {
				probs = append(probs, doc.Problem(ptr, fmt.Sprintf("%q is not a permission rule: %v", text, err)))
				continue
			}
			f.Rules = append(f.Rules, Rule{List: l.name, Text: text, Source: f.source(doc, ptr)})
		}
	}
	if p.DefaultMode != "" {
		f.mode, f.modeSource = p.DefaultMode, f.source(doc, "/permissions/defaultMode")
	}
	f.dirs = p.AdditionalDirectories
	return probs
}

func (f *File) hooks(doc *manifest.Document, workspace string) manifest.Errors {
	var probs manifest.Errors
	events := make([]string, 0, len(f.body.Hooks))
	for e := range f.body.Hooks {
		events = append(events, e)
	}
	sort.Slice(events, func(i, j int) bool { return hookOrder(events[i]) < hookOrder(events[j]) })
	for _, e := range events {
		for i, m := range f.body.Hooks[e] {
			for j, h := range m.Hooks {
				ptr := fmt.Sprintf("/hooks/%s/%d/hooks/%d/command", e, i, j)
				argv, err := hookArgv(h.Command, workspace)
				if err != nil {
					probs = append(probs, doc.Problem(ptr, err.Error()))
					continue
				}
				f.Hooks = append(f.Hooks, Hook{Event: hook.Event(e), Matcher: m.Matcher, Command: h.Command,
					Timeout: time.Duration(h.Timeout * float64(time.Second)), Argv: argv, Source: f.source(doc, ptr)})
			}
		}
	}
	return probs
}

func hookOrder(e string) int { return slices.Index(hook.Events(), hook.Event(e)) }

// wsVar matches the variables that name the workspace in a hook command.
var wsVar = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`\$\{(?:CLAUDE_PROJECT_DIR|NORMA_WORKSPACE)\}|\$(?:CLAUDE_PROJECT_DIR|NORMA_WORKSPACE)\b`)
})

// wsMark stands for the workspace while the command is parsed, so that a
// workspace path holding spaces or shell characters stays one word.
const wsMark = "\x01norma-workspace\x01"

var errOneProgram = errors.New("a hook command is one program with literal arguments ($CLAUDE_PROJECT_DIR may name the workspace): no pipes, redirections, lists or other expansions")

// hookArgv is a hook command as a program and literal arguments, with the
// workspace substituted. A command that names the workspace ($CLAUDE_PROJECT_DIR,
// a relative program) needs an absolute workspace.
func hookArgv(cmd, workspace string) ([]string, error) {
	marked := wsVar().ReplaceAllLiteralString(cmd, wsMark)
	fx := shellcmd.Parse(marked)
	// The analysis also reports a program by its base name, for rules.
	if len(fx.Spawns) == 2 && len(fx.Spawns[1]) > 0 && fx.Spawns[1][0] == filepath.Base(fx.Spawns[0][0]) {
		fx.Spawns = fx.Spawns[:1]
	}
	if fx.Unknown != "" || len(fx.Spawns) != 1 || len(fx.Reads)+len(fx.Writes) > 0 || strings.ContainsAny(marked, ";|&<>`") {
		return nil, errOneProgram
	}
	argv := fx.Spawns[0]
	for _, w := range argv {
		// A word known only when a shell runs it ($HOME, globs, ~): there
		// is no shell to expand it.
		if strings.ContainsRune(w, 0) {
			return nil, errOneProgram
		}
	}
	if !strings.Contains(argv[0], "/") {
		name := strings.ReplaceAll(argv[0], wsMark, "$CLAUDE_PROJECT_DIR")
		return nil, fmt.Errorf("hook program %q: give its path (absolute, or relative to the workspace as ./%s)", name, name)
	}
	if (marked != cmd || !filepath.IsAbs(argv[0])) && !filepath.IsAbs(workspace) {
		return nil, fmt.Errorf("hook command %q names the workspace, and no absolute workspace is known", cmd)
	}
	for i := range argv {
		argv[i] = strings.ReplaceAll(argv[i], wsMark, workspace)
	}
	if !filepath.IsAbs(argv[0]) {
		argv[0] = filepath.Join(workspace, argv[0])
	}
	return argv, nil
}

func (f *File) network(doc *manifest.Document) manifest.Errors {
	n := f.body.Network
	if n == nil {
		return nil
	}
	// The section is the workspace policy's network section: checked by
	// the layer parser, with its positions mapped back here.
	l := &manifest.Layer{SchemaVersion: 2, Kind: manifest.KindWorkspace, Permissions: manifest.Permissions{Network: n}}
	data, err := l.Marshal()
	if err != nil {
		return manifest.Errors{doc.Problem("/network", err.Error())}
	}
	parsed, err := manifest.ParseLayer(f.Path+"#network", data)
	if err != nil {
		var probs manifest.Errors
		if pe, ok := err.(manifest.Errors); ok {
			for _, p := range pe {
				ptr := "/" + strings.ReplaceAll(strings.TrimPrefix(p.Field, "permissions."), ".", "/")
				probs = append(probs, doc.Problem(fieldPtr(ptr), p.Msg))
			}
			return probs
		}
		return manifest.Errors{doc.Problem("/network", err.Error())}
	}
	f.body.Network = parsed.Permissions.Network
	return nil
}

// fieldPtr turns "/network/requests[0]/origin" into a JSON pointer.
func fieldPtr(s string) string {
	s = strings.ReplaceAll(s, "[", "/")
	return strings.ReplaceAll(s, "]", "")
}
