package fsguard

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/norma-run/norma/capability"
)

// operation is one FS method driven with a name. It returns whatever
// content reached the caller, so tests can assert none of it is protected.
type operation struct {
	name   string
	noFoll bool // acts on a final symbolic link itself
	do     func(ctx context.Context, f *FS, name string) ([]byte, error)
}

func readAll(file *os.File, err error) ([]byte, error) {
	if err != nil {
		return nil, err
	}
	defer file.Close()
	return io.ReadAll(file)
}

func writeAndClose(file *os.File, err error) ([]byte, error) {
	if err != nil {
		return nil, err
	}
	defer file.Close()
	_, err = file.WriteString("PWNED")
	return nil, err
}

var operations = []operation{
	{name: "ReadFile", do: func(ctx context.Context, f *FS, n string) ([]byte, error) { return f.ReadFile(ctx, n) }},
	{name: "Open", do: func(ctx context.Context, f *FS, n string) ([]byte, error) { return readAll(f.Open(ctx, n)) }},
	{name: "OpenFile/RDWR", do: func(ctx context.Context, f *FS, n string) ([]byte, error) {
		return readAll(f.OpenFile(ctx, n, os.O_RDWR, 0))
	}},
	{name: "OpenFile/CREATE|TRUNC", do: func(ctx context.Context, f *FS, n string) ([]byte, error) {
		return writeAndClose(f.OpenFile(ctx, n, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644))
	}},
	{name: "OpenFile/APPEND", do: func(ctx context.Context, f *FS, n string) ([]byte, error) {
		return writeAndClose(f.OpenFile(ctx, n, os.O_WRONLY|os.O_APPEND, 0))
	}},
	{name: "WriteFile", do: func(ctx context.Context, f *FS, n string) ([]byte, error) {
		return nil, f.WriteFile(ctx, n, []byte("PWNED"), 0o644)
	}},
	{name: "MkdirAll", do: func(ctx context.Context, f *FS, n string) ([]byte, error) { return nil, f.MkdirAll(ctx, n, 0o755) }},
	{name: "Remove", noFoll: true, do: func(ctx context.Context, f *FS, n string) ([]byte, error) { return nil, f.Remove(ctx, n) }},
	{name: "Rename/from", noFoll: true, do: func(ctx context.Context, f *FS, n string) ([]byte, error) {
		return nil, f.Rename(ctx, n, "out/moved")
	}},
	{name: "Rename/to", noFoll: true, do: func(ctx context.Context, f *FS, n string) ([]byte, error) {
		return nil, f.Rename(ctx, "out/report.md", n)
	}},
	{name: "Stat", do: func(ctx context.Context, f *FS, n string) ([]byte, error) {
		fi, err := f.Stat(ctx, n)
		if err != nil {
			return nil, err
		}
		return []byte(fi.Name()), nil
	}},
	{name: "Lstat", noFoll: true, do: func(ctx context.Context, f *FS, n string) ([]byte, error) {
		fi, err := f.Lstat(ctx, n)
		if err != nil {
			return nil, err
		}
		return []byte(fi.Name()), nil
	}},
	{name: "ReadDir", do: func(ctx context.Context, f *FS, n string) ([]byte, error) {
		ents, err := f.ReadDir(ctx, n)
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		return []byte(strings.Join(names, "\n")), err
	}},
	{name: "WalkDir", do: func(ctx context.Context, f *FS, n string) ([]byte, error) {
		var got []byte
		err := f.WalkDir(ctx, n, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.Type().IsRegular() {
				b, err := f.ReadFile(ctx, p)
				got = append(got, b...)
				return err
			}
			return nil
		})
		return got, err
	}},
	{name: "Resolve", do: func(_ context.Context, f *FS, n string) ([]byte, error) {
		p, err := f.Resolve(n)
		return []byte(p), err
	}},
}

// escapeTests are names that must be refused with PATH_ESCAPE by every
// operation, even under a policy that allows everything.
var escapeTests = []struct {
	name string
	path string
	// reaches is the canary a plain os.ReadFile of root+path returns: the
	// negative control showing the case is a real escape that only the
	// guard stops.
	reaches string
	// followOnly: the name ends in a link, which Remove, Rename and Lstat
	// act on without following, legitimately.
	followOnly bool
}{
	{name: "dotdot", path: "../secret.txt", reaches: "TOP-SECRET-OUTSIDE"},
	{name: "dotdot after directory", path: "output/../../secret.txt", reaches: "TOP-SECRET-OUTSIDE"},
	{name: "dotdot chain", path: "a/b/../../../secret.txt", reaches: "TOP-SECRET-OUTSIDE"},
	{name: "absolute", path: "/absolute/path.txt"},
	{name: "absolute existing", path: "/etc/passwd"},
	{name: "symlink to outside directory", path: "output/link-to-outside/token.txt", reaches: "OUTSIDE-TOKEN"},
	{name: "symlink to outside, new file", path: "output/link-to-outside/new.txt"},
	{name: "symlink whose target climbs out", path: "output/up/secret.txt", reaches: "TOP-SECRET-OUTSIDE"},
	{name: "symlink target with dotdot inside then out", path: "output/sneaky/token.txt", reaches: "OUTSIDE-TOKEN"},
	{name: "chain of in-root links ending outside", path: "output/chain/token.txt", reaches: "OUTSIDE-TOKEN"},
	{name: "absolute symlink", path: "output/abs-link/token.txt", reaches: "OUTSIDE-TOKEN"},
	{name: "absolute symlink into the root", path: "output/abs-inside", reaches: "content of ws/README.md", followOnly: true},
	{name: "bare symlink to outside", path: "output/link-to-outside", followOnly: true},
	{name: "NUL byte", path: "output/file.txt\x00.png"},
	{name: "workspace URI dotdot", path: "workspace://../secret.txt", reaches: ""},
	{name: "workspace URI absolute", path: "workspace:///etc/passwd"},
	{name: "workspace URI upper case through link", path: "WORKSPACE://output/link-to-outside/token.txt"},
	{name: "other scheme", path: "file:///etc/passwd"},
	{name: "backslash dotdot", path: `..\secret.txt`},
	{name: "backslash inside", path: `output\..\..\secret.txt`},
}

func TestEscapes(t *testing.T) {
	for _, tt := range escapeTests {
		t.Run(tt.name, func(t *testing.T) {
			pol := allowAll()
			base, f := setup(t, standardLayout, pol)
			if tt.reaches != "" {
				// Negative control: without the guard the name leads out.
				b, err := os.ReadFile(filepath.Join(base, "ws", tt.path))
				if err != nil || !strings.Contains(string(b), tt.reaches) {
					t.Fatalf("control: os.ReadFile(root/%q) = %q, %v; want %q", tt.path, b, err, tt.reaches)
				}
			}
			for _, op := range operations {
				if tt.followOnly && op.noFoll {
					continue
				}
				t.Run(op.name, func(t *testing.T) {
					pol.reset()
					before := snapshot(t, base)
					got, err := op.do(t.Context(), f, tt.path)
					if r := reasonOf(err); r != string(capability.ReasonPathEscape) {
						t.Fatalf("%s(%q) = %q, %s; want PATH_ESCAPE", op.name, tt.path, got, r)
					}
					if op.name != "Rename/to" && op.name != "Rename/from" && op.name != "WalkDir" {
						wantPathError(t, err, tt.path)
					}
					if len(got) != 0 {
						t.Errorf("%s(%q) returned %q with the refusal", op.name, tt.path, got)
					}
					assertNoSecret(t, got)
					assertUnchanged(t, base, before)
					if reqs := pol.requests(); len(reqs) != 0 && op.name != "Rename/to" {
						t.Errorf("checker asked %v before the escape was refused", reqs)
					}
				})
			}
		})
	}
}

// TestEscapeErrorShape: the refusal names the guard layer, carries the
// code, and never the host path of the workspace.
func TestEscapeErrorShape(t *testing.T) {
	base, f := setup(t, standardLayout, allowAll())
	_, err := f.ReadFile(t.Context(), "output/link-to-outside/token.txt")
	ce, ok := errors.AsType[*capability.Error](err)
	if !ok {
		t.Fatalf("ReadFile error %v does not carry a *capability.Error", err)
	}
	if ce.Decision.Mode != capability.Deny || ce.Decision.Layer != "guard" || ce.Decision.Reason != capability.ReasonPathEscape {
		t.Errorf("decision = %+v, want deny/guard/PATH_ESCAPE", ce.Decision)
	}
	if strings.Contains(err.Error(), base) {
		t.Errorf("error %q leaks the host path %q", err, base)
	}
}
