package runtime

import (
	"errors"
	"fmt"
	"github.com/norma-run/norma/agentfiles"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/norma-run/norma/gate"
	"github.com/norma-run/norma/hook"
	"github.com/norma-run/norma/manifest"
	"github.com/norma-run/norma/policy"
	"github.com/norma-run/norma/settings"
)

// HookTrustFile is where the trusted contents of workspace hook programs
// are recorded, under Norma's state directory.
const HookTrustFile = "hooks-trust.json"

// loadSettings reads the settings files, the workspace's own by read (the
// versions the user accepted), and folds them into o: the rules
// join o.Rules, the mode follows the precedence of package settings, and
// the shell gets the settings' env.
func loadSettings(dir string, o *Options, read func(string, settings.Scope) (*settings.File, error)) (*settings.Settings, error) {
	so := o.Settings
	so.Workspace = dir
	so.ReadWorkspace = read
	st, err := settings.Load(so)
	if err != nil {
		return nil, err
	}
	r := st.PolicyRules()
	o.Rules.Allow = append(slices.Clone(o.Rules.Allow), r.Allow...)
	o.Rules.Ask = append(slices.Clone(o.Rules.Ask), r.Ask...)
	o.Rules.Deny = append(slices.Clone(o.Rules.Deny), r.Deny...)
	if st.DefaultMode != "" && (st.ManagedMode || !o.ModeGiven) {
		m, err := gate.ParseMode(st.DefaultMode)
		if err != nil {
			return nil, fmt.Errorf("%s: permissions.defaultMode: %w", st.DefaultModeSource, err)
		}
		o.Mode = m
	}
	if o.NarrowMode != nil {
		o.Mode = o.NarrowMode(o.Mode)
	}
	if o.ShellEnv == nil {
		o.ShellEnv = []string{"LANG=C.UTF-8"}
	}
	o.ShellEnv = append(slices.Clone(o.ShellEnv), st.EnvList()...)
	return st, nil
}

// withNetwork is the workspace layer with the settings' network section
// folded in where .norma/policy.yaml does not speak: its requests and
// allow_private, when the policy file has none, become the workspace's
// network ceiling. Where the policy file has them, they stand: settings
// never widen the policy file's ceiling (their requests are still the
// built-in web tools' destinations, capped by it; see toolsConfig).
func withNetwork(l *manifest.Layer, n *manifest.Network) *manifest.Layer {
	if n == nil {
		return l
	}
	out := &manifest.Layer{SchemaVersion: 2, Kind: manifest.KindWorkspace}
	if l != nil {
		cp := *l
		out = &cp
	}
	merged := &manifest.Network{}
	if old := out.Permissions.Network; old != nil {
		cp := *old
		merged = &cp
	}
	if merged.Requests == nil {
		merged.Requests = slices.Clone(n.Requests)
	}
	if merged.AllowPrivate == nil {
		merged.AllowPrivate = slices.Clone(n.AllowPrivate)
	}
	out.Permissions.Network = merged
	return out
}

// Settings returns the effective settings.
func (r *Runtime) Settings() *settings.Settings { return r.settings }

// hookRegistry registers the settings' command hooks. Hooks of the
// workspace's files and --settings run only once their program's content
// is trusted (norma hooks trust); an untrusted one fails, which denies the
// call it gates.
func (r *Runtime) hookRegistry() (*hook.Registry, error) {
	if len(r.settings.Hooks) == 0 {
		return nil, nil
	}
	var trust *hook.TrustStore
	if r.opts.Home != "" {
		ts, err := hook.OpenTrustStore(filepath.Join(r.opts.Home, HookTrustFile))
		if err != nil {
			return nil, err
		}
		trust = ts
	}
	reg := hook.NewRegistry(nil)
	for _, h := range r.settings.Hooks {
		c := &hook.Command{Path: h.Argv[0], Args: h.Argv[1:], Dir: r.dir,
			Env: []string{"CLAUDE_PROJECT_DIR=" + r.dir, "NORMA_WORKSPACE=" + r.dir}}
		needs, err := HookNeedsTrust(r.dir, h)
		if err != nil {
			return nil, fmt.Errorf("%s: hook %s: %w", h.Source, h.Command, err)
		}
		if needs {
			if trust == nil {
				return nil, fmt.Errorf("%s: hook %s needs trust, and there is no state directory to record it in", h.Source, h.Command)
			}
			c.Trust = trust
		}
		if err := reg.Add(hook.Hook{Name: h.Source.String(), Event: h.Event, Matcher: h.Matcher, Handler: c,
			Timeout: h.Timeout}); err != nil {
			return nil, fmt.Errorf("%s: %w", h.Source, err)
		}
	}
	return reg, nil
}

// CheckHookProgram refuses a hook program of a workspace file that is not a
// file of the workspace itself, symlinks resolved. Trust covers the
// program's content and the verified copy of that content is what runs,
// so the program must be the script itself: an interpreter from the host
// (/bin/bash ./x.sh, python3 -c ...) would run workspace text nobody
// trusted.
func CheckHookProgram(dir, program string) error {
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return err
	}
	p, err := filepath.EvalSymlinks(program)
	if err != nil {
		return fmt.Errorf("hook program: %w", err)
	}
	if rel, err := filepath.Rel(root, p); err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return fmt.Errorf("the program of a workspace hook must be a file in the workspace (a script whose content `norma hooks trust` records), not %s; call host programs from such a script", p)
	}
	return nil
}

// HookNeedsTrust reports whether h runs only once `norma hooks trust`
// recorded its program and arguments: every hook of a workspace,
// local or --settings file (whose program must then be a file of the
// workspace, see CheckHookProgram), and a user or managed hook whose
// program lives in the workspace, where the agent could change it.
func HookNeedsTrust(dir string, h settings.Hook) (bool, error) {
	inside := CheckHookProgram(dir, h.Argv[0]) == nil
	if h.Trusted() {
		return inside, nil
	}
	if !inside {
		return false, CheckHookProgram(dir, h.Argv[0])
	}
	return true, nil
}

// protected are the workspace files that no tool and no plugin may read
// or write, whatever a grant or a policy says: the hidden part of the
// agent-file catalogue (agentfiles.Hidden, which says why). The rest of
// the catalogue is refused for writes by the gate's floor and kept
// read-only by the sandbox.
var protected = agentfiles.Hidden()

// makeInside creates the user settings directory when it lies inside the
// workspace and does not exist yet (a run in $HOME without
// ~/.config/norma). A directory that exists is pinned by the sandbox and
// hidden by identity; a missing one is neither, and Bash could create
// settings.yaml in it, which the next run would read as the user's own
// settings, trusted without `norma policy trust`.
func makeInside(ws, dir string) error {
	if dir == "" {
		return nil
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil
	}
	if _, err := os.Lstat(abs); !errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	// The nearest existing ancestor decides, with links resolved.
	parent := filepath.Dir(abs)
	for {
		if _, err := os.Lstat(parent); err == nil || filepath.Dir(parent) == parent {
			break
		}
		parent = filepath.Dir(parent)
	}
	rel, err := filepath.Rel(realPath(ws), realPath(parent))
	if err != nil || !filepath.IsLocal(rel) && rel != "." {
		return nil
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return fmt.Errorf("workspace: creating the user settings directory %s inside the workspace: %w", dir, err)
	}
	return nil
}

// withFloor adds the workspace's floor to its policy layer: the protected
// files, Norma's state and user settings directories when they lie inside
// the workspace (a run in $HOME), and the globs of the path deny rules
// (ruleDenies): hidden (Read) ones join the deny list, readOnly (Write,
// Edit) ones the deny_write list, which refuses writes only and which the
// sandbox shows read-only (sandboxpolicy.Derive). A deny in the workspace layer
// binds every built-in tool and plugin and hides the paths in the shell's
// sandbox, whose pins keep these names from being moved (see
// sandboxpolicy.Derive); the file tools also refuse the directories by
// identity (agent.WithProtected). The directories are compared with
// symbolic links resolved, as the guards name paths: a workspace or a
// state directory given through a link is still found inside.
func withFloor(l *manifest.Layer, dir string, hidden, readOnly []string, others ...string) *manifest.Layer {
	deny := slices.Clone(protected)
	dir = realPath(dir)
	for _, o := range others {
		if o == "" {
			continue
		}
		abs, err := filepath.Abs(o)
		if err != nil {
			continue
		}
		rel, err := filepath.Rel(dir, realPath(abs))
		if err != nil || rel == ".." || strings.HasPrefix(rel, "../") || strings.ContainsAny(rel, "*?[]{}\\") {
			continue
		}
		if rel == "." {
			rel = "**" // the state directory is the workspace: deny nothing less
		} else {
			rel += "/**"
		}
		deny = append(deny, rel)
	}
	out := &manifest.Layer{SchemaVersion: 2, Kind: manifest.KindWorkspace}
	if l != nil {
		cp := *l
		out = &cp
	}
	fs := &manifest.Filesystem{}
	if out.Permissions.Filesystem != nil {
		cp := *out.Permissions.Filesystem
		fs = &cp
	}
	globs := make([]string, 0, len(deny)+len(hidden))
	for _, d := range deny {
		globs = append(globs, manifest.WorkspaceScheme+d)
	}
	for _, g := range append(globs, hidden...) {
		if !slices.Contains(fs.Deny, g) {
			fs.Deny = append(slices.Clone(fs.Deny), g)
		}
	}
	for _, g := range readOnly {
		if !slices.Contains(fs.DenyWrite, g) && !slices.Contains(fs.Deny, g) {
			fs.DenyWrite = append(slices.Clone(fs.DenyWrite), g)
		}
	}
	out.Permissions.Filesystem = fs
	return out
}

// realPath is p with symbolic links resolved, or p itself when it cannot
// be resolved (it does not exist yet: nothing to find under it).
func realPath(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return p
}

// ruleDenies are the globs of the path deny rules, apart by verb
// (policy.DenyGlobs): they join the workspace layer's floor, so that a
// deny rule also binds what the rule matcher does not see — a file a
// shell command names as an argument (cat secrets/key) or writes by a
// name the analysis cannot see, and the plugins' own file access. A Read
// deny hides the path; a Write or Edit deny keeps it read-only.
func ruleDenies(r policy.Rules) (hidden, readOnly []string) {
	return policy.DenyGlobs(r.Deny)
}
