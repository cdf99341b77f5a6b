package fsguard

import (
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/norma-run/norma/capability"
)

func benchPolicy() *policy {
	p := testPolicy()
	p.quiet = true
	return p
}

func setupBig(b *testing.B) (string, *FS) {
	base, f := setup(b, standardLayout, benchPolicy())
	data := make([]byte, 10<<20)
	for i := range data {
		data[i] = byte(i)
	}
	if err := os.WriteFile(filepath.Join(base, "ws/out/big.bin"), data, 0o644); err != nil {
		b.Fatal(err)
	}
	return base, f
}

func BenchmarkReadFile10MB(b *testing.B) {
	_, f := setupBig(b)
	ctx := b.Context()
	b.SetBytes(10 << 20)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := f.ReadFile(ctx, "out/big.bin"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkOSReadFile10MB(b *testing.B) {
	base, _ := setupBig(b)
	p := filepath.Join(base, "ws/out/big.bin")
	b.SetBytes(10 << 20)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := os.ReadFile(p); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkReadFileSmall(b *testing.B) {
	base, f := setup(b, standardLayout, benchPolicy())
	ctx := b.Context()
	b.Run("guard", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := f.ReadFile(ctx, "sub/code.go"); err != nil {
				b.Fatal(err)
			}
		}
	})
	// With a protected directory (Norma's state directory, as a run opens
	// the guard): one fstatat per component of the path.
	prot, err := NewWithOptions(filepath.Join(base, "ws"), benchPolicy(), &Options{Protected: []string{filepath.Join(base, "outside")}})
	if err != nil {
		b.Fatal(err)
	}
	defer prot.Close()
	b.Run("guard-protected", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := prot.ReadFile(ctx, "sub/code.go"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("os", func(b *testing.B) {
		p := filepath.Join(base, "ws/sub/code.go")
		b.ReportAllocs()
		for b.Loop() {
			if _, err := os.ReadFile(p); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkResolve(b *testing.B) {
	_, f := setup(b, resolveLayout, benchPolicy())
	for _, name := range []string{
		"README.md",                      // top level, exists
		"docs/guide/intro.md",            // three components, no link
		"workspace://./a/../docs/guide/", // URI with dots
		"out/new/file.txt",               // parent missing (slow path)
		"docs/latest",                    // two links (slow path)
		"../secret.txt",                  // refused lexically
	} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				f.Resolve(name)
			}
		})
	}
}

// BenchmarkWalkDir50k walks 50,000 files in 500 directories through the
// guard (one policy check per entry) and with filepath.WalkDir.
func BenchmarkWalkDir50k(b *testing.B) {
	base, f := setup(b, standardLayout, benchPolicy())
	for d := range 500 {
		dir := filepath.Join(base, "ws/tree", strconv.Itoa(d/50), strconv.Itoa(d))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		for i := range 100 {
			if err := os.WriteFile(filepath.Join(dir, "f"+strconv.Itoa(i)+".go"), nil, 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	ctx := b.Context()
	allow, err := New(filepath.Join(base, "ws"), capability.AllowAll{})
	if err != nil {
		b.Fatal(err)
	}
	defer allow.Close()
	b.Run("guard-allowall", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			n := 0
			allow.WalkDir(ctx, "tree", func(string, fs.DirEntry, error) error { n++; return nil })
			if n < 50_000 {
				b.Fatalf("walked %d entries", n)
			}
		}
	})
	b.Run("guard-globs", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			n := 0
			f.WalkDir(ctx, "tree", func(string, fs.DirEntry, error) error { n++; return nil })
			if n < 50_000 {
				b.Fatalf("walked %d entries", n)
			}
		}
	})
	prot, err := NewWithOptions(filepath.Join(base, "ws"), benchPolicy(), &Options{Protected: []string{filepath.Join(base, "outside")}})
	if err != nil {
		b.Fatal(err)
	}
	defer prot.Close()
	b.Run("guard-globs-protected", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			n := 0
			prot.WalkDir(ctx, "tree", func(string, fs.DirEntry, error) error { n++; return nil })
			if n < 50_000 {
				b.Fatalf("walked %d entries", n)
			}
		}
	})
	b.Run("filepath", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			n := 0
			filepath.WalkDir(filepath.Join(base, "ws/tree"), func(string, fs.DirEntry, error) error { n++; return nil })
			if n < 50_000 {
				b.Fatalf("walked %d entries", n)
			}
		}
	})
}
