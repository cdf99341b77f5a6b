package agentfiles

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

func TestAliases(t *testing.T) {
	ws := t.TempDir()
	out := t.TempDir()
	for _, d := range []string{"cfg", "hooks", ".git", "other"} {
		if err := os.Mkdir(filepath.Join(ws, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, target := range map[string]string{".claude": "cfg", ".git/hooks": "../hooks", ".codex": out, ".gemini": "missing"} {
		if err := os.Symlink(target, filepath.Join(ws, name)); err != nil {
			t.Fatal(err)
		}
	}
	got := Aliases(ws)
	want := []Alias{{".claude", "cfg"}, {".git/hooks", "hooks"}}
	if !slices.Equal(got, want) {
		t.Fatalf("Aliases = %v, want %v", got, want)
	}
	for rel, names := range map[string][]string{
		"cfg/settings.json": {".claude/settings.json"},
		"cfg":               {".claude"},
		"cfgx/a":            nil,
		"hooks/pre-commit":  {".git/hooks/pre-commit"},
		"other/a":           nil,
	} {
		if got := Names(Aliases(ws), rel); !slices.Equal(got, names) {
			t.Errorf("Names(%q) = %v, want %v", rel, got, names)
		}
	}
}

// TestAliasCache: a link made after the first Get is seen by the next.
func TestAliasCache(t *testing.T) {
	ws := t.TempDir()
	if err := os.Mkdir(filepath.Join(ws, "cfg"), 0o755); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(ws, old, old); err != nil {
		t.Fatal(err)
	}
	var c AliasCache
	if got := c.Get(ws); len(got) != 0 {
		t.Fatalf("Get = %v, want none", got)
	}
	if err := os.Symlink("cfg", filepath.Join(ws, ".claude")); err != nil {
		t.Fatal(err)
	}
	if got := c.Get(ws); !slices.Equal(got, []Alias{{".claude", "cfg"}}) {
		t.Fatalf("after the link: Get = %v", got)
	}
	// The same link made in a tick that leaves the stamp as it was (the
	// directory's time set back): a stamp within racy is not trusted.
	if err := os.Remove(filepath.Join(ws, ".claude")); err != nil {
		t.Fatal(err)
	}
	if got := c.Get(ws); len(got) != 0 {
		t.Fatalf("after removing the link: Get = %v", got)
	}
}
