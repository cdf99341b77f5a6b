package fsguard

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/norma-run/norma/capability"
)

// policy is a test Checker that mimics a compiled policy with doublestar
// globs: deny beats everything, then read/write allow lists. It records
// every request it is asked about.
type policy struct {
	read, write, deny []string
	quiet             bool // do not record (benchmarks)

	mu  sync.Mutex
	log []capability.Request
}

// testPolicy is the policy of the issue: read everything, write out/**,
// never .env* files or anything in a .git directory, at any depth.
func testPolicy() *policy {
	return &policy{
		read:  []string{"**"},
		write: []string{"out/**"},
		deny:  []string{"**/.env*", "**/.git/**"},
	}
}

// allowAll allows everything and records the requests.
func allowAll() *policy {
	return &policy{read: []string{"**"}, write: []string{"**"}}
}

func (p *policy) Decide(_ context.Context, r capability.Request) capability.Decision {
	if !p.quiet {
		p.mu.Lock()
		p.log = append(p.log, r)
		p.mu.Unlock()
	}
	d := capability.Decision{Mode: capability.Deny, Layer: "workspace", Request: r.String()}
	for i, g := range p.deny {
		if ok, err := doublestar.Match(g, r.Path); ok || err != nil {
			d.Reason = capability.ReasonFilesystemDenyRule
			d.Rule = fmt.Sprintf("permissions.filesystem.deny[%d]", i)
			return d
		}
	}
	list, reason := p.read, capability.ReasonFilesystemReadDenied
	if r.Kind == capability.FSWrite {
		list, reason = p.write, capability.ReasonFilesystemWriteDenied
	}
	for _, g := range list {
		if ok, _ := doublestar.Match(g, r.Path); ok {
			d.Mode, d.Reason = capability.Allow, capability.ReasonAllowed
			return d
		}
	}
	d.Reason = reason
	return d
}

func (p *policy) requests() []capability.Request {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.log)
}

func (p *policy) reset() {
	p.mu.Lock()
	p.log = nil
	p.mu.Unlock()
}

// makeTree creates a layout under base, described as data like Go's
// os/root_test.go:
//
//	"dir/"            a directory
//	"file"            a regular file whose content is "content of file"
//	"file = text"     a regular file with that content
//	"link => target"  a symbolic link; "$BASE" in target is replaced by base
//	"name == other"   a hard link to the existing file other (base-relative)
func makeTree(t testing.TB, base string, layout []string) {
	t.Helper()
	for _, e := range layout {
		switch {
		case strings.Contains(e, " => "):
			name, target, _ := strings.Cut(e, " => ")
			target = strings.ReplaceAll(target, "$BASE", base)
			mkparent(t, base, name)
			if err := os.Symlink(target, filepath.Join(base, name)); err != nil {
				t.Fatal(err)
			}
		case strings.Contains(e, " == "):
			name, old, _ := strings.Cut(e, " == ")
			mkparent(t, base, name)
			if err := os.Link(filepath.Join(base, old), filepath.Join(base, name)); err != nil {
				t.Fatal(err)
			}
		case strings.HasSuffix(e, "/"):
			if err := os.MkdirAll(filepath.Join(base, e), 0o755); err != nil {
				t.Fatal(err)
			}
		default:
			name, content, ok := strings.Cut(e, " = ")
			if !ok {
				content = "content of " + name
			}
			mkparent(t, base, name)
			if err := os.WriteFile(filepath.Join(base, name), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func mkparent(t testing.TB, base, name string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(filepath.Join(base, name)), 0o755); err != nil {
		t.Fatal(err)
	}
}

// standardLayout is the tree most tests run on: the workspace is ws/, and
// everything outside it (outside/, secret.txt) holds canaries.
var standardLayout = []string{
	"secret.txt = TOP-SECRET-OUTSIDE",
	"outside/token.txt = OUTSIDE-TOKEN",
	"outside/f = OUTSIDE-CANARY",
	"ws/README.md",
	"ws/.env = ENV-SECRET",
	"ws/a/b/.env.local = ENV-LOCAL-SECRET",
	"ws/.git/config = GIT-CONFIG-SECRET",
	"ws/sub/.git/HEAD = GIT-HEAD-SECRET",
	"ws/sub/code.go",
	"ws/output/file.txt",
	"ws/output/link-to-outside => ../../outside",
	"ws/output/abs-link => $BASE/outside",
	"ws/output/abs-inside => $BASE/ws/README.md",
	"ws/output/up => ../..",
	"ws/output/sneaky => ../out/../../outside",
	"ws/output/chain => link-to-outside",
	"ws/link-to-env => .env",
	"ws/out/",
	"ws/out/report.md",
	"ws/out/link-to-git => ../.git/config",
	"ws/out/link-to-readme => ../README.md",
}

// secrets are contents that must never come back from the guard in the
// standard layout under testPolicy.
var secrets = []string{"TOP-SECRET-OUTSIDE", "OUTSIDE-TOKEN", "OUTSIDE-CANARY", "ENV-SECRET", "ENV-LOCAL-SECRET", "GIT-CONFIG-SECRET", "GIT-HEAD-SECRET"}

// setup builds layout in a fresh temporary directory and opens base/ws.
func setup(t testing.TB, layout []string, checker capability.Decider) (base string, f *FS) {
	t.Helper()
	base = t.TempDir()
	makeTree(t, base, layout)
	f, err := New(filepath.Join(base, "ws"), checker)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return base, f
}

// snapshot describes every file under base: type, permission bits, link
// target, content digest and link count. Two equal snapshots mean nothing
// was created, written, renamed or removed.
func snapshot(t testing.TB, base string) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		desc := fi.Mode().String()
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			desc += " -> " + target
		case fi.Mode().IsRegular():
			b, _ := os.ReadFile(p)
			sum := sha256.Sum256(b)
			desc += " " + hex.EncodeToString(sum[:8])
			if st, ok := fi.Sys().(*syscall.Stat_t); ok {
				desc += fmt.Sprint(" links=", st.Nlink)
			}
		}
		rel, _ := filepath.Rel(base, p)
		m[rel] = desc
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// assertUnchanged fails when the tree under base differs from before.
func assertUnchanged(t testing.TB, base string, before map[string]string) {
	t.Helper()
	after := snapshot(t, base)
	for k, v := range after {
		if bv, ok := before[k]; !ok {
			t.Errorf("created %s (%s)", k, v)
		} else if bv != v {
			t.Errorf("changed %s: %s => %s", k, bv, v)
		}
	}
	for k := range before {
		if _, ok := after[k]; !ok {
			t.Errorf("removed %s", k)
		}
	}
}

// assertNoSecret fails when b holds any canary content.
func assertNoSecret(t testing.TB, b []byte) {
	t.Helper()
	for _, s := range secrets {
		if strings.Contains(string(b), s) {
			t.Fatalf("guard returned protected content %q", s)
		}
	}
}

// reasonOf returns the reason code of err, or "" for no refusal, or the
// error text for an error that is not a refusal.
func reasonOf(err error) string {
	if err == nil {
		return ""
	}
	if r := capability.ReasonOf(err); r != "" {
		return string(r)
	}
	return "error: " + err.Error()
}

// wantPathError checks the shape every error has: *fs.PathError (or
// *os.LinkError for Rename) naming the caller's path.
func wantPathError(t testing.TB, err error, name string) {
	t.Helper()
	if pe, ok := errors.AsType[*fs.PathError](err); ok {
		if pe.Path != name {
			t.Errorf("PathError.Path = %q, want %q", pe.Path, name)
		}
		return
	}
	if _, ok := errors.AsType[*os.LinkError](err); ok {
		return
	}
	t.Errorf("error %T %v is not a *fs.PathError", err, err)
}
