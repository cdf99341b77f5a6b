package fsguard

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/norma-run/norma/capability"
)

// protectedLayout is a workspace that holds Norma's state directory (a run
// in $HOME), whose deny rule names .local/state/norma. The directory is
// then renamed on the host, so that the rule no longer matches its name.
var protectedLayout = []string{
	"ws/README.md",
	"ws/out/report.md",
	"ws/.local/state/norma/secrets/key = STATE-KEY-CANARY",
	"ws/.local/state/norma/runs/r1/state.json = STATE-RUN-CANARY",
	"ws/via-link => .local/state/moved",
}

// TestProtectedByIdentity: a directory given as Options.Protected stays
// out of reach of every operation under another name (renamed after the
// guard was opened, reached through a symbolic link): each is refused
// with PROTECTED_PATH although the checker allows the name, nothing of it
// comes back, and nothing changes on disk. Listings and walks leave it
// out. A negative control shows that without the option the same names
// read the key.
func TestProtectedByIdentity(t *testing.T) {
	base := t.TempDir()
	makeTree(t, base, protectedLayout)
	ws := filepath.Join(base, "ws")
	state := filepath.Join(ws, ".local/state/norma")
	pol := &policy{read: []string{"**"}, write: []string{"**"}, deny: []string{".local/state/norma/**"}}
	f, err := NewWithOptions(ws, pol, &Options{Protected: []string{state, filepath.Join(base, "missing")}})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	plain, err := New(ws, pol)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if _, err := f.ReadFile(t.Context(), ".local/state/norma/secrets/key"); reasonOf(err) != string(capability.ReasonFilesystemDenyRule) {
		t.Fatalf("ReadFile under the original name = %v, want the deny rule's refusal", err)
	}
	if err := os.Rename(state, filepath.Join(ws, ".local/state/moved")); err != nil {
		t.Fatal(err)
	}
	// Negative control: by name alone, the moved directory is readable.
	if b, err := plain.ReadFile(t.Context(), ".local/state/moved/secrets/key"); err != nil || string(b) != "STATE-KEY-CANARY" {
		t.Fatalf("control: ReadFile(moved key) without protection = %q, %v; want the key", b, err)
	}
	names := []string{".local/state/moved/secrets/key", ".local/state/moved/secrets", ".local/state/moved",
		".local/state/moved/new", "via-link/secrets/key", "via-link/runs/r1/state.json"}
	for _, name := range names {
		for _, op := range operations {
			before := snapshot(t, base)
			got, err := op.do(t.Context(), f, name)
			if op.name == "Resolve" {
				continue // Resolve names paths; it opens nothing and checks nothing
			}
			if r := reasonOf(err); r != string(capability.ReasonProtectedPath) {
				t.Errorf("%s(%q) = %q, %v; want PROTECTED_PATH", op.name, name, got, err)
			}
			if strings.Contains(string(got), "CANARY") {
				t.Errorf("%s(%q) returned protected content %q", op.name, name, got)
			}
			assertUnchanged(t, base, before)
		}
	}
	// Renaming or removing an ancestor is refused too (the rename would
	// move the protected directory), and listings leave it out.
	before := snapshot(t, base)
	for _, name := range []string{".local", ".local/state"} {
		if err := f.Rename(t.Context(), name, "out/moved"); reasonOf(err) != string(capability.ReasonProtectedPath) {
			t.Errorf("Rename(%q) = %v, want PROTECTED_PATH", name, err)
		}
	}
	ents, err := f.ReadDir(t.Context(), ".local/state")
	if err != nil || len(ents) != 0 {
		t.Errorf("ReadDir(.local/state) = %v, %v; want no entry", ents, err)
	}
	var walked []string
	err = f.WalkDir(t.Context(), ".", func(p string, d os.DirEntry, err error) error {
		walked = append(walked, p)
		return err
	})
	if err != nil || slices.ContainsFunc(walked, func(p string) bool { return strings.HasPrefix(p, ".local/state/moved") }) {
		t.Errorf("WalkDir(.) = %q, %v; want the protected directory left out", walked, err)
	}
	if b, err := f.ReadFile(t.Context(), "out/report.md"); err != nil || len(b) == 0 {
		t.Errorf("ReadFile(out/report.md) = %q, %v; want the file (only the protected tree is refused)", b, err)
	}
	assertUnchanged(t, base, before)
	if _, err := NewWithOptions(ws, pol, &Options{Protected: []string{filepath.Join(ws, "README.md")}}); err == nil {
		t.Error("NewWithOptions accepted a protected path that is not a directory")
	}
}
