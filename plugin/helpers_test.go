package plugin

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/ed25519"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/norma-run/norma/capability"
)

// fixedNow is the signing time of test statements.
func fixedNow() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }

// copyFixture copies testdata/NAME into a fresh temporary directory.
func copyFixture(t testing.TB, name string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), name)
	if err := os.CopyFS(dst, os.DirFS(filepath.Join("testdata", name))); err != nil {
		t.Fatal(err)
	}
	// os.CopyFS keeps only the executable bits it sees; normalize.
	return dst
}

// testKey returns a deterministic key for seed byte b.
func testKey(b byte) ed25519.PrivateKey {
	return ed25519.NewKeyFromSeed(bytes.Repeat([]byte{b}, ed25519.SeedSize))
}

func pub(k ed25519.PrivateKey) ed25519.PublicKey { return k.Public().(ed25519.PublicKey) }

// signedFixture copies a fixture and signs it with key.
func signedFixture(t testing.TB, name string, key ed25519.PrivateKey, co ...ed25519.PrivateKey) string {
	t.Helper()
	dir := copyFixture(t, name)
	if _, err := Sign(t.Context(), dir, key, &SignOptions{Now: fixedNow, CoSigners: co}); err != nil {
		t.Fatalf("Sign(%s): %v", name, err)
	}
	return dir
}

// packTo packs dir into a new archive file and returns its path.
func packTo(t testing.TB, dir string) string {
	t.Helper()
	var buf bytes.Buffer
	if err := Pack(t.Context(), dir, &buf, nil); err != nil {
		t.Fatalf("Pack(%s): %v", dir, err)
	}
	p := filepath.Join(t.TempDir(), filepath.Base(dir)+".tar.gz")
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// entry is one tar entry of a hand-made archive.
type entry struct {
	name     string
	typ      byte
	mode     int64
	body     string
	linkname string
	size     int64 // when non-zero, overrides len(body) in the header
}

// makeArchive builds a .tar.gz from entries, exactly as given (no checks):
// the way an attacker would.
func makeArchive(t testing.TB, entries []entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, e := range entries {
		typ := e.typ
		if typ == 0 {
			typ = tar.TypeReg
		}
		mode := e.mode
		if mode == 0 {
			mode = 0o644
		}
		size := int64(len(e.body))
		if typ != tar.TypeReg {
			size = 0
		}
		hdr := &tar.Header{Typeflag: typ, Name: e.name, Mode: mode, Size: size, Linkname: e.linkname, ModTime: time.Unix(0, 0), Format: tar.FormatPAX}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatalf("WriteHeader(%q): %v", e.name, err)
		}
		if typ == tar.TypeReg {
			tw.Write([]byte(e.body))
		}
	}
	tw.Close()
	zw.Close()
	return buf.Bytes()
}

// snapshot lists every path under root (relative), with "/" after
// directories, to prove that a refused operation wrote nothing.
func snapshot(t testing.TB, root string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			rel += "/"
		}
		out = append(out, rel)
		return nil
	})
	sort.Strings(out)
	return out
}

func wantCode(t testing.TB, what string, err error, code capability.Reason, msg string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s = nil error, want %s", what, code)
	}
	if got := capability.ReasonOf(err); got != code {
		t.Fatalf("%s: code = %q, want %q (error: %v)", what, got, code, err)
	}
	if msg != "" && !strings.Contains(err.Error(), msg) {
		t.Fatalf("%s: error %q does not say %q", what, err, msg)
	}
}

func stringsReplaceOnce(s, old, new string) string { return strings.Replace(s, old, new, 1) }

func startsWith(s, p string) bool { return strings.HasPrefix(s, p) }
