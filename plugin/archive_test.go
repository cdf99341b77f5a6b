package plugin

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/norma-run/norma/capability"
)

func TestPackReproducible(t *testing.T) {
	a := copyFixture(t, "issue-helper-1.4.0")
	b := copyFixture(t, "issue-helper-1.4.0")
	// Different times, owners' umask-ish modes and creation order must not
	// change the bytes.
	os.Chtimes(filepath.Join(b, "README.md"), fixedNow(), fixedNow())
	os.Chmod(filepath.Join(b, "README.md"), 0o600)
	os.Chmod(filepath.Join(b, "bin", "issue-helper"), 0o700)
	var ba, bb bytes.Buffer
	if err := Pack(t.Context(), a, &ba, nil); err != nil {
		t.Fatal(err)
	}
	if err := Pack(t.Context(), b, &bb, nil); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(ba.Bytes(), bb.Bytes()) {
		t.Fatalf("Pack is not reproducible: sha256 %x vs %x", sha256.Sum256(ba.Bytes()), sha256.Sum256(bb.Bytes()))
	}
	zr, err := gzip.NewReader(&ba)
	if err != nil {
		t.Fatal(err)
	}
	if !zr.ModTime.IsZero() || zr.Name != "" {
		t.Errorf("gzip header has time %v name %q, want none", zr.ModTime, zr.Name)
	}
	tr := tar.NewReader(zr)
	var names []string
	for {
		h, err := tr.Next()
		if err != nil {
			break
		}
		names = append(names, h.Name)
		if h.Uid != 0 || h.Gid != 0 || h.Uname != "" || h.Gname != "" || h.ModTime.Unix() != 0 {
			t.Errorf("entry %s: uid %d gid %d uname %q gname %q mtime %v, want zeroed", h.Name, h.Uid, h.Gid, h.Uname, h.Gname, h.ModTime)
		}
		if h.Mode != 0o644 && h.Mode != 0o755 {
			t.Errorf("entry %s: mode %#o, want 0644 or 0755", h.Name, h.Mode)
		}
	}
	if !slices.IsSorted(names) || len(names) != 4 {
		t.Errorf("entries = %q, want 4 sorted", names)
	}
}

// unpackCases are hostile or malformed archives; each is refused with its
// own code and message, and nothing is written outside the staging dir.
var unpackCases = []struct {
	name    string
	entries []entry
	limits  *Limits
	code    capability.Reason
	msg     string
}{
	{"path traversal", []entry{{name: "manifest.yaml", body: "x"}, {name: "../x", body: "pwned"}}, nil, capability.ReasonPluginPathInvalid, "path traverses upwards"},
	{"deep traversal", []entry{{name: "a/../../x", body: "pwned"}}, nil, capability.ReasonPluginPathInvalid, "path traverses upwards"},
	{"absolute path", []entry{{name: "/tmp/x", body: "pwned"}}, nil, capability.ReasonPluginPathInvalid, "absolute path"},
	{"symlink entry", []entry{{name: "lib", typ: tar.TypeSymlink, linkname: "/etc"}}, nil, capability.ReasonPluginLink, "symbolic link entry refused"},
	{"symlink then write through it", []entry{{name: "up", typ: tar.TypeSymlink, linkname: ".."}, {name: "up/x", body: "pwned"}}, nil, capability.ReasonPluginLink, "symbolic link entry refused"},
	{"hard link", []entry{{name: "a", body: "x"}, {name: "b", typ: tar.TypeLink, linkname: "a"}}, nil, capability.ReasonPluginLink, "hard link entry refused"},
	{"char device", []entry{{name: "null", typ: tar.TypeChar}}, nil, capability.ReasonPluginSpecialFile, "device or FIFO"},
	{"fifo", []entry{{name: "p", typ: tar.TypeFifo}}, nil, capability.ReasonPluginSpecialFile, "device or FIFO"},
	{"setuid", []entry{{name: "bin/x", mode: 0o4755, body: "x"}}, nil, capability.ReasonPluginSpecialFile, "setuid"},
	{"duplicate", []entry{{name: "a", body: "1"}, {name: "a", body: "2"}}, nil, capability.ReasonPluginDuplicateEntry, "duplicate entry"},
	{"file as dir", []entry{{name: "a", body: "1"}, {name: "a/b", body: "2"}}, nil, capability.ReasonPluginDuplicateEntry, "parent a is a file"},
	{"dir then file", []entry{{name: "a/", typ: tar.TypeDir, mode: 0o755}, {name: "a", body: "2"}}, nil, capability.ReasonPluginDuplicateEntry, "duplicate entry"},
	{"too many files", []entry{{name: "a", body: "1"}, {name: "b", body: "2"}, {name: "c", body: "3"}}, &Limits{MaxFiles: 2}, capability.ReasonPluginArchiveLimit, "more than 2 entries"},
	{"file too large", []entry{{name: "a", body: string(make([]byte, 2000))}}, &Limits{MaxFileSize: 1000}, capability.ReasonPluginArchiveLimit, "file larger than 1000 bytes"},
	{"total too large", []entry{{name: "a", body: string(make([]byte, 600))}, {name: "b", body: string(make([]byte, 600))}}, &Limits{MaxTotalSize: 1000}, capability.ReasonPluginArchiveLimit, "package larger than 1000 bytes"},
	{"unknown entry type", []entry{{name: "g", typ: 'Q'}}, nil, capability.ReasonPluginArchiveInvalid, "entry type"},
}

func TestUnpackRefuses(t *testing.T) {
	for _, tt := range unpackCases {
		t.Run(tt.name, func(t *testing.T) {
			base := t.TempDir()
			work := filepath.Join(base, "work")
			os.Mkdir(work, 0o700)
			staging := filepath.Join(work, "staging")
			before := snapshot(t, base)
			_, err := Unpack(t.Context(), bytes.NewReader(makeArchive(t, tt.entries)), staging, &UnpackOptions{Limits: tt.limits})
			wantCode(t, "Unpack", err, tt.code, tt.msg)
			if after := snapshot(t, base); !slices.Equal(before, after) {
				t.Fatalf("Unpack left %q, want %q (nothing outside or inside staging)", after, before)
			}
			if _, err := os.Lstat(filepath.Join(base, "x")); err == nil {
				t.Fatal("traversal target written")
			}
		})
	}
}

func TestUnpackBomb(t *testing.T) {
	// 64 MiB of zeros compresses to ~64 KiB; with a 1 MiB limit the
	// decompression stops early instead of writing 64 MiB.
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	tw.WriteHeader(&tar.Header{Name: "zeros", Mode: 0o644, Size: 64 << 20, Typeflag: tar.TypeReg})
	zero := make([]byte, 1<<20)
	for range 64 {
		tw.Write(zero)
	}
	tw.Close()
	zw.Close()
	staging := filepath.Join(t.TempDir(), "s")
	_, err := Unpack(t.Context(), &buf, staging, &UnpackOptions{Limits: &Limits{MaxTotalSize: 1 << 20, MaxFileSize: 1 << 30, MaxFiles: 10}})
	wantCode(t, "Unpack(bomb)", err, capability.ReasonPluginArchiveLimit, "")
	if _, err := os.Stat(staging); !os.IsNotExist(err) {
		t.Fatalf("staging dir left behind: %v", err)
	}
}

func TestUnpackNotGzip(t *testing.T) {
	_, err := Unpack(t.Context(), bytes.NewReader([]byte("manifest.yaml")), filepath.Join(t.TempDir(), "s"), nil)
	wantCode(t, "Unpack(text)", err, capability.ReasonPluginArchiveInvalid, "not a gzip stream")
}

func TestUnpackAcceptsDotSlash(t *testing.T) {
	data := makeArchive(t, []entry{{name: "./", typ: tar.TypeDir, mode: 0o755}, {name: "./manifest.yaml", body: "m"}, {name: "./bin/", typ: tar.TypeDir, mode: 0o755}, {name: "./bin/x", mode: 0o755, body: "x"}})
	tree, err := Unpack(t.Context(), bytes.NewReader(data), filepath.Join(t.TempDir(), "s"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(tree.Files) != 2 || tree.Files[0].Path != "bin/x" || tree.Files[0].Mode != ModeExec {
		t.Fatalf("Unpack(./ entries) = %+v", tree.Files)
	}
}

// FuzzUnpack checks that Unpack never panics, never writes outside the
// staging directory, and that whatever it accepts hashes to the same tree
// when read back from disk.
func FuzzUnpack(f *testing.F) {
	// A valid package archive.
	f.Add(makeArchive(f, []entry{{name: "manifest.yaml", body: "schema_version: 2\n"}, {name: "bin/x", mode: 0o755, body: "#!/bin/sh\n"}}))
	// Every hostile archive of the table test.
	for _, c := range unpackCases {
		f.Add(makeArchive(f, c.entries))
	}
	// Not gzip at all.
	f.Add([]byte("not an archive"))
	// A truncated gzip stream.
	full := makeArchive(f, []entry{{name: "a", body: "hello world"}})
	f.Add(full[:len(full)/2])
	f.Fuzz(func(t *testing.T, data []byte) {
		base := t.TempDir()
		staging := filepath.Join(base, "s")
		tree, err := Unpack(t.Context(), bytes.NewReader(data), staging, &UnpackOptions{Limits: &Limits{MaxFiles: 64, MaxFileSize: 1 << 20, MaxTotalSize: 4 << 20}})
		for _, p := range snapshot(t, base) {
			if p != "./" && p != "s/" && !bytes.HasPrefix([]byte(p), []byte("s/")) {
				t.Fatalf("Unpack wrote %q outside staging", p)
			}
		}
		if err != nil {
			if capability.ReasonOf(err) == "" {
				t.Fatalf("Unpack error without code: %v", err)
			}
			if _, serr := os.Stat(staging); !os.IsNotExist(serr) {
				t.Fatalf("staging left after error %v", err)
			}
			return
		}
		again, err := HashDir(t.Context(), staging, nil)
		if err != nil {
			t.Fatalf("HashDir(unpacked) = %v", err)
		}
		if again.Root() != tree.Root() {
			t.Fatalf("unpacked tree root %v, re-hashed %v", tree.Root(), again.Root())
		}
	})
}
