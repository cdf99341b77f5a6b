package policy

import (
	"fmt"
	"path"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/norma-run/norma/manifest"
)

// pathBase is what a path rule's pattern is relative to.
type pathBase uint8

const (
	baseWorkspace pathBase = iota // ./x, /x, x, workspace://x
	baseAbs                       // //x: the file system's root
	baseHome                      // ~/x: the home directory
	baseParent                    // ../x: relative to the workspace, outside it
)

// pathPattern is a parsed path rule, before Rules.Root and Rules.Home
// place it.
type pathPattern struct {
	base pathBase
	// glob is a doublestar pattern: workspace-relative for
	// baseWorkspace, absolute for baseAbs, relative to the home directory
	// for baseHome, relative to the workspace for baseParent (starting
	// with ..).
	glob string
}

// parsePath parses the argument of a Read, Write or Edit rule in Claude
// Code's forms, which follow the gitignore specification:
//
//	//abs/x     an absolute path
//	~/x         a path in the home directory
//	/x          a path relative to the project root (the workspace)
//	./x, a/b    relative to the workspace
//	x, *.pem    no slash but a trailing one: a name at any depth
//	workspace://x  Norma's own form, relative to the workspace
func parsePath(arg string) (pathPattern, error) {
	var p pathPattern
	if strings.ContainsAny(arg, "\\\x00") {
		return p, fmt.Errorf("a path rule cannot hold a backslash or NUL")
	}
	if strings.HasPrefix(arg, "$") {
		return p, fmt.Errorf("variables such as $HOME are not expanded in path rules; write ~/ for the home directory")
	}
	var rel string
	switch {
	case strings.HasPrefix(arg, manifest.WorkspaceScheme):
		rel = strings.TrimPrefix(arg, manifest.WorkspaceScheme)
	case strings.HasPrefix(arg, "//"):
		g := path.Clean("/" + strings.TrimLeft(arg, "/"))
		if !doublestar.ValidatePattern(g) {
			return p, fmt.Errorf("%q is not a valid glob", arg)
		}
		return pathPattern{base: baseAbs, glob: g}, nil
	case arg == "~" || strings.HasPrefix(arg, "~/"):
		g := path.Clean(strings.TrimLeft(strings.TrimPrefix(arg, "~"), "/"))
		if g == "." {
			g = ""
		}
		if strings.HasPrefix(g, "..") || !doublestar.ValidatePattern(g) {
			return p, fmt.Errorf("%q is not a valid glob in the home directory", arg)
		}
		return pathPattern{base: baseHome, glob: g}, nil
	case strings.HasPrefix(arg, "~"):
		return p, fmt.Errorf("~user is not supported: write the path as //abs or ~/")
	case strings.HasPrefix(arg, "/"):
		rel = strings.TrimLeft(arg, "/")
	case arg == ".." || strings.HasPrefix(arg, "../"):
		g := path.Clean(arg)
		if !doublestar.ValidatePattern(g) {
			return p, fmt.Errorf("%q is not a valid glob", arg)
		}
		return pathPattern{base: baseParent, glob: g}, nil
	case strings.HasPrefix(arg, "./"):
		rel = strings.TrimPrefix(arg, "./")
	default:
		// gitignore: a pattern with no slash, but a trailing one, is a
		// name at any depth.
		if name := strings.TrimSuffix(arg, "/"); !strings.Contains(name, "/") && name != "**" {
			rel = "**/" + name
		} else {
			rel = arg
		}
	}
	rel = strings.TrimSuffix(rel, "/")
	if rel == "" || rel == "." {
		rel = "**"
	}
	n, err := manifest.NormalizeGlob(manifest.WorkspaceScheme + rel)
	if err != nil {
		return p, err
	}
	return pathPattern{base: baseWorkspace, glob: strings.TrimPrefix(n, manifest.WorkspaceScheme)}, nil
}

// pathMatcher is a path rule placed in the workspace: the globs a
// workspace-relative request path is matched against.
type pathMatcher struct {
	// rel are workspace-relative globs (compiled), any one matching.
	rel []glob
	// abs, when set, is an absolute glob matched against root + "/" +
	// the request's path, for a rule that names the workspace by an
	// absolute path that does not begin with it literally.
	abs  string
	root string
	fold bool // match lower-cased (deny and ask rules)
}

// place compiles p for a workspace at root with the home directory home
// (either "" when unknown: an absolute or home rule then matches no
// workspace path). broad (deny and ask) rules match case-insensitively
// and also match what lies under a matched directory (Read(./secrets)
// denies secrets/key), as a gitignore pattern does.
func (p pathPattern) place(root, home string, broad bool) pathMatcher {
	m := pathMatcher{fold: broad}
	g := p.glob
	switch p.base {
	case baseHome:
		if home == "" {
			return m
		}
		g = path.Join(home, g)
		if p.glob == "" {
			g = path.Clean(home)
		}
		fallthrough
	case baseAbs:
		if root == "" {
			return m
		}
		rel, ok := underRoot(g, root, broad)
		switch {
		case ok:
			g = rel
		case couldBeUnder(g, root, broad):
			m.abs, m.root = g, root
			if broad {
				m.abs, m.root = strings.ToLower(g), strings.ToLower(root)
			}
			return m
		default:
			return m // names nothing in the workspace
		}
	case baseParent:
		if root == "" {
			return m
		}
		abs := path.Join(root, g)
		rel, ok := underRoot(abs, root, broad)
		if !ok {
			return m // outside the workspace
		}
		g = rel
	}
	if broad {
		g = strings.ToLower(g)
	}
	m.rel = append(m.rel, compileGlob(g, ""))
	if broad && g != "**" && !strings.HasSuffix(g, "/**") {
		m.rel = append(m.rel, compileGlob(g+"/**", ""))
	}
	return m
}

// underRoot returns the absolute glob g relative to root when g starts
// with root's path literally ("**" for root itself).
func underRoot(g, root string, fold bool) (string, bool) {
	root = path.Clean(root)
	gg, rr := g, root
	if fold {
		gg, rr = strings.ToLower(g), strings.ToLower(root)
	}
	if gg == rr {
		return "**", true
	}
	if rr == "/" {
		return g[1:], g != "/"
	}
	if strings.HasPrefix(gg, rr+"/") && !strings.ContainsAny(root, meta) {
		return g[len(root)+1:], true
	}
	return "", false
}

// couldBeUnder reports whether the absolute glob g may match a path in
// root: its literal part before the first pattern character and root
// agree as far as both go.
func couldBeUnder(g, root string, fold bool) bool {
	if fold {
		g, root = strings.ToLower(g), strings.ToLower(root)
	}
	lit := g
	if i := strings.IndexAny(g, meta); i >= 0 {
		lit = g[:i]
	} else {
		return false // a literal path that underRoot did not place
	}
	r := path.Clean(root) + "/"
	return strings.HasPrefix(r, lit) || strings.HasPrefix(lit, r)
}

// match reports whether the workspace-relative path p matches.
func (m *pathMatcher) match(p string) bool {
	if m.fold {
		p = strings.ToLower(p)
	}
	for i := range m.rel {
		if m.rel[i].match(p) {
			return true
		}
	}
	if m.abs != "" {
		full := m.root + "/" + p
		if ok, _ := doublestar.Match(m.abs, full); ok {
			return true
		}
		if m.fold {
			ok, _ := doublestar.Match(m.abs+"/**", full)
			return ok
		}
	}
	return false
}

// denyGlob is the workspace:// glob of a path rule for a layer's deny
// list, which matches as the rule does for a deny: case-insensitively
// (each letter a class, [sS]) and what lies under a match too. ok is
// false for a rule not relative to the workspace.
func (p pathPattern) denyGlob() (string, bool) {
	if p.base != baseWorkspace {
		return "", false
	}
	var b strings.Builder
	class, depth := false, 0
	for _, c := range p.glob {
		switch {
		case c == '[':
			class = true
		case c == ']':
			class = false
		case c == '{' && !class:
			depth++
		case c == '}' && !class && depth > 0:
			depth--
		case c == ',' && !class && depth == 0:
			// A literal comma: the alternatives below would split it.
			b.WriteString("[,]")
			continue
		}
		lo, up := strings.ToLower(string(c)), strings.ToUpper(string(c))
		if class || lo == up {
			b.WriteRune(c)
			continue
		}
		b.WriteString("[" + lo + up + "]")
	}
	g := b.String()
	if p.glob != "**" && !strings.HasSuffix(p.glob, "/**") {
		// Whole alternatives: doublestar does not match "a*{,/**}"
		// against "a".
		g = "{" + g + "," + g + "/**}"
	}
	return manifest.WorkspaceScheme + g, true
}
