package fsguard

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"github.com/norma-run/norma/capability"
)

var resolveLayout = append(slices.Clone(standardLayout),
	"ws/docs/guide/intro.md",
	"ws/docs/current => guide",
	"ws/docs/latest => current/intro.md",
	"ws/docs/up => ../out",
	"ws/docs/deep => ../a/b/../../docs/guide",
	"ws/loop1 => loop2",
	"ws/loop2 => loop1",
	"ws/self => self",
	"ws/dangling => out/not-yet",
	"ws/empty-dir/",
)

func TestResolve(t *testing.T) {
	tests := []struct {
		in   string
		want string // canonical path, or "!CODE" / "!errno"
	}{
		{"README.md", "README.md"},
		{"./README.md", "README.md"},
		{"a/../README.md", "README.md"},
		{"workspace://README.md", "README.md"},
		{"Workspace://docs//guide/", "docs/guide"},
		{"workspace://", "."},
		{".", "."},
		{"a/..", "."},
		{"docs/current/intro.md", "docs/guide/intro.md"},
		{"docs/latest", "docs/guide/intro.md"},
		{"docs/up/report.md", "out/report.md"},
		{"docs/deep/intro.md", "docs/guide/intro.md"},
		{"link-to-env", ".env"},
		{"dangling", "out/not-yet"},
		{"out/new/deeper.txt", "out/new/deeper.txt"},
		{"docs/current/new.md", "docs/guide/new.md"},
		{"README.md/x", "README.md/x"}, // fails later with ENOTDIR
		{"", "!" + string(capability.ReasonInvalidRequest)},
		{"..", "!PATH_ESCAPE"},
		{"../ws/README.md", "!PATH_ESCAPE"},
		{"/etc/passwd", "!PATH_ESCAPE"},
		{"a\x00b", "!PATH_ESCAPE"},
		{`a\b`, "!PATH_ESCAPE"},
		{"http://example.com/x", "!PATH_ESCAPE"},
		{"output/up/secret.txt", "!PATH_ESCAPE"},
		{"output/abs-inside", "!PATH_ESCAPE"},
		{"loop1", "!ELOOP"},
		{"self/x", "!ELOOP"},
	}
	_, f := setup(t, resolveLayout, allowAll())
	for _, tt := range tests {
		got, err := f.Resolve(tt.in)
		if err != nil {
			got = "!" + string(capability.ReasonOf(err))
			if errors.Is(err, syscall.ELOOP) {
				got = "!ELOOP"
			}
		}
		if got != tt.want {
			t.Errorf("Resolve(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestResolveNoFollowFinal(t *testing.T) {
	_, f := setup(t, resolveLayout, allowAll())
	fi, err := f.Lstat(t.Context(), "docs/latest")
	if err != nil || fi.Mode()&fs.ModeSymlink == 0 || fi.Name() != "latest" {
		t.Errorf("Lstat(docs/latest) = %v, %v; want the link", fi, err)
	}
	fi, err = f.Stat(t.Context(), "docs/latest")
	if err != nil || !fi.Mode().IsRegular() || fi.Name() != "intro.md" {
		t.Errorf("Stat(docs/latest) = %v, %v; want intro.md", fi, err)
	}
}

func TestOpenFile(t *testing.T) {
	base, f := setup(t, resolveLayout, testPolicy())
	ctx := t.Context()
	if _, err := f.OpenFile(ctx, "out/x", os.O_WRONLY|os.O_CREATE|syscall.O_NOFOLLOW, 0o644); capability.ReasonOf(err) != capability.ReasonInvalidRequest {
		t.Errorf("OpenFile(O_NOFOLLOW) = %v, want INVALID_REQUEST", err)
	}
	if _, err := f.Open(ctx, "docs"); !errors.Is(err, syscall.EISDIR) {
		t.Errorf("Open(directory) = %v, want EISDIR", err)
	}
	if err := syscall.Mkfifo(filepath.Join(base, "ws/out/fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Open(ctx, "out/fifo"); capability.ReasonOf(err) != capability.ReasonSpecialFileRefused {
		t.Errorf("Open(fifo) = %v, want SPECIAL_FILE_REFUSED (and no hang)", err)
	}
	// Create, write, append, truncate.
	w, err := f.OpenFile(ctx, "out/n.txt", os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	w.WriteString("hello")
	w.Close()
	if _, err := f.OpenFile(ctx, "out/n.txt", os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600); !errors.Is(err, fs.ErrExist) {
		t.Errorf("O_EXCL on existing = %v", err)
	}
	a, err := f.OpenFile(ctx, "out/n.txt", os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	a.WriteString(" world")
	a.Close()
	if b, _ := f.ReadFile(ctx, "out/n.txt"); string(b) != "hello world" {
		t.Errorf("after append: %q", b)
	}
	tr, err := f.OpenFile(ctx, "out/n.txt", os.O_RDWR|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	tr.Close()
	if b, _ := f.ReadFile(ctx, "out/n.txt"); len(b) != 0 {
		t.Errorf("after O_TRUNC: %q", b)
	}
	// Creating through a dangling link creates its in-root target, which is
	// what the policy was asked about.
	// "dangling" itself is not under out/, but its target out/not-yet is.
	if err := f.WriteFile(ctx, "dangling", []byte("via link"), 0o644); err != nil {
		t.Errorf("WriteFile(dangling) = %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(base, "ws/out/not-yet")); string(b) != "via link" {
		t.Errorf("dangling link target = %q", b)
	}
}

func TestRemoveAndRename(t *testing.T) {
	base, f := setup(t, resolveLayout, testPolicy())
	ctx := t.Context()
	f.MkdirAll(ctx, "out/e", 0o755)
	if err := f.Remove(ctx, "out/e"); err != nil {
		t.Errorf("Remove(empty dir) = %v", err)
	}
	if err := f.Remove(ctx, "out"); err == nil {
		t.Error("Remove(non-empty dir) succeeded")
	}
	if err := f.Remove(ctx, "."); capability.ReasonOf(err) == "" {
		t.Errorf("Remove(root) = %v", err)
	}
	if err := f.Rename(ctx, "out/report.md", "out/r2.md"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(base, "ws/out/r2.md")); err != nil {
		t.Error(err)
	}
}
