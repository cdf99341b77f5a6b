package policy

import (
	"io/fs"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

type globKind uint8

const (
	globAll       globKind = iota // **
	globLiteral                   // a/b.md
	globPrefix                    // a/b/** : a/b and everything below
	globLastSeg                   // **/SEG : the last segment matches SEG (no '/')
	globAnySegDir                 // **/LIT/** : some segment equals LIT
	globGeneric                   // anything else: doublestar.Match
)

// glob is a compiled workspace glob. The pattern is relative (no
// workspace:// prefix). Matching is exactly doublestar.Match(pattern, path);
// the specialised kinds only avoid its generic walk.
type glob struct {
	kind    globKind
	pattern string
	lit     string // literal, prefix, LIT or the literal prefix for generic
	seg     segMatch
	rule    string // e.g. plugin:permissions.filesystem.read[0]
}

// segMatch matches one path segment.
type segMatch struct {
	exact          string
	prefix, suffix string // for "prefix*suffix"
	star           bool
	generic        string // fallback pattern
}

func (s *segMatch) match(seg string) bool {
	switch {
	case s.generic != "":
		ok, _ := doublestar.Match(s.generic, seg)
		return ok
	case s.star:
		return len(seg) >= len(s.prefix)+len(s.suffix) && strings.HasPrefix(seg, s.prefix) && strings.HasSuffix(seg, s.suffix)
	}
	return seg == s.exact
}

const meta = "*?[{\\"

func compileSeg(p string) segMatch {
	if !strings.ContainsAny(p, meta) {
		return segMatch{exact: p}
	}
	if i := strings.IndexByte(p, '*'); i >= 0 && strings.Count(p, "*") == 1 && !strings.ContainsAny(p, "?[{\\") {
		return segMatch{star: true, prefix: p[:i], suffix: p[i+1:]}
	}
	return segMatch{generic: p}
}

func compileGlob(pattern, rule string) glob {
	g := glob{pattern: pattern, rule: rule}
	switch {
	case pattern == "**":
		g.kind = globAll
	case !strings.ContainsAny(pattern, meta):
		g.kind, g.lit = globLiteral, pattern
	case strings.HasSuffix(pattern, "/**") && !strings.ContainsAny(pattern[:len(pattern)-3], meta):
		g.kind, g.lit = globPrefix, pattern[:len(pattern)-3]
	case strings.HasPrefix(pattern, "**/") && strings.HasSuffix(pattern, "/**") && len(pattern) > 6 &&
		!strings.ContainsAny(pattern[3:len(pattern)-3], meta+"/"):
		g.kind, g.lit = globAnySegDir, pattern[3:len(pattern)-3]
	case strings.HasPrefix(pattern, "**/") && !strings.ContainsAny(pattern[3:], "/{") && pattern[3:] != "**":
		g.kind, g.seg = globLastSeg, compileSeg(pattern[3:])
	default:
		// lit is the directory part before the first meta character, a
		// prefix of every path that matches, without its last '/': a tail
		// `/**` or `/**/` matches a zero-length name, slash included, so
		// "a/**/" matches "a".
		g.kind = globGeneric
		if i := strings.IndexAny(pattern, meta); i > 0 {
			g.lit = pattern[:max(strings.LastIndexByte(pattern[:i], '/'), 0)]
		}
	}
	return g
}

// match reports whether the clean, relative path p matches.
//
// The empty path names no file and has no segment for a specialised kind to
// look at (its last segment is "", which the `*` of `**/*` would match), so
// it goes to doublestar. Its rule for an empty name: the pattern must be one
// that matches a zero-length string, that is "", `*`, `**`, `**/`, `/**`,
// `/**/`, or braces reducing to one of them. `**/*`, `**/x*` and `*/**` are
// not: a `**/` matching zero directories leaves a `*` that needs a name.
//
// A name that is not a clean relative path (a leading, trailing or double
// slash, a . or .. element: never a request's, which fspath.Clean makes)
// goes to doublestar too: the specialised kinds assume segments (a
// negated class such as [!0] matches "/" itself there).
func (g *glob) match(p string) bool {
	if p == "" || !fs.ValidPath(p) {
		ok, _ := doublestar.Match(g.pattern, p)
		return ok
	}
	switch g.kind {
	case globAll:
		return true
	case globLiteral:
		return p == g.lit
	case globPrefix:
		return p == g.lit || (len(p) > len(g.lit) && p[len(g.lit)] == '/' && strings.HasPrefix(p, g.lit))
	case globLastSeg:
		return g.seg.match(p[strings.LastIndexByte(p, '/')+1:])
	case globAnySegDir:
		for p != "" {
			i := strings.IndexByte(p, '/')
			if i < 0 {
				return p == g.lit
			}
			if p[:i] == g.lit {
				return true
			}
			p = p[i+1:]
		}
		return false
	}
	if !strings.HasPrefix(p, g.lit) {
		return false
	}
	ok, _ := doublestar.Match(g.pattern, p)
	return ok
}

// globList is a compiled list; first returns the first matching glob.
type globList []glob

func (l globList) first(p string) *glob {
	for i := range l {
		if l[i].match(p) {
			return &l[i]
		}
	}
	return nil
}
