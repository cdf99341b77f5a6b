package fsguard

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/norma-run/norma/capability"
)

// TestPolicy runs operations under testPolicy (read **, write out/**, deny
// **/.env* and **/.git/**). Each refused case asserts the code, that no
// protected content came back and that nothing changed on disk; the
// negative control shows the same call succeeds under allow-all, so the
// refusal comes from the policy on the resolved path.
func TestPolicy(t *testing.T) {
	tests := []struct {
		name    string
		op      string // an operations[].name
		path    string
		want    capability.Reason // "" for allowed
		checked string            // the canonical path the checker must have been asked about
	}{
		{name: "read .env", op: "ReadFile", path: ".env", want: capability.ReasonFilesystemDenyRule, checked: ".env"},
		{name: "read .env via URI", op: "ReadFile", path: "workspace://.env", want: capability.ReasonFilesystemDenyRule, checked: ".env"},
		{name: "read nested .env.local", op: "ReadFile", path: "a/b/.env.local", want: capability.ReasonFilesystemDenyRule},
		{name: "read .git/config", op: "ReadFile", path: ".git/config", want: capability.ReasonFilesystemDenyRule},
		{name: "read nested .git/HEAD", op: "Open", path: "sub/.git/HEAD", want: capability.ReasonFilesystemDenyRule},
		{name: "read symlink to .env", op: "ReadFile", path: "link-to-env", want: capability.ReasonFilesystemDenyRule, checked: ".env"},
		{name: "read symlink to .git/config", op: "ReadFile", path: "out/link-to-git", want: capability.ReasonFilesystemDenyRule, checked: ".git/config"},
		{name: "dotted spelling of .env", op: "ReadFile", path: "./a/../.env", want: capability.ReasonFilesystemDenyRule, checked: ".env"},
		{name: "stat .env", op: "Stat", path: ".env", want: capability.ReasonFilesystemDenyRule},
		{name: "list .git", op: "ReadDir", path: ".git", want: capability.ReasonFilesystemDenyRule},
		{name: "write .env in out", op: "WriteFile", path: "out/.env", want: capability.ReasonFilesystemDenyRule},
		{name: "create in out/.git", op: "MkdirAll", path: "out/.git/hooks", want: capability.ReasonFilesystemDenyRule, checked: "out/.git"},
		{name: "write outside write root", op: "WriteFile", path: "README.md", want: capability.ReasonFilesystemWriteDenied},
		{name: "truncate outside write root", op: "OpenFile/CREATE|TRUNC", path: "README.md", want: capability.ReasonFilesystemWriteDenied},
		{name: "write through link in out to .git", op: "OpenFile/APPEND", path: "out/link-to-git", want: capability.ReasonFilesystemDenyRule, checked: ".git/config"},
		{name: "write through link in out to README", op: "WriteFile", path: "out/link-to-readme", want: capability.ReasonFilesystemWriteDenied, checked: "README.md"},
		{name: "mkdir outside write root", op: "MkdirAll", path: "new/dir", want: capability.ReasonFilesystemWriteDenied, checked: "new"},
		{name: "remove outside write root", op: "Remove", path: "README.md", want: capability.ReasonFilesystemWriteDenied},
		{name: "remove .env", op: "Remove", path: ".env", want: capability.ReasonFilesystemDenyRule},
		{name: "rename from outside write root", op: "Rename/from", path: "README.md", want: capability.ReasonFilesystemWriteDenied},
		{name: "rename onto .env", op: "Rename/to", path: "out/.env", want: capability.ReasonFilesystemDenyRule},
		{name: "rename onto README", op: "Rename/to", path: "README.md", want: capability.ReasonFilesystemWriteDenied},
		// Allowed controls.
		{name: "read README", op: "ReadFile", path: "README.md", checked: "README.md"},
		{name: "write in out", op: "WriteFile", path: "out/new.txt", checked: "out/new.txt"},
		{name: "remove symlink in out removes the link only", op: "Remove", path: "out/link-to-readme", checked: "out/link-to-readme"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			op := operationNamed(t, tt.op)
			pol := testPolicy()
			base, f := setup(t, standardLayout, pol)
			before := snapshot(t, base)
			got, err := op.do(t.Context(), f, tt.path)
			if r := reasonOf(err); r != string(tt.want) {
				t.Fatalf("%s(%q) = %q, %s; want %q", tt.op, tt.path, got, r, tt.want)
			}
			if tt.checked != "" && !slices.ContainsFunc(pol.requests(), func(r capability.Request) bool { return r.Path == tt.checked }) {
				t.Errorf("checker was asked %v, want a request for %q", pol.requests(), tt.checked)
			}
			if tt.want == "" {
				if tt.op == "Remove" {
					if _, err := os.Stat(filepath.Join(base, "ws/README.md")); err != nil {
						t.Errorf("removing the link touched its target: %v", err)
					}
				}
				return
			}
			if len(got) != 0 {
				t.Errorf("refusal returned content %q", got)
			}
			assertNoSecret(t, got)
			assertUnchanged(t, base, before)

			// Negative control: the same call goes through when the
			// policy allows everything.
			_, g := setup(t, standardLayout, allowAll())
			if _, err := op.do(t.Context(), g, tt.path); capability.ReasonOf(err) != "" {
				t.Errorf("control: %s(%q) under allow-all = %v", tt.op, tt.path, err)
			}
		})
	}
}

func operationNamed(t *testing.T, name string) operation {
	for _, op := range operations {
		if op.name == name {
			return op
		}
	}
	t.Fatalf("no operation %q", name)
	return operation{}
}

func TestReadDirOmitsDenied(t *testing.T) {
	_, f := setup(t, standardLayout, testPolicy())
	ents, err := f.ReadDir(t.Context(), ".")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	want := []string{"README.md", "a", "link-to-env", "out", "output", "sub"}
	if !slices.Equal(names, want) {
		t.Errorf("ReadDir(.) = %q, want %q", names, want)
	}
	// Info goes through the guard and describes the link itself.
	for _, e := range ents {
		if e.Name() != "link-to-env" {
			continue
		}
		fi, err := e.Info()
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 || fi.Name() != "link-to-env" {
			t.Errorf("Info(link-to-env) = %v, %v; want the link", fi, err)
		}
	}
}

func TestWalkDirNeverEntersDenied(t *testing.T) {
	pol := testPolicy()
	_, f := setup(t, standardLayout, pol)
	var visited []string
	err := f.WalkDir(t.Context(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		visited = append(visited, p)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{".", "README.md", "a", "a/b", "link-to-env", "out", "out/link-to-git", "out/link-to-readme", "out/report.md",
		"output", "output/abs-inside", "output/abs-link", "output/chain", "output/file.txt", "output/link-to-outside", "output/sneaky", "output/up",
		"sub", "sub/code.go"}
	if !slices.Equal(visited, want) {
		t.Errorf("WalkDir visited\n%q\nwant\n%q", visited, want)
	}
	for _, r := range pol.requests() {
		if strings.Contains(r.Path, ".git/") {
			t.Errorf("WalkDir descended into a denied directory: asked about %q", r.Path)
		}
	}
}

func TestWalkDirSkip(t *testing.T) {
	_, f := setup(t, standardLayout, testPolicy())
	var visited []string
	err := f.WalkDir(t.Context(), "workspace://", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		visited = append(visited, p)
		switch p {
		case "a", "output/chain":
			return fs.SkipDir // a directory: skip it; a file: skip the rest of output
		case "sub":
			return fs.SkipAll
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{".", "README.md", "a", "link-to-env", "out", "out/link-to-git", "out/link-to-readme", "out/report.md",
		"output", "output/abs-inside", "output/abs-link", "output/chain", "sub"}
	if !slices.Equal(visited, want) {
		t.Errorf("WalkDir visited\n%q\nwant\n%q", visited, want)
	}
}

// TestRenameDirectoryChecksEveryEntry: moving a directory moves what is in
// it, so a directory holding a denied file cannot be renamed.
func TestRenameDirectoryChecksEveryEntry(t *testing.T) {
	layout := append(slices.Clone(standardLayout), "ws/out/dir/sub/.env.prod = PROD-SECRET", "ws/out/clean/x/y")
	pol := testPolicy()
	base, f := setup(t, layout, pol)
	before := snapshot(t, base)
	err := f.Rename(t.Context(), "out/dir", "out/dir2")
	if r := capability.ReasonOf(err); r != capability.ReasonFilesystemDenyRule {
		t.Fatalf("Rename(out/dir, out/dir2) = %v, want FILESYSTEM_DENY_RULE", err)
	}
	assertUnchanged(t, base, before)
	if err := f.Rename(t.Context(), "out/clean", "out/clean2"); err != nil {
		t.Fatalf("Rename(out/clean, out/clean2) = %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(base, "ws/out/clean2/x/y")); err != nil || string(b) != "content of ws/out/clean/x/y" {
		t.Errorf("after rename: %q, %v", b, err)
	}
	if !slices.ContainsFunc(pol.requests(), func(r capability.Request) bool { return r.Path == "out/clean2/x/y" && r.Kind == capability.FSWrite }) {
		t.Errorf("rename did not check the moved entry under its new name: %v", pol.requests())
	}
}

func TestMkdirAllChecksEachCreated(t *testing.T) {
	pol := testPolicy()
	base, f := setup(t, standardLayout, pol)
	if err := f.MkdirAll(t.Context(), "out/a/b/c", 0o755); err != nil {
		t.Fatal(err)
	}
	var writes []string
	for _, r := range pol.requests() {
		if r.Kind == capability.FSWrite {
			writes = append(writes, r.Path)
		}
	}
	if want := []string{"out/a", "out/a/b", "out/a/b/c"}; !slices.Equal(writes, want) {
		t.Errorf("MkdirAll write checks = %q, want %q", writes, want)
	}
	if fi, err := os.Stat(filepath.Join(base, "ws/out/a/b/c")); err != nil || !fi.IsDir() {
		t.Errorf("directory not created: %v", err)
	}
	// Existing: no write check at all.
	pol.reset()
	if err := f.MkdirAll(t.Context(), "out/a/b", 0o755); err != nil || len(pol.requests()) != 0 {
		t.Errorf("MkdirAll(existing) = %v, checks %v", err, pol.requests())
	}
	// A file in the way.
	if err := f.MkdirAll(t.Context(), "out/report.md/x", 0o755); err == nil {
		t.Error("MkdirAll through a file succeeded")
	}
}

// TestReadFileDecidesBeforeExistence: a denied name is refused by policy
// whether or not it exists, so a refusal never reveals existence; an
// allowed missing name is a plain not-exist error. This holds on the
// fast path (no link in the name) and through a link.
func TestReadFileDecidesBeforeExistence(t *testing.T) {
	_, f := setup(t, standardLayout, testPolicy())
	for _, name := range []string{".env", "sub/.env.missing", ".git/nothing-here", "link-to-env"} {
		_, err := f.ReadFile(t.Context(), name)
		if reasonOf(err) != string(capability.ReasonFilesystemDenyRule) {
			t.Errorf("ReadFile(%s) = %v, want the deny rule", name, err)
		}
	}
	if _, err := f.ReadFile(t.Context(), "sub/missing.txt"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadFile(allowed missing) = %v, want not-exist", err)
	}
	if b, err := f.ReadFile(t.Context(), "README.md"); err != nil || len(b) == 0 {
		t.Errorf("ReadFile(README.md) = %q, %v", b, err)
	}
}
