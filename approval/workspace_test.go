package approval_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/norma-run/norma/approval"
)

// TestWorkspaceID: the identity an approval is bound to follows the
// directory, not its name or its contents. A symbolic link to the
// workspace is the same workspace; the workspace moved, copied, or
// replaced by a new directory at the same path is another one.
func TestWorkspaceID(t *testing.T) {
	root := t.TempDir()
	ws := filepath.Join(root, "ws")
	if err := os.MkdirAll(filepath.Join(ws, ".norma"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(ws, ".norma", "policy.yaml"), []byte("kind: workspace\n"), 0o644)
	id := func(dir string) string {
		t.Helper()
		s, err := approval.WorkspaceID(dir)
		if err != nil {
			t.Fatalf("WorkspaceID(%s): %v", dir, err)
		}
		return s
	}
	orig := id(ws)
	if orig != id(ws+"/.") || orig != id(filepath.Join(ws, "..", "ws")) {
		t.Error("the same directory spelled differently has another identity")
	}
	link := filepath.Join(root, "link")
	if err := os.Symlink(ws, link); err != nil {
		t.Fatal(err)
	}
	if id(link) != orig {
		t.Error("a symbolic link to the workspace has another identity")
	}

	cp := filepath.Join(root, "copy")
	if out, err := exec.Command("cp", "-a", ws, cp).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	moved := filepath.Join(root, "moved")
	if err := os.Rename(ws, moved); err != nil {
		t.Fatal(err)
	}
	// cp -a of the copy back to the old path: same name, same contents.
	if out, err := exec.Command("cp", "-a", cp, ws).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	for name, dir := range map[string]string{"copied": cp, "moved": moved, "recreated at the same path": ws} {
		if id(dir) == orig {
			t.Errorf("the workspace %s keeps its identity", name)
		}
	}
	for _, bad := range []string{"", filepath.Join(root, "missing"), filepath.Join(moved, ".norma", "policy.yaml")} {
		if _, err := approval.WorkspaceID(bad); err == nil {
			t.Errorf("WorkspaceID(%q) succeeded", bad)
		}
	}
}
