package policy

import (
	"testing"
	"unicode/utf8"

	"github.com/bmatcuk/doublestar/v4"
)

var globPatterns = []string{
	"**", "docs/**", "docs", "docs/*.md", "**/.env*", "**/.git/**", "**/*.pem", "src/**/test_*.go",
	"a/{b,c}/**", "**/x", "*", "*.md", "a/*/c", "**/[ab].txt", "**/.env", "tmp/*.json", "x/**/y/**",
}

var globPaths = []string{
	".", "docs", "docs/a.md", "docs/a/b.md", "docsx", ".env", "a/.env", "a/.env.local", "a/.envrc/x",
	".git", ".git/config", "a/.git/HEAD", "a/.gitignore", "k.pem", "a/b/k.pem", "src/x/test_a.go",
	"a/b/z", "a/c", "a/d/z", "x", "q/x", "README.md", "a/b/c", "a.txt", "z/b.txt", "tmp/a.json", "tmp/a/b.json", "x/1/y/2",
}

// TestGlobMatchesDoublestar: every compiled kind answers exactly as
// doublestar.Match does.
func TestGlobMatchesDoublestar(t *testing.T) {
	for _, p := range globPatterns {
		g := compileGlob(p, "")
		for _, path := range globPaths {
			want, _ := doublestar.Match(p, path)
			if got := g.match(path); got != want {
				t.Errorf("pattern %q (kind %d) on %q = %v, doublestar says %v", p, g.kind, path, got, want)
			}
		}
	}
}

func FuzzGlobMatch(f *testing.F) {
	for i, p := range globPatterns {
		f.Add(p, globPaths[i%len(globPaths)])
	}
	f.Fuzz(func(t *testing.T, pattern, path string) {
		// Invalid UTF-8 never reaches the matcher: policy files are
		// refused unless UTF-8, and Decide refuses such a path
		// (TestDecideRefusesInvalidUTF8).
		if !doublestar.ValidatePattern(pattern) || len(pattern) == 0 || pattern[0] == '/' ||
			!utf8.ValidString(pattern) || !utf8.ValidString(path) {
			return
		}
		want, err := doublestar.Match(pattern, path)
		if err != nil {
			return
		}
		g := compileGlob(pattern, "")
		if got := g.match(path); got != want {
			t.Fatalf("pattern %q on %q = %v, doublestar says %v", pattern, path, got, want)
		}
	})
}

// TestGlobEmptyPath: on the empty path every kind answers as doublestar.
// A `**/` that matches zero directories leaves a `*` (or `x*`, `?`) that
// needs a non-empty name, so `**/*` does not match "" (FuzzGlobMatch found
// that the last-segment kind did). Only the patterns doublestar treats as
// matching a zero-length string match "": `**`, `**/`, `*` and braces that
// reduce to one of them. Each row also asks doublestar, the reference, so a
// change of its rule shows here.
func TestGlobEmptyPath(t *testing.T) {
	tests := []struct {
		pattern, path string
		want          bool
	}{
		{"**/*", "", false}, // the fuzz finding: a last-segment glob on ""
		{"**/x*", "", false},
		{"**/*x", "", false},
		{"**/?", "", false},
		{"**/[a]", "", false},
		{"**/*.md", "", false},
		{"**/.env*", "", false},
		{"*/**", "", false},
		{"**/*/**", "", false},
		{"**/.git/**", "", false},
		{"docs/**", "", false},
		{"**/{a,}", "", false},
		{"?", "", false},
		{"**", "", true},  // as doublestar: everything, the empty name too
		{"**/", "", true}, // as doublestar: zero directories and nothing after
		{"*", "", true},   // as doublestar: `*` matches a zero-length name
		{"{,a}", "", true},

		// The same patterns on a name: the fix is for "" alone.
		{"**/*", "a", true},
		{"**/x*", "a", false},
		{"**/?", "a", true},
		{"*/**", "a", true},
		{"**/*/**", "a", true},
		{"**", "a", true},
		{"**/", "a", false},
		{"*", "a", true},
		{"**/*", "a/", true},
		{"**/*", "a/b", true},
	}
	for _, tt := range tests {
		g := compileGlob(tt.pattern, "")
		if got := g.match(tt.path); got != tt.want {
			t.Errorf("compileGlob(%q).match(%q) = %v, want %v", tt.pattern, tt.path, got, tt.want)
		}
		if ds, _ := doublestar.Match(tt.pattern, tt.path); ds != tt.want {
			t.Errorf("doublestar.Match(%q, %q) = %v, want %v", tt.pattern, tt.path, ds, tt.want)
		}
	}
}

// TestGlobZeroLengthTail: a tail `/**` or `/**/` matches a zero-length
// name, its slash included, so "a/**/" matches "a" as doublestar says
// (FuzzGlobMatch found "0/**/" refused "0": the generic kind's quick
// prefix test wanted the slash). Each row also asks doublestar.
func TestGlobZeroLengthTail(t *testing.T) {
	tests := []struct {
		pattern, path string
		want          bool
	}{
		{"0/**/", "0", true}, // the fuzz finding
		{"0/**/", "0/", true},
		{"0/**/", "0/x/", true},
		{"0/**/", "0x", false},
		{"0/**/", "", false},
		{"a/b/**/", "a/b", true},
		{"a/b/**/", "a", false},
		{"a/b/**/", "a/bc", false},
		{"a/**", "a", true}, // the prefix kind
		{"a/b/**", "a/b", true},
		{"a/**/*", "a", false},
		{"a/**/**", "a", false},
		{"a/*/**/", "a", false},
		{"a/*/**/", "a/b", true},
		{"**/a/**/", "a", true},
	}
	for _, tt := range tests {
		g := compileGlob(tt.pattern, "")
		if got := g.match(tt.path); got != tt.want {
			t.Errorf("compileGlob(%q).match(%q) = %v, want %v", tt.pattern, tt.path, got, tt.want)
		}
		if ds, _ := doublestar.Match(tt.pattern, tt.path); ds != tt.want {
			t.Errorf("doublestar.Match(%q, %q) = %v, want %v", tt.pattern, tt.path, ds, tt.want)
		}
	}
}
