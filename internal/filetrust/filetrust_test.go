package filetrust

import (
	"os"
	"path/filepath"
	"testing"
)

// TestStore: a workspace is recorded under its resolved path (a symbolic
// link to it is the same workspace), the content is kept, Update edits
// the accepted version under the lock, and a corrupt record refuses
// rather than reading as nothing accepted.
func TestStore(t *testing.T) {
	home, ws := t.TempDir(), t.TempDir()
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(ws, link); err != nil {
		t.Fatal(err)
	}
	s, err := Open(home)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := s.Get(ws, "f"); ok || err != nil {
		t.Fatalf("empty store: ok %v, err %v", ok, err)
	}
	if err := s.Accept(link, "f", []byte("one"), false, "test"); err != nil {
		t.Fatal(err)
	}
	a, ok, err := s.Get(ws, "f")
	if !ok || err != nil || string(a.Content) != "one" || a.Digest != Digest([]byte("one"), false) || a.By != "test" {
		t.Fatalf("Get = %+v, %v, %v", a, ok, err)
	}
	err = s.Update(ws, "f", "edit", func(old []byte, absent bool) ([]byte, bool, error) {
		if absent || string(old) != "one" {
			t.Errorf("Update saw %q, absent %v", old, absent)
		}
		return append(old, " two"...), false, nil
	})
	if a, _, _ := s.Get(ws, "f"); err != nil || string(a.Content) != "one two" {
		t.Errorf("after Update: %q, %v", a.Content, err)
	}
	if err := s.Accept(ws, "g", []byte("ignored"), true, "test"); err != nil {
		t.Fatal(err)
	}
	if a, ok, _ := s.Get(ws, "g"); !ok || !a.Absent || a.Content != nil || a.Digest != "absent" {
		t.Errorf("an accepted absence = %+v", a)
	}
	if fi, err := os.Stat(filepath.Join(home, FileName)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("record file: %v %v", fi, err)
	}
	os.WriteFile(filepath.Join(home, FileName), []byte("{not json"), 0o600)
	if _, _, err := s.Get(ws, "f"); err == nil {
		t.Error("a corrupt record read as nothing accepted")
	}
}
