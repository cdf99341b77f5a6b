package plugin

import (
	"bytes"
	"crypto/sha256"
	"os"
	"path/filepath"
	"testing"

	"github.com/norma-run/norma/capability"
)

func TestValidPath(t *testing.T) {
	tests := []struct {
		name string
		in   string
		ok   bool
	}{
		{"plain", "manifest.yaml", true},
		{"nested", "bin/issue-helper", true},
		{"unicode", "docs/résumé.md", true},
		{"empty", "", false},
		{"absolute", "/etc/passwd", false},
		{"dotdot", "../x", false},
		{"inner dotdot", "a/../../x", false},
		{"dot", ".", false},
		{"dot component", "a/./b", false},
		{"double slash", "a//b", false},
		{"trailing slash", "a/", false},
		{"backslash", `a\..\x`, false},
		{"nul", "a\x00b", false},
		{"newline", "a\nb", false},
		{"escape", "a\x1b[31m", false},
		{"invalid utf8", "a\xff", false},
		{"long component", string(bytes.Repeat([]byte("a"), 256)), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidPath(tt.in)
			if (err == nil) != tt.ok {
				t.Fatalf("ValidPath(%q) = %v, want ok=%v", tt.in, err, tt.ok)
			}
			if err != nil && capability.ReasonOf(err) != capability.ReasonPluginPathInvalid {
				t.Fatalf("ValidPath(%q) code = %q", tt.in, capability.ReasonOf(err))
			}
		})
	}
}

func TestMerkleRoot(t *testing.T) {
	f := func(p string, mode os.FileMode, content string) File {
		return File{Path: p, Mode: mode, Size: int64(len(content)), SHA256: sha256.Sum256([]byte(content))}
	}
	base := []File{f("a", ModeFile, "1"), f("b", ModeExec, "2"), f("c", ModeFile, "3")}
	root := MerkleRoot(base)
	// One leaf: the root is the leaf hash (domain-separated from nodes).
	if got, want := MerkleRoot(base[:1]), base[0].Leaf(); got != want {
		t.Errorf("MerkleRoot(1 leaf) = %v, want leaf %v", got, want)
	}
	// Hand-computed RFC 6962 shape for three leaves: H(1|H(1|a|b)|c).
	node := func(l, r Digest) Digest {
		return sha256.Sum256(append(append([]byte{1}, l[:]...), r[:]...))
	}
	if want := node(node(base[0].Leaf(), base[1].Leaf()), base[2].Leaf()); root != want {
		t.Errorf("MerkleRoot(3 leaves) = %v, want %v", root, want)
	}
	changes := []struct {
		name  string
		files []File
	}{
		{"content", []File{f("a", ModeFile, "1"), f("b", ModeExec, "X"), f("c", ModeFile, "3")}},
		{"mode", []File{f("a", ModeFile, "1"), f("b", ModeFile, "2"), f("c", ModeFile, "3")}},
		{"rename", []File{f("a", ModeFile, "1"), f("bb", ModeExec, "2"), f("c", ModeFile, "3")}},
		{"added", append(append([]File{}, base...), f("d", ModeFile, ""))},
		{"removed", base[:2]},
		// Moving bytes between path and content must not collide.
		{"path-content shift", []File{f("a", ModeFile, "1"), f("b", ModeExec, "2"), f("c", ModeFile, "3 ")}},
	}
	for _, c := range changes {
		t.Run(c.name, func(t *testing.T) {
			if MerkleRoot(c.files) == root {
				t.Fatalf("MerkleRoot(%s) = unchanged root %v", c.name, root)
			}
		})
	}
}

func TestHashDirRefuses(t *testing.T) {
	tests := []struct {
		name  string
		setup func(dir string) error
		code  capability.Reason
	}{
		{"symlink", func(dir string) error { return os.Symlink("/etc/passwd", filepath.Join(dir, "lib", "link")) }, capability.ReasonPluginLink},
		{"dangling symlink dir", func(dir string) error { return os.Symlink("..", filepath.Join(dir, "up")) }, capability.ReasonPluginLink},
		{"fifo", func(dir string) error { return mkfifo(filepath.Join(dir, "pipe")) }, capability.ReasonPluginSpecialFile},
		{"setuid", func(dir string) error { return os.Chmod(filepath.Join(dir, "bin", "issue-helper"), 0o4755) }, capability.ReasonPluginSpecialFile},
		{"bad name", func(dir string) error { return os.WriteFile(filepath.Join(dir, "a\nb"), nil, 0o644) }, capability.ReasonPluginPathInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := copyFixture(t, "issue-helper-1.4.0")
			// Negative control: the fixture hashes before the change.
			if _, err := HashDir(t.Context(), dir, nil); err != nil {
				t.Fatalf("HashDir(clean) = %v", err)
			}
			if err := tt.setup(dir); err != nil {
				t.Fatal(err)
			}
			if tt.name == "setuid" {
				if info, _ := os.Lstat(filepath.Join(dir, "bin", "issue-helper")); info.Mode()&os.ModeSetuid == 0 {
					t.Skip("this file system drops setuid bits; the archive test covers the refusal")
				}
			}
			_, err := HashDir(t.Context(), dir, nil)
			wantCode(t, "HashDir", err, tt.code, "")
		})
	}
}

func TestHashDirLimits(t *testing.T) {
	dir := copyFixture(t, "issue-helper-1.4.0")
	_, err := HashDir(t.Context(), dir, &HashOptions{Limits: &Limits{MaxFiles: 2}})
	wantCode(t, "HashDir(MaxFiles 2)", err, capability.ReasonPluginArchiveLimit, "more than 2 files")
	_, err = HashDir(t.Context(), dir, &HashOptions{Limits: &Limits{MaxTotalSize: 100}})
	wantCode(t, "HashDir(MaxTotalSize 100)", err, capability.ReasonPluginArchiveLimit, "")
}

func TestHashDirMatchesUnpack(t *testing.T) {
	dir := copyFixture(t, "issue-helper-1.4.0")
	want, err := HashDir(t.Context(), dir, &HashOptions{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	got, err := HashDir(t.Context(), dir, &HashOptions{Workers: 8})
	if err != nil {
		t.Fatal(err)
	}
	if got.Root() != want.Root() {
		t.Fatalf("HashDir(8 workers) root %v != 1 worker %v", got.Root(), want.Root())
	}
	f, _ := os.Open(packTo(t, dir))
	defer f.Close()
	un, err := Unpack(t.Context(), f, filepath.Join(t.TempDir(), "u"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if un.Root() != want.Root() {
		t.Fatalf("Unpack root %v != HashDir root %v", un.Root(), want.Root())
	}
	if e, ok := want.Lookup("bin/issue-helper"); !ok || e.Mode != ModeExec {
		t.Fatalf("bin/issue-helper = %+v, want mode 0755", e)
	}
}
