package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "state.json")
	for _, body := range []string{"first", "second, longer than the first"} {
		if err := Write(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(p)
		if err != nil || string(b) != body {
			t.Fatalf("read back %q, %v; want %q", b, err, body)
		}
	}
	fi, _ := os.Stat(p)
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v", fi.Mode())
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("temporary files left: %v", ents)
	}
	// A directory that cannot be written: an error and nothing changed.
	if err := Write(filepath.Join(dir, "missing", "x"), []byte("y"), 0o600); err == nil {
		t.Error("write into a missing directory succeeded")
	}
}
