package manifest

import (
	"fmt"
	"net/netip"
	"path"
	"slices"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/norma-run/norma/guard/netguard/weburl"
)

// checker runs the semantic checks a schema cannot express and normalizes
// the document in place.
type checker struct {
	t     *tree
	probs []Problem
}

func (c *checker) add(ptr string, onKey bool, format string, args ...any) {
	c.probs = append(c.probs, c.t.problem(ptr, onKey, fmt.Sprintf(format, args...)))
}

func (c *checker) manifest(m *Manifest) {
	seen := map[string]int{}
	for i := range m.Tools {
		tl := &m.Tools[i]
		ptr := fmt.Sprintf("/tools/%d", i)
		if j, dup := seen[tl.Name]; dup {
			c.add(ptr+"/name", false, "tool name %q is already used by tools[%d]", tl.Name, j)
		}
		seen[tl.Name] = i
		switch {
		case tl.Risk != "" && tl.Effects != nil:
			c.add(ptr+"/risk", true, "give either effects or the risk shorthand, not both")
		case tl.Risk == "read":
			tl.Effects = &Effects{Data: "read", ExternalState: "none"}
		case tl.Risk == "external_write":
			tl.Effects = &Effects{Data: "send", ExternalState: "write"}
		case tl.Effects == nil:
			c.add(ptr, false, "tool %q needs effects (or the risk shorthand: read | external_write)", tl.Name)
		}
		tl.Risk = ""
		if tl.Approval == "" {
			// Fail closed: an undeclared approval policy means per action.
			tl.Approval = "per_action"
		}
	}
	slices.SortFunc(m.Tools, func(a, b Tool) int { return strings.Compare(a.Name, b.Name) })

	entry := path.Clean(m.Entrypoint)
	if path.IsAbs(m.Entrypoint) || entry == ".." || strings.HasPrefix(entry, "../") || strings.Contains(m.Entrypoint, "\\") || strings.ContainsRune(m.Entrypoint, 0) {
		c.add("/entrypoint", false, "entrypoint must be a relative path inside the package")
	} else {
		m.Entrypoint = entry
	}

	c.permissions(&m.Permissions, "/permissions", false)
	fillAllowList(&m.Permissions)
	c.launch(m)

	if ew := m.Permissions.ExternalWrites; ew != nil && ew.Default == "deny" {
		for i, tl := range m.Tools {
			if tl.Effects != nil && tl.Effects.ExternalState == "write" {
				c.add(fmt.Sprintf("/tools/%d", originalToolIndex(c.t, tl.Name, i)), false,
					"tool %q writes external state but permissions.external_writes.default is deny: it could never run", tl.Name)
			}
		}
	}
}

// originalToolIndex finds the index a tool had in the file before sorting,
// so the message points at the right line.
func originalToolIndex(t *tree, name string, fallback int) int {
	root, _ := t.root.(map[string]any)
	tools, _ := root["tools"].([]any)
	for i, x := range tools {
		if m, ok := x.(map[string]any); ok && m["name"] == name {
			return i
		}
	}
	return fallback
}

// permissions checks and normalizes a permissions section. layer is true
// for policy layer files, which may carry network.allow_private.
func (c *checker) permissions(p *Permissions, ptr string, layer bool) {
	if fs := p.Filesystem; fs != nil {
		fs.Read = c.globs(fs.Read, ptr+"/filesystem/read")
		fs.Write = c.globs(fs.Write, ptr+"/filesystem/write")
		fs.Deny = c.globs(fs.Deny, ptr+"/filesystem/deny")
	}
	if n := p.Network; n != nil {
		for i := range n.Requests {
			c.netRule(&n.Requests[i], fmt.Sprintf("%s/network/requests/%d", ptr, i))
		}
		slices.SortFunc(n.Requests, compareRule)
		n.Requests = slices.CompactFunc(n.Requests, func(a, b NetRule) bool { return compareRule(a, b) == 0 })
		if len(n.AllowPrivate) > 0 && !layer {
			c.add(ptr+"/network/allow_private", true, "allow_private belongs in a workspace or run policy, not here")
		}
		for i, s := range n.AllowPrivate {
			pfx, err := netip.ParsePrefix(s)
			if err != nil {
				if a, aerr := netip.ParseAddr(s); aerr == nil {
					pfx = netip.PrefixFrom(a, a.BitLen())
				} else {
					c.add(fmt.Sprintf("%s/network/allow_private/%d", ptr, i), false, "%q is not a CIDR prefix", s)
					continue
				}
			}
			n.AllowPrivate[i] = pfx.Masked().String()
		}
		n.AllowPrivate = sortUnique(n.AllowPrivate)
	}
	names := map[string]bool{}
	for i := range p.Secrets {
		s := &p.Secrets[i]
		sp := fmt.Sprintf("%s/secrets/%d", ptr, i)
		if names[s.Name] {
			c.add(sp+"/name", false, "secret %q is declared twice", s.Name)
		}
		names[s.Name] = true
		o, err := weburl.NormalizeOrigin(s.Purpose)
		if err != nil {
			c.add(sp+"/purpose", false, "purpose must be an origin (scheme://host[:port]): %v", errDetail(err))
		} else {
			s.Purpose = o
		}
		s.Scopes = sortUnique(s.Scopes)
	}
	slices.SortFunc(p.Secrets, func(a, b Secret) int { return strings.Compare(a.Name, b.Name) })
}

func compareRule(a, b NetRule) int {
	if c := strings.Compare(a.Origin, b.Origin); c != 0 {
		return c
	}
	if c := slices.Compare(a.Methods, b.Methods); c != 0 {
		return c
	}
	if c := slices.Compare(a.Paths, b.Paths); c != 0 {
		return c
	}
	return strings.Compare(a.Approval, b.Approval)
}

func (c *checker) netRule(r *NetRule, ptr string) {
	o, err := weburl.NormalizeOrigin(r.Origin)
	if err != nil {
		c.add(ptr+"/origin", false, "origin must be scheme://host[:port] with no path, query, userinfo, fragment or wildcard: %v", errDetail(err))
	} else {
		r.Origin = o
	}
	r.Methods = sortUnique(r.Methods)
	for i, p := range r.Paths {
		if _, err := ParseTemplate(p); err != nil {
			c.add(fmt.Sprintf("%s/paths/%d", ptr, i), false, "%v", err)
		}
	}
	r.Paths = sortUnique(r.Paths)
	if r.Approval == "" {
		r.Approval = "never"
	}
}

func errDetail(err error) string {
	s := err.Error()
	if i := strings.LastIndex(s, ": "); i >= 0 && i+2 < len(s) {
		return s[i+2:]
	}
	return s
}

// globs validates and normalizes workspace:// globs.
func (c *checker) globs(gs []string, ptr string) []string {
	if gs == nil {
		return nil // absent stays absent: in a ceiling layer it means "no constraint"
	}
	out := make([]string, 0, len(gs))
	for i, g := range gs {
		n, err := NormalizeGlob(g)
		if err != nil {
			c.add(fmt.Sprintf("%s/%d", ptr, i), false, "%v", err)
			continue
		}
		out = append(out, n)
	}
	return sortUnique(out)
}

// NormalizeGlob validates a workspace:// glob and returns its normal form:
// "workspace://" followed by a clean, relative doublestar pattern that cannot
// name anything outside the workspace.
func NormalizeGlob(g string) (string, error) {
	rest, ok := strings.CutPrefix(g, WorkspaceScheme)
	if !ok {
		return "", fmt.Errorf("%q must start with %s", g, WorkspaceScheme)
	}
	if rest == "" {
		return "", fmt.Errorf("%q names nothing: use %s** for the whole workspace", g, WorkspaceScheme)
	}
	if strings.ContainsAny(rest, "\\\x00") {
		return "", fmt.Errorf("%q contains a backslash or NUL", g)
	}
	if strings.HasPrefix(rest, "/") {
		return "", fmt.Errorf("%q must be relative to the workspace root", g)
	}
	for _, seg := range strings.Split(rest, "/") {
		if seg == ".." {
			return "", fmt.Errorf("%q leaves the workspace (..)", g)
		}
	}
	clean := path.Clean(rest)
	if clean == "." {
		return "", fmt.Errorf("%q names only the root: use %s** for the whole workspace", g, WorkspaceScheme)
	}
	if !doublestar.ValidatePattern(clean) {
		return "", fmt.Errorf("%q is not a valid glob", g)
	}
	return WorkspaceScheme + clean, nil
}

func sortUnique(s []string) []string {
	if len(s) == 0 {
		return s
	}
	slices.Sort(s)
	return slices.Compact(s)
}

// Segment is one segment of a network path template: a literal, or a
// parameter ({name}) that matches exactly one non-empty segment.
type Segment struct {
	Literal string
	Param   string
}

// ParseTemplate parses a network path template such as
// /repos/{owner}/issues/{number}. Parameters are whole segments only.
func ParseTemplate(p string) ([]Segment, error) {
	if !strings.HasPrefix(p, "/") {
		return nil, fmt.Errorf("path %q must start with /", p)
	}
	if p == "/" {
		return nil, nil
	}
	var segs []Segment
	names := map[string]bool{}
	for _, s := range strings.Split(p[1:], "/") {
		switch {
		case s == "":
			return nil, fmt.Errorf("path %q has an empty segment", p)
		case s == "." || s == "..":
			return nil, fmt.Errorf("path %q has a dot segment", p)
		case strings.HasPrefix(s, "{") && strings.HasSuffix(s, "}"):
			name := s[1 : len(s)-1]
			if !validParam(name) {
				return nil, fmt.Errorf("path %q: parameter {%s} must be a name of letters, digits and _", p, name)
			}
			if names[name] {
				return nil, fmt.Errorf("path %q uses {%s} twice", p, name)
			}
			names[name] = true
			segs = append(segs, Segment{Param: name})
		case strings.ContainsAny(s, "{}"):
			return nil, fmt.Errorf("path %q: a parameter must be a whole segment ({name})", p)
		case strings.ContainsAny(s, "?#*\\ \t"):
			return nil, fmt.Errorf("path %q: segment %q has a character that is not allowed (no query, fragment, wildcard or space)", p, s)
		default:
			segs = append(segs, Segment{Literal: s})
		}
	}
	return segs, nil
}

func validParam(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i, r := range s {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// fillAllowList makes every section of an allow-list (manifest or grant)
// explicit, so that absent and empty have one spelling and one digest.
func fillAllowList(p *Permissions) {
	if p.Filesystem == nil {
		p.Filesystem = &Filesystem{}
	}
	for _, l := range []*[]string{&p.Filesystem.Read, &p.Filesystem.Write, &p.Filesystem.Deny} {
		if *l == nil {
			*l = []string{}
		}
	}
	if p.Network == nil {
		p.Network = &Network{}
	}
	if p.Network.Requests == nil {
		p.Network.Requests = []NetRule{}
	}
	if p.Secrets == nil {
		p.Secrets = []Secret{}
	}
	if p.Process == nil {
		p.Process = &Process{Spawn: "deny"}
	}
	if p.ExternalWrites == nil {
		p.ExternalWrites = &ExternalWrites{Default: "approval_required"}
	}
}
