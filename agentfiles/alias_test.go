package agentfiles

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
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
