package builtin_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// The 50,000-file tree is built once per test process, in a temp dir that
// TestMain removes.
var (
	treeOnce sync.Once
	treeDir  string
	treeErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if treeDir != "" {
		os.RemoveAll(treeDir)
	}
	os.Exit(code)
}

const (
	treeDirs  = 500
	treeFiles = 100 // per directory: 50,000 files
)

func bigTree(b *testing.B) string {
	treeOnce.Do(func() {
		treeDir, treeErr = os.MkdirTemp("", "norma-grep-bench-")
		if treeErr != nil {
			return
		}
		line := "the quick brown fox jumps over the lazy dog 0123456789 lorem ipsum dolor sit amet\n"
		body := strings.Repeat(line, 24) // ~2 KiB
		for d := range treeDirs {
			dir := filepath.Join(treeDir, fmt.Sprintf("pkg%03d", d))
			if treeErr = os.MkdirAll(dir, 0o755); treeErr != nil {
				return
			}
			for i := range treeFiles {
				c := body
				if (d*treeFiles+i)%997 == 0 {
					c += "needle_in_haystack here\n"
				}
				if treeErr = os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%03d.txt", i)), []byte(c), 0o644); treeErr != nil {
					return
				}
			}
		}
	})
	if treeErr != nil {
		b.Fatal(treeErr)
	}
	return treeDir
}

// BenchmarkGrep50k compares Grep through the whole gate and the guards with
// GNU grep -r on the same 50,000-file tree, in the same run.
func BenchmarkGrep50k(b *testing.B) {
	dir := bigTree(b)
	wantFiles := 0
	for n := range treeDirs * treeFiles {
		if n%997 == 0 {
			wantFiles++
		}
	}
	b.Run("tool=Grep", func(b *testing.B) {
		f := newFixture(b, fixtureOpts{dir: dir})
		b.ReportAllocs()
		for b.Loop() {
			r := f.call(b, "Grep", `{"pattern":"needle_in_haystack","head_limit":5000}`)
			if r.IsError || strings.Count(r.Content, "\n")+1 != wantFiles {
				b.Fatalf("Grep = %s %q", r.Reason, short(r.Content))
			}
		}
	})
	b.Run("tool=Grep/regexp", func(b *testing.B) {
		f := newFixture(b, fixtureOpts{dir: dir})
		b.ReportAllocs()
		for b.Loop() {
			r := f.call(b, "Grep", `{"pattern":"needle_[a-z_]+ here","head_limit":5000}`)
			if r.IsError || strings.Count(r.Content, "\n")+1 != wantFiles {
				b.Fatalf("Grep = %s %q", r.Reason, short(r.Content))
			}
		}
	})
	grep, err := exec.LookPath("grep")
	if err != nil {
		b.Skip("grep is not installed")
	}
	b.Run("tool=gnu-grep-r", func(b *testing.B) {
		for b.Loop() {
			out, err := exec.Command(grep, "-r", "-l", "needle_in_haystack", dir).Output()
			if err != nil || strings.Count(string(out), "\n") != wantFiles {
				b.Fatalf("grep -r: %v (%d lines)", err, strings.Count(string(out), "\n"))
			}
		}
	})
}

// BenchmarkRead10MB compares reading a 10 MB file with os.ReadFile, through
// the file guard, and with the Read tool through the whole gate.
func BenchmarkRead10MB(b *testing.B) {
	f := newFixture(b, fixtureOpts{})
	var sb strings.Builder
	for sb.Len() < 10<<20 {
		sb.WriteString("the quick brown fox jumps over the lazy dog 0123456789 lorem ipsum dolor sit amet\n")
	}
	f.write(b, map[string]string{"big.txt": sb.String()})
	lines := strings.Count(sb.String(), "\n")
	host := filepath.Join(f.dir, "big.txt")
	b.Run("read=os.ReadFile", func(b *testing.B) {
		b.SetBytes(int64(sb.Len()))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := os.ReadFile(host); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("read=fsguard.ReadFile", func(b *testing.B) {
		b.SetBytes(int64(sb.Len()))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := f.fs.ReadFile(b.Context(), "big.txt"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("read=Read-tool-via-gate", func(b *testing.B) {
		b.SetBytes(int64(sb.Len()))
		b.ReportAllocs()
		in := fmt.Sprintf(`{"path":"big.txt","limit":%d}`, lines)
		for b.Loop() {
			if r := f.call(b, "Read", in); r.IsError {
				b.Fatal(r.Content)
			}
		}
	})
}
