package workspace

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/norma-run/norma/gate"
	"github.com/norma-run/norma/hook"
	"github.com/norma-run/norma/manifest"
	"github.com/norma-run/norma/settings"
)

// HookTrustFile is where the trusted contents of workspace hook programs
// are recorded, under Norma's state directory.
const HookTrustFile = "hooks-trust.json"

// loadSettings reads the settings files and folds them into o: the rules
// join o.Rules, the mode follows the precedence of package settings, and
// the shell gets the settings' env.
func loadSettings(dir string, o *Options) (*settings.Settings, error) {
	so := o.Settings
	so.Workspace = dir
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
	if o.ShellEnv == nil {
		o.ShellEnv = []string{"LANG=C.UTF-8"}
	}
	o.ShellEnv = append(slices.Clone(o.ShellEnv), st.EnvList()...)
	return st, nil
}

// withNetwork is the workspace layer with the settings' network section
// folded in: requests and allow_private are the union of both. The result
// is the workspace's network ceiling and the built-in web tools'
// destinations.
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
		merged.Requests = slices.Clone(old.Requests)
		merged.AllowPrivate = slices.Clone(old.AllowPrivate)
	}
	merged.Requests = append(merged.Requests, n.Requests...)
	for _, p := range n.AllowPrivate {
		if !slices.Contains(merged.AllowPrivate, p) {
			merged.AllowPrivate = append(merged.AllowPrivate, p)
		}
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
		if !h.Trusted() {
			if trust == nil {
				return nil, fmt.Errorf("%s: hook %s needs trust, and there is no state directory to record it in", h.Source, h.Command)
			}
			if err := CheckHookProgram(r.dir, h.Argv[0]); err != nil {
				return nil, fmt.Errorf("%s: hook %s: %w", h.Source, h.Command, err)
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
