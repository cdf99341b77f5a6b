package manifest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzParse feeds arbitrary bytes to the parser. Properties: no panic; a
// success yields a normalized manifest whose canonical form parses again to
// the same digest.
func FuzzParse(f *testing.F) {
	for _, dir := range []string{"testdata/manifests/valid", "testdata/manifests/invalid"} {
		files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
		for _, file := range files {
			b, _ := os.ReadFile(file)
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Parse("fuzz.yaml", data)
		if err != nil {
			probs, ok := err.(Errors)
			if !ok {
				t.Fatalf("error of type %T", err)
			}
			checkPositions(t, data, probs)
			return
		}
		for _, tl := range m.Tools {
			if tl.Effects == nil || tl.Approval == "" {
				t.Fatalf("tool not normalized: %+v", tl)
			}
		}
		if fs := m.Permissions.Filesystem; fs != nil {
			for _, g := range append(append(append([]string{}, fs.Read...), fs.Write...), fs.Deny...) {
				n, err := NormalizeGlob(g)
				if err != nil || n != g {
					t.Fatalf("normalized glob %q does not normalize to itself: %q %v", g, n, err)
				}
			}
		}
		_ = m.Digest()
	})
}

// checkPositions: every position a problem reports is inside the file, on
// a line as grep and editors count them (lines end at \n), at a column of
// that line or just past its end.
func checkPositions(t *testing.T, data []byte, probs Errors) {
	t.Helper()
	lines := strings.Split(string(data), "\n")
	for _, p := range probs {
		if p.Line == 0 && p.Col == 0 {
			continue // a problem of the whole file
		}
		if p.Line < 1 || p.Line > len(lines) {
			t.Errorf("%v: line %d of a file of %d lines", p, p.Line, len(lines))
			continue
		}
		if n := utf8.RuneCountInString(lines[p.Line-1]); p.Col < 1 || p.Col > n+1 {
			t.Errorf("%v: column %d of a line of %d characters", p, p.Col, n)
		}
	}
}

// FuzzNormalizeGlob: a normalized glob never leaves the workspace and is a
// fixed point.
func FuzzNormalizeGlob(f *testing.F) {
	for _, s := range []string{
		"workspace://docs/**",      // the common shape
		"workspace://../x",         // parent escape
		"workspace://a/../../x",    // inner escape
		"workspace:///etc/passwd",  // absolute
		"workspace://./a/./b/*.md", // dot segments
		"workspace://{a,b}/**",     // alternatives
		"workspace://a/[b",         // unclosed class
		"workspace://a\\..\\b",     // backslashes
		"docs/**",                  // no scheme
		"workspace://**/.env*",     // deny-style
		"workspace://a//b",         // double slash
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, g string) {
		n, err := NormalizeGlob(g)
		if err != nil {
			return
		}
		rest := WorkspaceGlob(n)
		if strings.HasPrefix(rest, "/") || rest == ".." || strings.HasPrefix(rest, "../") || strings.Contains(rest, "/../") || strings.HasSuffix(rest, "/..") {
			t.Fatalf("NormalizeGlob(%q) = %q leaves the workspace", g, n)
		}
		n2, err := NormalizeGlob(n)
		if err != nil || n2 != n {
			t.Fatalf("not a fixed point: %q → %q → %q (%v)", g, n, n2, err)
		}
	})
}

// FuzzParseTemplate: no panic; accepted templates rebuild to themselves.
func FuzzParseTemplate(f *testing.F) {
	for _, s := range []string{"/", "/repos/{owner}/issues/{number}", "/a/{b}c", "/a//b", "/a/../b", "/{x}/{x}", "/%2F"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		segs, err := ParseTemplate(p)
		if err != nil {
			return
		}
		var b strings.Builder
		for _, s := range segs {
			b.WriteByte('/')
			if s.Param != "" {
				b.WriteString("{" + s.Param + "}")
			} else {
				b.WriteString(s.Literal)
			}
		}
		if b.Len() == 0 {
			b.WriteByte('/')
		}
		if b.String() != p {
			t.Fatalf("ParseTemplate(%q) rebuilds to %q", p, b.String())
		}
	})
}
