package agentfiles

import (
	"strings"
	"testing"

	"github.com/bmatcuk/doublestar/v4"
)

// FuzzLookup: the catalogue's matcher agrees with doublestar (the globs
// users write elsewhere) on every catalogue glob, but for a directory
// itself (doublestar's a/** matches a; creating a directory runs nothing),
// and folds case.
func FuzzLookup(f *testing.F) {
	for _, s := range []string{".claude/settings.local.json", ".CLAUDE/agents/x.md", "a/b/CLAUDE.md", ".git/modules/m/config", ".claude", "u/.bashrc", "x/.git/config", "**", "[", ".claude/agents/", ".claude/ſettings.json", ".claude/agents/\u212a.md"} {
		f.Add(s, "u")
	}
	f.Fuzz(func(t *testing.T, rel, home string) {
		m, ok := Lookup(rel, home)
		mu, oku := Lookup(strings.ToUpper(rel), strings.ToUpper(home))
		if ok != oku || ok && m.Class != mu.Class {
			t.Fatalf("Lookup(%q) = %v %v, upper-cased %v %v", rel, m.Class, ok, mu.Class, oku)
		}
		name := fold(rel)
		for _, e := range catalogue {
			if e.Scope != Project {
				continue
			}
			g := fold(e.Glob)
			want, err := doublestar.Match(g, name)
			if err != nil {
				continue
			}
			if dir, ok := strings.CutSuffix(g, "/**"); ok && name == dir {
				want = false
			}
			if got := globMatch(g, name); got != want {
				t.Fatalf("globMatch(%q, %q) = %v, doublestar %v", g, name, got, want)
			}
		}
	})
}
