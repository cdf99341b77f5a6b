package policy

import (
	"fmt"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/manifest"
)

// Warning is a rule that can never take effect.
type Warning struct {
	Rule string `json:"rule"`
	Msg  string `json:"message"`
}

func (w Warning) String() string { return w.Rule + ": " + w.Msg }

// Lint reports allow rules that can never match: globs shadowed by a deny
// glob of any layer, and plugin rules outside what the grant or a ceiling
// layer admits. It judges coverage the way manifest.GlobCovers does, so it
// may miss a dead rule but never calls a live one dead.
func Lint(in Inputs) []Warning {
	if in.Manifest == nil {
		return nil
	}
	type named struct {
		name capability.Layer
		l    *manifest.Layer
	}
	others := []named{{capability.LayerGrant, in.Grant}, {capability.LayerWorkspace, in.Workspace}, {capability.LayerRun, in.Run}}
	var denies []struct{ rule, glob string }
	addDenies := func(layer capability.Layer, p manifest.Permissions) {
		if p.Filesystem == nil {
			return
		}
		for i, g := range p.Filesystem.Deny {
			denies = append(denies, struct{ rule, glob string }{fmt.Sprintf("%s:permissions.filesystem.deny[%d]", layer, i), g})
		}
	}
	addDenies(manifestLayer(in.Manifest), in.Manifest.Permissions)
	for _, o := range others {
		if o.l != nil {
			addDenies(o.name, o.l.Permissions)
		}
	}
	var out []Warning
	fs := in.Manifest.Permissions.Filesystem
	for _, list := range []struct {
		name  string
		globs []string
		get   func(*manifest.Filesystem) []string
	}{
		{"read", fs.Read, func(f *manifest.Filesystem) []string { return f.Read }},
		{"write", fs.Write, func(f *manifest.Filesystem) []string { return f.Write }},
	} {
		for i, g := range list.globs {
			rule := fmt.Sprintf("plugin:permissions.filesystem.%s[%d]", list.name, i)
			for _, d := range denies {
				if manifest.GlobCovers(d.glob, g) {
					out = append(out, Warning{rule, fmt.Sprintf("%s is shadowed by %s (%s)", g, d.rule, d.glob)})
				}
			}
			for _, o := range others {
				if o.l == nil || o.l.Permissions.Filesystem == nil {
					continue
				}
				bound := list.get(o.l.Permissions.Filesystem)
				if bound == nil {
					continue // a ceiling that does not speak of this list
				}
				if !overlapsAny(g, bound) {
					out = append(out, Warning{rule, fmt.Sprintf("%s is outside every %s %s glob", g, o.name, list.name)})
				}
			}
		}
	}
	for i, r := range in.Manifest.Permissions.Network.Requests {
		rule := fmt.Sprintf("plugin:permissions.network.requests[%d]", i)
		for _, o := range others {
			if o.l == nil || o.l.Permissions.Network == nil || o.l.Permissions.Network.Requests == nil {
				continue
			}
			found := false
			for _, x := range o.l.Permissions.Network.Requests {
				found = found || x.Origin == r.Origin
			}
			if !found {
				out = append(out, Warning{rule, fmt.Sprintf("origin %s is not in the %s layer", r.Origin, o.name)})
			}
		}
	}
	return out
}

// overlapsAny reports whether g and some glob of set can match a common
// path, judged conservatively (true when unsure).
func overlapsAny(g string, set []string) bool {
	for _, s := range set {
		if manifest.GlobCovers(s, g) || manifest.GlobCovers(g, s) || mayOverlap(g, s) {
			return true
		}
	}
	return false
}

// mayOverlap is true unless both globs have literal prefixes that diverge.
func mayOverlap(a, b string) bool {
	a, b = manifest.WorkspaceGlob(a), manifest.WorkspaceGlob(b)
	pa, pb := literalPrefix(a), literalPrefix(b)
	n := min(len(pa), len(pb))
	return pa[:n] == pb[:n]
}

func literalPrefix(g string) string {
	for i := 0; i < len(g); i++ {
		switch g[i] {
		case '*', '?', '[', '{', '\\':
			return g[:i]
		}
	}
	return g
}
