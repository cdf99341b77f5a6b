package settings

import (
	"maps"
	"slices"
	"strings"

	"github.com/norma-run/norma/manifest"
)

// Narrowing names the parts of a held version of a workspace settings
// file that only narrow the version the user accepted. Package workspace
// decides which parts those are, with the manifest diff engine, and
// applies them at once while the rest of the change waits for `norma
// policy trust`.
type Narrowing struct {
	// Ask and Deny are rules of the held version to add, by text.
	Ask, Deny []string
	// DropAllow are allow rules to remove, by text.
	DropAllow []string
	// Mode, when set, replaces the default mode.
	Mode string
	// DropDirs are additional directories to remove.
	DropDirs []string
	// DropEnv are environment entries (KEY=VALUE) to remove.
	DropEnv []string
	// Network, when set, replaces the network section.
	Network *manifest.Network
}

// Narrow returns the accepted version of a workspace settings file (nil:
// none) with n applied, as a new File; neither argument is changed. held
// is the held version (nil: none): the rules and the mode n takes from it
// keep its positions. Narrow adds no allow rule, hook or other grant:
// only ask and deny rules, and only removals otherwise. It returns nil
// when both versions are nil.
func Narrow(accepted, held *File, n Narrowing) *File {
	base := accepted
	if base == nil {
		base = held
	}
	if base == nil {
		return nil
	}
	out := &File{Path: base.Path, Scope: base.Scope}
	if accepted != nil {
		cp := *accepted
		out = &cp
		out.body.Env = maps.Clone(accepted.body.Env)
	}
	out.Rules = slices.DeleteFunc(slices.Clone(out.Rules), func(r Rule) bool {
		return r.List == "allow" && slices.Contains(n.DropAllow, r.Text)
	})
	for _, l := range []struct {
		list  string
		texts []string
	}{{"ask", n.Ask}, {"deny", n.Deny}} {
		for _, text := range l.texts {
			out.Rules = append(out.Rules, heldRule(out, held, l.list, text))
		}
	}
	if n.Mode != "" {
		out.mode, out.modeSource = n.Mode, Source{File: out.Path, Scope: out.Scope, Line: 1, Col: 1}
		if held != nil && held.mode != "" {
			out.modeSource = held.modeSource
		}
	}
	out.dirs = slices.DeleteFunc(slices.Clone(out.dirs), func(d string) bool { return slices.Contains(n.DropDirs, d) })
	for _, e := range n.DropEnv {
		k, v, _ := strings.Cut(e, "=")
		if cur, ok := out.body.Env[k]; ok && cur == v {
			delete(out.body.Env, k)
		}
	}
	if n.Network != nil {
		out.body.Network = n.Network
	}
	return out
}

// heldRule is the rule of list with text as held states it, with its
// position; at the start of the file when held does not have it.
func heldRule(out, held *File, list, text string) Rule {
	if held != nil {
		if i := slices.IndexFunc(held.Rules, func(r Rule) bool { return r.List == list && r.Text == text }); i >= 0 {
			return held.Rules[i]
		}
	}
	return Rule{List: list, Text: text, Source: Source{File: out.Path, Scope: out.Scope, Line: 1, Col: 1}}
}
