package fspath

import (
	"io/fs"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/norma-run/norma/capability"
)

// FuzzClean checks the lexical normalizer: whatever it accepts is a
// clean, relative, NUL-free path inside the root that it maps to itself,
// and it agrees with filepath.IsLocal, a second implementation.
func FuzzClean(f *testing.F) {
	for _, seed := range []string{
		"../secret.txt",                    // the issue: dotdot
		"output/../../secret.txt",          // the issue: dotdot after a directory
		"/absolute/path.txt",               // the issue: absolute
		"output/link-to-outside/token.txt", // the issue: through a link (lexically fine)
		"output/file.txt\x00.png",          // the issue: NUL byte
		"workspace://docs/a.md",            // URI form
		"workspace://../x",                 // URI escaping
		"WORKSPACE:///etc",                 // URI, absolute
		"file:///etc/passwd",               // another scheme
		`..\..\x`,                          // backslash
		"./a/./b/../c/",                    // dots and trailing slash
		"a//b",                             // empty component
		".",                                // the root
		"",                                 // empty
		"....//..",                         // dots that are names
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, name string) {
		got, err := Clean(name)
		if err != nil {
			if capability.ReasonOf(err) == "" {
				t.Fatalf("Clean(%q) error %v has no reason code", name, err)
			}
			return
		}
		if got != "." && !fs.ValidPath(got) {
			t.Fatalf("Clean(%q) = %q, not a valid relative path", name, got)
		}
		if got != path.Clean(got) || strings.ContainsAny(got, "\x00\\") {
			t.Fatalf("Clean(%q) = %q, not clean", name, got)
		}
		if again, err := Clean(got); err != nil || again != got {
			t.Fatalf("Clean(Clean(%q)) = %q, %v; want %q", name, again, err, got)
		}
		rest := name
		if len(rest) >= len(Scheme) && strings.EqualFold(rest[:len(Scheme)], Scheme) {
			rest = rest[len(Scheme):]
		}
		if rest != "" && !filepath.IsLocal(rest) {
			t.Fatalf("Clean(%q) = %q, but filepath.IsLocal(%q) is false", name, got, rest)
		}
	})
}
