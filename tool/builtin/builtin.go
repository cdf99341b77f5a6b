package builtin

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/norma-run/norma/manifest"
	"github.com/norma-run/norma/policy"
	"github.com/norma-run/norma/tool"
	"github.com/norma-run/norma/tool/builtin/shell"
)

// manifestJSON is manifest.yaml as manifest.Parse reads it, in its
// canonical JSON (so its SHA-256 is its digest), written by
// TestBuiltinManifestPassesSchema -update, which fails when the two
// differ. Decoding it is a tenth of parsing the YAML and canonicalizing it
// for the digest, which each start of a run, a hook or `norma policy
// explain` did (issue 20).
//
//go:embed manifest.json
var manifestJSON []byte

// ManifestID is the id of the built-in tools' manifest.
const ManifestID = manifest.BuiltinID

// Config configures the built-in tools of one session. The zero Config
// installs every tool that needs no host service; tools whose host service
// is missing are still installed and fail closed (HOST_UNAVAILABLE,
// PLAN_EXIT_DENIED) so that the model learns why.
type Config struct {
	// Network are the destinations WebFetch may reach, added to the
	// built-in manifest's permissions.network (the plugin layer of the
	// built-in tools). Without any, WebFetch is installed but every fetch
	// is denied by policy (NETWORK_DESTINATION_DENIED). See [AnyPath].
	Network []manifest.NetRule
	// Search is the WebSearch backend; nil means WebSearch is not
	// installed. Its network rules and secret are added to the manifest.
	Search SearchBackend
	// MaxReadBytes is Read's size cap; zero means DefaultMaxReadBytes.
	MaxReadBytes int64
	// MaxFetchBytes is WebFetch's response cap; zero means
	// DefaultMaxFetchBytes.
	MaxFetchBytes int64

	// SessionID keys the todo list; empty means the run id of each call.
	SessionID string
	// Todos persists TodoWrite's lists; nil keeps them in memory for the
	// life of the process (use FileTodoStore under the state directory).
	Todos TodoStore
	// Ask answers AskUser; nil is a headless run.
	Ask AskFunc
	// ConsentExitPlan is asked before ExitPlanMode leaves plan mode; nil
	// means plan mode can only be left by the host.
	ConsentExitPlan ConsentFunc
	// Gate is bound to the session's gate once it exists; plan mode and
	// ExecuteExtraTool need it. Nil makes them fail closed.
	Gate *GateRef
	// Registry is the session's tool registry, for Skill's unlocks and
	// SearchExtraTools; Catalog describes its deferred tools.
	Registry *tool.Registry
	Catalog  *Catalog

	// Shell, when set, installs the shell tools (package tools/shell):
	// Build compiles the policy for them with Policy and calls shell.Tools.
	// Their processes run through the process capability of each call's
	// Env, which the host builds from [Builtin.Policy]
	// (sandboxpolicy.NewRunner).
	Shell *shell.Config
	// Policy compiles the effective policy of the built-in tools from their
	// manifest (with the host's grant, workspace and run layers). Build
	// calls it exactly once and returns the result as [Builtin.Policy], so
	// that the one compiled value bounds the gate, the file guard, the
	// shell sandbox and the HTTP client. Required with Shell, whose sandbox
	// grants exactly what that policy allows.
	Policy func(*manifest.Manifest) (*policy.Set, error)
}

// AnyPath returns rules admitting GET on origin for every path of at most
// depth segments (the manifest's path templates have no wildcard), for
// hosts that grant WebFetch a whole site.
func AnyPath(origin string, depth int) manifest.NetRule {
	paths := []string{"/"}
	p := ""
	for i := range min(depth, 16) {
		p += fmt.Sprintf("/{p%d}", i)
		paths = append(paths, p)
	}
	return manifest.NetRule{Origin: origin, Methods: []string{"GET"}, Paths: paths}
}

// Builtin is the result of [Build].
type Builtin struct {
	// Manifest is the parsed built-in manifest, network rules included:
	// compile the built-in tools' policy from it (policy.Inputs.Manifest).
	Manifest *manifest.Manifest
	// Tools are every installed tool, in catalogue order. Register them as
	// built-in (the zero tool.Plugin) and Visible.
	Tools []tool.CoreTool
	// Policy is the built-in tools' compiled policy, from Config.Policy;
	// nil without it. Decide the built-in tools with this value only.
	Policy *policy.Set
	// Shell owns the background tasks and PTYs; nil without Config.Shell.
	// Close it when the session ends.
	Shell *shell.Manager
}

// Builtins returns the built-in manifest and tools; see [Build].
func Builtins(cfg Config) (*manifest.Manifest, []tool.CoreTool, error) {
	b, err := Build(cfg)
	if err != nil {
		return nil, nil, err
	}
	return b.Manifest, b.Tools, nil
}

// Build validates cfg, parses the embedded manifest with the configured
// network rules through manifest.Parse, and builds every installed tool.
// Every tool it returns has an entry in the manifest; a misconfiguration
// (an invalid network rule, a search backend without a key, Shell without
// Policy) is an error, never a missing tool.
func Build(cfg Config) (*Builtin, error) {
	m, err := buildManifest(cfg)
	if err != nil {
		return nil, err
	}
	specs := fileSpecs(cfg)
	specs = append(specs, webSpecs(cfg)...)
	specs = append(specs, sessionSpecs(cfg)...)
	out := &Builtin{Manifest: m}
	if cfg.Policy != nil {
		if out.Policy, err = cfg.Policy(m); err != nil {
			return nil, fmt.Errorf("tools: compiling the built-in policy: %w", err)
		}
	}
	for _, s := range specs {
		t, err := tool.Build(s)
		if err != nil {
			return nil, fmt.Errorf("tools: %w", err)
		}
		out.Tools = append(out.Tools, t)
	}
	if cfg.Shell != nil {
		if out.Policy == nil {
			return nil, errors.New("tools: Config.Shell needs Config.Policy to compile the shell's policy")
		}
		mgr, ts, err := shell.Tools(*cfg.Shell)
		if err != nil {
			return nil, fmt.Errorf("tools: %w", err)
		}
		out.Shell = mgr
		out.Tools = append(out.Tools, ts...)
	}
	declared := map[string]bool{}
	for _, t := range m.Tools {
		declared[t.Name] = true
	}
	for _, t := range out.Tools {
		if !declared[t.Name()] {
			if out.Shell != nil {
				_ = out.Shell.Close()
			}
			return nil, fmt.Errorf("tools: built-in tool %s has no entry in the built-in manifest", t.Name())
		}
	}
	return out, nil
}

func fileSpecs(cfg Config) []tool.Spec {
	maxRead := cfg.MaxReadBytes
	if maxRead <= 0 {
		maxRead = DefaultMaxReadBytes
	}
	return []tool.Spec{readTool(maxRead), writeTool(), editTool(), multiEditTool(), lsTool(), globTool(), grepTool()}
}

func webSpecs(cfg Config) []tool.Spec {
	maxFetch := cfg.MaxFetchBytes
	if maxFetch <= 0 {
		maxFetch = DefaultMaxFetchBytes
	}
	specs := []tool.Spec{webFetchTool(maxFetch)}
	if cfg.Search != nil {
		specs = append(specs, webSearchTool(cfg.Search))
	}
	return specs
}

func sessionSpecs(cfg Config) []tool.Spec {
	todos := cfg.Todos
	if todos == nil {
		todos = &MemoryTodoStore{}
	}
	return []tool.Spec{
		todoWriteTool(todos, cfg.SessionID), askUserTool(cfg.Ask),
		enterPlanTool(cfg.Gate), exitPlanTool(cfg.Gate, cfg.ConsentExitPlan),
		memoryTool(), skillTool(cfg.Registry),
		searchExtraTool(cfg.Registry, cfg.Catalog), executeExtraTool(cfg.Gate),
	}
}

// buildManifest parses the embedded manifest, adds the network rules and
// secrets of cfg, and parses the result again, so that what the policy
// compiles has passed manifest.Parse's whole validation.
// Manifest returns the built-in tools' manifest with no configured network
// rule or search backend: the first policy layer of every built-in tool
// (reported as the builtin layer).
func Manifest() (*manifest.Manifest, error) { return buildManifest(Config{}) }

func buildManifest(cfg Config) (*manifest.Manifest, error) {
	base, err := embeddedManifest()
	if err != nil {
		return nil, fmt.Errorf("tools: the embedded manifest: %w", err)
	}
	rules := slices.Clone(cfg.Network)
	var secrets []manifest.Secret
	if cfg.Search != nil {
		r, s := cfg.Search.Permissions()
		rules = append(rules, r...)
		secrets = append(secrets, s...)
	}
	if len(rules) == 0 && len(secrets) == 0 {
		return base, nil
	}
	base.Permissions.Network = &manifest.Network{Requests: rules}
	base.Permissions.Secrets = append(base.Permissions.Secrets, secrets...)
	// JSON is YAML: the normalized manifest goes back through Parse.
	data, err := json.Marshal(base)
	if err != nil {
		return nil, fmt.Errorf("tools: built-in manifest: %w", err)
	}
	m, err := manifest.Parse("built-in manifest with configured network rules", data)
	if err != nil {
		return nil, fmt.Errorf("tools: the configured network rules or search backend are invalid: %w", err)
	}
	return m, nil
}

// embeddedManifest decodes manifestJSON.
func embeddedManifest() (*manifest.Manifest, error) { return manifest.FromCanonicalJSON(manifestJSON) }

// Info describes one built-in tool for `norma tools list`.
type Info struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	// Group is files, web, session or shell.
	Group string `json:"group"`
	// ReadOnly and ConcurrencySafe are the tool's answers for a typical
	// input; "input" when they depend on it.
	ReadOnly        string `json:"readOnly"`
	ConcurrencySafe string `json:"concurrencySafe"`
	// Permission is the tool's own judgment: allow (runs when policy allows)
	// or ask (needs an allow rule, acceptEdits or approval).
	Permission string `json:"permission"`
	// Approval and Effects are the manifest entry's.
	Approval string           `json:"approval"`
	Effects  manifest.Effects `json:"effects"`
	// Install is the condition under which Build installs the tool.
	Install string `json:"install"`
}

var groups = map[string]string{
	"Read": "files", "Write": "files", "Edit": "files", "MultiEdit": "files", "LS": "files", "Glob": "files", "Grep": "files",
	"WebFetch": "web", "WebSearch": "web",
}

var installConditions = map[string]string{
	"WebSearch":        "a search backend (Config.Search: brave or searxng)",
	"EnterPlanMode":    "always; works once Config.Gate is bound",
	"ExitPlanMode":     "always; leaving plan mode needs Config.ConsentExitPlan",
	"AskUser":          "always; headless runs answer HOST_UNAVAILABLE",
	"ExecuteExtraTool": "always; works once Config.Gate is bound",
	"SearchExtraTools": "always; needs Config.Registry",
	"Skill":            "always; unlocking needs Config.Registry",
	"WebFetch":         "always; reaches only the workspace policy's network destinations (Config.Network)",
}

// Catalogue describes every built-in tool, generated from the code: it
// builds the tools with a configuration that installs all of them (a
// placeholder search backend, the shell tools' own specs) and reads their
// judgments on a typical input.
func Catalogue(ctx context.Context) ([]Info, error) {
	b, err := everyTool()
	if err != nil {
		return nil, err
	}
	defer b.Shell.Close()
	ts := b.Tools
	entries := map[string]manifest.Tool{}
	for _, t := range b.Manifest.Tools {
		entries[t.Name] = t
	}
	out := make([]Info, 0, len(ts))
	for _, t := range ts {
		e, ok := entries[t.Name()]
		if !ok {
			return nil, fmt.Errorf("tools: %s has no manifest entry", t.Name())
		}
		in := typicalInput(t.Name())
		inf := Info{
			Name: t.Name(), Description: t.Description(), Group: groupOf(t.Name()),
			ReadOnly:        judge(func() bool { return t.ReadOnly(in) }),
			ConcurrencySafe: judge(func() bool { return t.ConcurrencySafe(in) }),
			Permission:      permOf(ctx, t, in),
			Approval:        e.Approval,
			Install:         installOf(t.Name()),
		}
		if e.Effects != nil {
			inf.Effects = *e.Effects
		}
		if d, ok := dependsOnInput[t.Name()]; ok {
			inf.ReadOnly = d
		}
		out = append(out, inf)
	}
	return out, nil
}

// dependsOnInput names tools whose read-only answer depends on the input.
var dependsOnInput = map[string]string{"Memory": "input", "Bash": "input"}

func typicalInput(name string) tool.Input {
	in, _ := tool.ParseInput([]byte(`{}`))
	if name == "Memory" {
		in, _ = tool.ParseInput([]byte(`{"action":"read"}`))
	}
	return in
}

func judge(f func() bool) (s string) {
	defer func() {
		if recover() != nil {
			s = "no"
		}
	}()
	if f() {
		return "yes"
	}
	return "no"
}

func permOf(ctx context.Context, t tool.CoreTool, in tool.Input) (s string) {
	defer func() {
		if recover() != nil {
			s = "deny"
		}
	}()
	return t.CheckPermissions(ctx, in).Behavior.String()
}

func groupOf(name string) string {
	if g, ok := groups[name]; ok {
		return g
	}
	switch name {
	case "Bash", "TaskList", "TaskOutput", "TaskStop", "Monitor":
		return "shell"
	}
	if strings.HasPrefix(name, "Pty") {
		return "shell"
	}
	return "session"
}

func installOf(name string) string {
	if c, ok := installConditions[name]; ok {
		return c
	}
	if groupOf(name) == "shell" {
		return "Config.Shell (the OS sandbox and a compiled policy)"
	}
	return "always"
}

// everyTool builds every built-in tool, WebSearch and the shell tools
// included. The shell tools are built without a process capability and
// never run: only their specs are read.
func everyTool() (*Builtin, error) {
	be, err := NewSearXNG("https://search.invalid")
	if err != nil {
		return nil, err
	}
	return Build(Config{
		Search: be,
		Shell:  &shell.Config{SessionID: "catalogue"},
		Policy: func(m *manifest.Manifest) (*policy.Set, error) { return policy.Compile(policy.Inputs{Manifest: m}) },
	})
}

// InputSchemas are every built-in tool's input schema, by tool name
// (gate's list of known-valid schemas is made from them).
func InputSchemas(context.Context) (map[string][]byte, error) {
	b, err := everyTool()
	if err != nil {
		return nil, err
	}
	defer b.Shell.Close()
	out := make(map[string][]byte, len(b.Tools))
	for _, t := range b.Tools {
		out[t.Name()] = t.InputSchema()
	}
	return out, nil
}

// CatalogueMarkdown renders infos as the Markdown table that `norma tools
// list` prints and README.md embeds between its tools markers.
func CatalogueMarkdown(infos []Info) string {
	var b strings.Builder
	b.WriteString("| tool | group | read-only | concurrent | own check | approval | effects (data / external) | installed when |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|\n")
	for _, i := range infos {
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s | %s | %s / %s | %s |\n",
			i.Name, i.Group, i.ReadOnly, i.ConcurrencySafe, i.Permission, i.Approval,
			i.Effects.Data, i.Effects.ExternalState, strings.ReplaceAll(i.Install, "|", "/"))
	}
	return b.String()
}
