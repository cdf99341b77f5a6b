package fileid

import (
	"os"
	"path/filepath"
	"testing"
)

func TestRecord(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "state")
	os.Mkdir(dir, 0o700)
	os.WriteFile(filepath.Join(base, "file"), nil, 0o600)
	os.Symlink("state", filepath.Join(base, "link"))
	s, err := Record("", filepath.Join(base, "missing"), filepath.Join(base, "link"))
	if err != nil || s.Len() != 1 {
		t.Fatalf("Record(link) = %d ids, %v; want 1", s.Len(), err)
	}
	// Renamed, the directory is still the one recorded.
	moved := filepath.Join(base, "moved")
	if err := os.Rename(dir, moved); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(moved)
	if err != nil {
		t.Fatal(err)
	}
	if id, ok := Of(fi); !ok || !s.Has(id) {
		t.Errorf("Has(moved) = false, want the recorded directory")
	}
	if fi, _ := os.Lstat(base); s.Has(mustOf(t, fi)) {
		t.Errorf("Has(base) = true")
	}
	for _, bad := range []string{"relative/dir", filepath.Join(base, "file")} {
		if _, err := Record(bad); err == nil {
			t.Errorf("Record(%q) = nil error", bad)
		}
	}
}

func mustOf(t *testing.T, fi os.FileInfo) ID {
	t.Helper()
	id, ok := Of(fi)
	if !ok {
		t.Fatal("no identity")
	}
	return id
}
