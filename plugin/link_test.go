package plugin

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/manifest"
)

// npmLinks adds an npm-style tree to the package dir: a script and the
// .bin links that name it (one directly, one through the other).
func npmLinks(t *testing.T, dir string) []byte {
	t.Helper()
	script := []byte("#!/usr/bin/env node\nconsole.log('hi')\n")
	if err := os.MkdirAll(filepath.Join(dir, "node_modules", "pkg", "dist"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(dir, "node_modules", ".bin"), 0o755)
	if err := os.WriteFile(filepath.Join(dir, "node_modules", "pkg", "dist", "index.js"), script, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{"x": "../pkg/dist/index.js", "y": "x"} {
		if err := os.Symlink(target, filepath.Join(dir, "node_modules", ".bin", name)); err != nil {
			t.Fatal(err)
		}
	}
	return script
}

// TestPackageLinksResolved: a symbolic link to a file inside the package
// is stored as a regular copy of it, with its mode, by every walk of a
// source tree — Stage (install --dev DIR), Pack and HashDir (sign) — so
// all three agree on the tree.
func TestPackageLinksResolved(t *testing.T) {
	ctx := t.Context()
	dir := copyFixture(t, "issue-helper-1.4.0")
	script := npmLinks(t, dir)

	hashed, err := HashDir(ctx, dir, nil)
	if err != nil {
		t.Fatalf("HashDir: %v", err)
	}
	staged := filepath.Join(t.TempDir(), "staged")
	tree, err := Stage(ctx, dir, staged, nil)
	if err != nil {
		t.Fatalf("Stage: %v", err)
	}
	var buf bytes.Buffer
	if err := Pack(ctx, dir, &buf, nil); err != nil {
		t.Fatalf("Pack: %v", err)
	}
	unpacked := filepath.Join(t.TempDir(), "unpacked")
	fromPack, err := Unpack(ctx, &buf, unpacked, nil)
	if err != nil {
		t.Fatalf("Unpack(Pack): %v", err)
	}
	if hashed.Root() != tree.Root() || tree.Root() != fromPack.Root() {
		t.Fatalf("HashDir, Stage and Pack disagree: %v %v %v", hashed.Root(), tree.Root(), fromPack.Root())
	}
	for _, root := range []string{staged, unpacked} {
		for _, name := range []string{"x", "y"} {
			p := filepath.Join(root, "node_modules", ".bin", name)
			fi, err := os.Lstat(p)
			if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
				t.Fatalf("%s: %v %v, want an executable regular file", p, fi, err)
			}
			if b, _ := os.ReadFile(p); !bytes.Equal(b, script) {
				t.Errorf("%s = %q, want the target's content", p, b)
			}
		}
	}
	if f, ok := tree.Lookup("node_modules/.bin/x"); !ok || f.Mode != 0o755 {
		t.Errorf("tree entry of the link = %+v %v", f, ok)
	}
}

// TestPackageLinksRefused: a link that leaves the package (absolute, or
// relative and out), dangles, comes back in from outside or names a
// directory is refused with PLUGIN_LINK by install --dev DIR and by pack,
// and nothing is installed or written.
func TestPackageLinksRefused(t *testing.T) {
	ctx := t.Context()
	grant, err := manifest.ParseLayerFile(filepath.Join("testdata", "grant-reports-only.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "outside.txt")
	os.WriteFile(outside, []byte("not package content"), 0o644)
	tests := []struct {
		name   string
		target func(dir string) string
	}{
		{"absolute /etc/passwd", func(string) string { return "/etc/passwd" }},
		{"relative out of the package", func(dir string) string {
			rel, _ := filepath.Rel(filepath.Join(dir, "node_modules", ".bin"), outside)
			return rel
		}},
		{"to ../outside", func(string) string { return "../../../outside" }},
		{"absolute into the package", func(dir string) string { return filepath.Join(dir, "node_modules", "pkg", "dist", "index.js") }},
		{"out and back in", func(dir string) string {
			return "../../../" + filepath.Base(dir) + "/node_modules/pkg/dist/index.js"
		}},
		{"dangling", func(string) string { return "../pkg/dist/missing.js" }},
		{"directory", func(string) string { return "../pkg" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			m := e.manager(t, nil, nil)
			dir := copyFixture(t, "issue-helper-1.4.0")
			npmLinks(t, dir)
			link := filepath.Join(dir, "node_modules", ".bin", "evil")
			if err := os.Symlink(tt.target(dir), link); err != nil {
				t.Fatal(err)
			}
			before := snapshot(t, e.home)
			_, err := m.Install(ctx, dir, InstallOptions{Dev: true, Grant: grant})
			wantCode(t, "Install --dev", err, capability.ReasonPluginLink, "node_modules/.bin/evil")
			if after := snapshot(t, e.home); !slices.Equal(before, after) {
				t.Errorf("refused install changed the state directory:\nbefore %q\nafter  %q", before, after)
			}
			if len(e.audit.events) != 0 {
				t.Errorf("refused install audited %v", e.audit.types())
			}
			var buf bytes.Buffer
			err = Pack(ctx, dir, &buf, nil)
			wantCode(t, "Pack", err, capability.ReasonPluginLink, "node_modules/.bin/evil")
			if buf.Len() != 0 {
				t.Errorf("refused pack wrote %d bytes", buf.Len())
			}
			dst := filepath.Join(t.TempDir(), "staged")
			_, err = Stage(ctx, dir, dst, nil)
			wantCode(t, "Stage", err, capability.ReasonPluginLink, "")
			if _, err := os.Lstat(dst); err == nil {
				t.Error("refused stage left its directory")
			}
		})
	}
}
