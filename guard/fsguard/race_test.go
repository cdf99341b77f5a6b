package fsguard

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/norma-run/norma/capability"
)

// TestHardLinks: a hard link is another name for the same inode, which may
// sit outside the workspace or under a deny rule. The guard refuses to open
// any regular file with more than one link, for reading or writing, before
// anything is read or truncated. WriteFile replaces the name atomically and
// so never writes into the shared inode: it is allowed and breaks the link.
func TestHardLinks(t *testing.T) {
	layout := append(slices.Clone(standardLayout),
		"ws/out/hl == outside/token.txt",
		"ws/notes.txt == ws/.env",
	)
	tests := []struct {
		op, path string
	}{
		{"ReadFile", "out/hl"},
		{"Open", "out/hl"},
		{"OpenFile/RDWR", "out/hl"},
		{"OpenFile/CREATE|TRUNC", "out/hl"},
		{"OpenFile/APPEND", "out/hl"},
		{"ReadFile", "notes.txt"},
	}
	for _, tt := range tests {
		t.Run(tt.op+"/"+tt.path, func(t *testing.T) {
			base, f := setup(t, layout, testPolicy())
			// Negative control: plain os reaches the aliased content.
			if b, _ := os.ReadFile(filepath.Join(base, "ws", tt.path)); !bytes.Contains(b, []byte("SECRET")) && !bytes.Contains(b, []byte("TOKEN")) {
				t.Fatalf("control: %s does not alias a secret: %q", tt.path, b)
			}
			before := snapshot(t, base)
			got, err := operationNamed(t, tt.op).do(t.Context(), f, tt.path)
			if r := capability.ReasonOf(err); r != capability.ReasonHardlinkRefused {
				t.Fatalf("%s(%q) = %q, %v; want HARDLINK_REFUSED", tt.op, tt.path, got, err)
			}
			assertNoSecret(t, got)
			assertUnchanged(t, base, before)
		})
	}
	t.Run("WriteFile replaces the name, not the inode", func(t *testing.T) {
		base, f := setup(t, layout, testPolicy())
		if err := f.WriteFile(t.Context(), "out/hl", []byte("new"), 0o644); err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(filepath.Join(base, "outside/token.txt")); string(b) != "OUTSIDE-TOKEN" {
			t.Errorf("outside file changed to %q", b)
		}
		if b, _ := f.ReadFile(t.Context(), "out/hl"); string(b) != "new" {
			t.Errorf("ReadFile(out/hl) = %q after WriteFile", b)
		}
	})
}

// exchange atomically swaps two names (renameat2 RENAME_EXCHANGE).
func exchange(a, b string) error {
	return unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE)
}

// TestSymlinkSwapRace swaps, from another goroutine and as fast as it can,
// a real directory of the workspace with a symbolic link to a directory
// outside it (or to the denied .git directory), while reads and writes run
// through the guard. The race must never win: no read returns outside or
// denied content, no write lands outside or in .git. Both outcomes (success
// and refusal) must be seen, proving the race was exercised.
func TestSymlinkSwapRace(t *testing.T) {
	targets := map[string]string{
		"outside": "../../outside",
		"denied":  "../.git",
	}
	iterations := 2000
	if testing.Short() {
		iterations = 300
	}
	for name, target := range targets {
		t.Run(name, func(t *testing.T) {
			layout := append(slices.Clone(standardLayout),
				"ws/out/d/f = ALLOWED",
				"ws/out/d.swap => "+target,
				"ws/.git/f = GIT-SECRET-F",
				"outside/f = OUTSIDE-CANARY",
			)
			base, f := setup(t, layout, testPolicy())
			d, swap := filepath.Join(base, "ws/out/d"), filepath.Join(base, "ws/out/d.swap")
			var stop atomic.Bool
			var wg sync.WaitGroup
			var swaps atomic.Int64
			wg.Go(func() {
				for !stop.Load() {
					if err := exchange(d, swap); err != nil {
						t.Errorf("exchange: %v", err)
						return
					}
					swaps.Add(1)
				}
			})
			var okReads, refused atomic.Int64
			ctx := t.Context()
			var workers sync.WaitGroup
			for w := range 2 {
				workers.Go(func() {
					for i := range iterations {
						b, err := f.ReadFile(ctx, "out/d/f")
						if err == nil {
							if string(b) != "ALLOWED" {
								t.Errorf("race won: read %q", b)
								return
							}
							okReads.Add(1)
						} else {
							refused.Add(1)
						}
						if file, err := f.Open(ctx, "out/d/f"); err == nil {
							var buf [64]byte
							n, _ := file.Read(buf[:])
							file.Close()
							if string(buf[:n]) != "ALLOWED" {
								t.Errorf("race won: opened %q", buf[:n])
								return
							}
						}
						nm := "out/d/w" + string(rune('a'+w))
						f.WriteFile(ctx, nm, []byte("PWNED"), 0o644)
						if file, err := f.OpenFile(ctx, "out/d/c"+string(rune('a'+w)), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644); err == nil {
							file.WriteString("PWNED")
							file.Close()
						}
						f.MkdirAll(ctx, "out/d/m/"+string(rune('a'+w))+"/"+string(rune('a'+i%26)), 0o755)
						f.Remove(ctx, "out/d/m/"+string(rune('a'+w))+"/"+string(rune('a'+i%26)))
					}
				})
			}
			workers.Wait()
			stop.Store(true)
			wg.Wait()
			t.Logf("%d swaps, %d reads allowed, %d refused", swaps.Load(), okReads.Load(), refused.Load())
			if okReads.Load() == 0 || refused.Load() == 0 {
				t.Errorf("race not exercised: %d allowed, %d refused", okReads.Load(), refused.Load())
			}
			// Nothing was written outside the workspace or into .git.
			for _, dir := range []string{filepath.Join(base, "outside"), filepath.Join(base, "ws/.git")} {
				ents, _ := os.ReadDir(dir)
				for _, e := range ents {
					if e.Name() != "f" && e.Name() != "token.txt" && e.Name() != "config" {
						t.Errorf("race won: %s/%s was created", dir, e.Name())
					}
				}
			}
			for _, p := range []string{"outside/f", "ws/.git/f", "outside/token.txt"} {
				b, _ := os.ReadFile(filepath.Join(base, p))
				if strings.Contains(string(b), "PWNED") {
					t.Errorf("race won: %s was written", p)
				}
			}
		})
	}
}

// TestFinalComponentSwapRace swaps the file itself with a link to an
// outside file: the guard must refuse (the link is never followed at use
// time) or read the real file.
func TestFinalComponentSwapRace(t *testing.T) {
	layout := append(slices.Clone(standardLayout), "ws/out/file = ALLOWED", "ws/out/file.swap => ../../outside/f")
	base, f := setup(t, layout, testPolicy())
	a, b := filepath.Join(base, "ws/out/file"), filepath.Join(base, "ws/out/file.swap")
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Go(func() {
		for !stop.Load() {
			exchange(a, b)
		}
	})
	var ok, refused int
	for range 3000 {
		got, err := f.ReadFile(t.Context(), "out/file")
		if err != nil {
			refused++
			continue
		}
		if string(got) != "ALLOWED" {
			t.Fatalf("race won: read %q", got)
		}
		ok++
	}
	stop.Store(true)
	wg.Wait()
	if ok == 0 || refused == 0 {
		t.Errorf("race not exercised: %d allowed, %d refused", ok, refused)
	}
}

// TestWriteFileAtomic: concurrent readers only ever see one complete
// version; a failing WriteFile leaves no temporary file behind.
func TestWriteFileAtomic(t *testing.T) {
	base, f := setup(t, standardLayout, testPolicy())
	ctx := t.Context()
	v1, v2 := bytes.Repeat([]byte("1"), 1<<20), bytes.Repeat([]byte("2"), 1<<20)
	if err := f.WriteFile(ctx, "out/big", v1, 0o644); err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Go(func() {
		for !stop.Load() {
			got, err := f.ReadFile(ctx, "out/big")
			if err != nil {
				t.Errorf("ReadFile: %v", err)
				return
			}
			if !bytes.Equal(got, v1) && !bytes.Equal(got, v2) {
				t.Errorf("torn read: %d bytes, starts %q", len(got), got[:min(8, len(got))])
				return
			}
		}
	})
	for i := range 40 {
		if err := f.WriteFile(ctx, "out/big", [][]byte{v1, v2}[i%2], 0o600); err != nil {
			t.Fatal(err)
		}
	}
	stop.Store(true)
	wg.Wait()
	if fi, err := os.Stat(filepath.Join(base, "ws/out/big")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("mode after WriteFile(0600) = %v, %v", fi.Mode(), err)
	}

	// Failures leave nothing behind.
	makeTree(t, base, []string{"ws/out/dir/keep"})
	before := snapshot(t, base)
	if err := f.WriteFile(ctx, "out/dir", []byte("x"), 0o644); !errors.Is(err, syscall.EISDIR) {
		t.Errorf("WriteFile(directory) = %v, want EISDIR", err)
	}
	if err := f.WriteFile(ctx, "out/missing/x", []byte("x"), 0o644); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("WriteFile(missing parent) = %v, want ErrNotExist", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := f.WriteFile(cctx, "out/new", []byte("x"), 0o644); err == nil {
		t.Error("WriteFile with a canceled context succeeded")
	}
	assertUnchanged(t, base, before)
}

func TestClose(t *testing.T) {
	_, f := setup(t, standardLayout, testPolicy())
	ctx := t.Context()
	file, err := f.Open(ctx, "README.md")
	if err != nil {
		t.Fatal(err)
	}
	// Concurrent operations and Close: no failure but ErrClosed, no race.
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 200 {
				if _, err := f.ReadFile(ctx, "README.md"); err != nil && !errors.Is(err, fs.ErrClosed) {
					t.Errorf("ReadFile during Close: %v", err)
				}
			}
		})
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if _, err := f.ReadFile(ctx, "README.md"); !errors.Is(err, fs.ErrClosed) {
		t.Errorf("ReadFile after Close = %v, want ErrClosed", err)
	}
	if err := f.Close(); !errors.Is(err, fs.ErrClosed) {
		t.Errorf("second Close = %v, want ErrClosed", err)
	}
	// Files opened before Close keep working, like os.Root.
	if b, err := readAll(file, nil); err != nil || string(b) != "content of ws/README.md" {
		t.Errorf("file opened before Close: %q, %v", b, err)
	}
	var zero FS
	if _, err := zero.ReadFile(ctx, "README.md"); err == nil {
		t.Error("zero FS allowed a read")
	}
}

func TestNew(t *testing.T) {
	dir := t.TempDir()
	if _, err := New("relative/dir", capability.AllowAll{}); err == nil {
		t.Error("New(relative) succeeded")
	}
	if _, err := New(dir, nil); err == nil {
		t.Error("New(nil checker) succeeded")
	}
	if _, err := New(filepath.Join(dir, "missing"), capability.AllowAll{}); err == nil {
		t.Error("New(missing) succeeded")
	}
	os.WriteFile(filepath.Join(dir, "file"), nil, 0o644)
	if _, err := New(filepath.Join(dir, "file"), capability.AllowAll{}); err == nil {
		t.Error("New(file) succeeded")
	}
}
