package sandbox_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/norma-run/norma/internal/treetest"
	"github.com/norma-run/norma/sandbox"
)

// TestPinKeepsNames performs the rename, remove, replace and link attacks
// on pinned and denied paths with a real shell: each must fail, the hidden
// content never appears, and the host tree is byte-for-byte the same
// afterwards. A negative control shows that the same rename succeeds
// without the pin, so the refusal comes from it.
func TestPinKeepsNames(t *testing.T) {
	requireSandbox(t)
	ws := t.TempDir()
	const canary = "canary-pinned-7f3a"
	for name, body := range map[string]string{
		"docs/a.md":              "public\n",
		"docs/private/secret":    canary + "\n",
		".norma/policy.yaml":     "schema_version: 2\nkind: workspace\n",
		".norma/memory/notes.md": "notes\n",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(ws, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		mustWrite(t, filepath.Join(ws, name), body)
	}
	spec := func(script string, pins ...string) sandbox.Spec {
		return sandbox.Spec{
			Argv:      []string{"/bin/sh", "-c", script},
			Dir:       ws,
			ReadWrite: []string{ws},
			Deny:      []string{filepath.Join(ws, "docs/private"), filepath.Join(ws, ".norma/policy.yaml")},
			Pin:       pins,
		}
	}
	pins := []string{filepath.Join(ws, "docs"), filepath.Join(ws, ".norma"), filepath.Join(ws, "missing")}
	before := treetest.Snapshot(t, ws)
	attacks := []string{
		"mv docs docs2",
		"mv docs docs2 && cat docs2/private/secret",
		"mv docs/private docs/p",
		"rmdir docs/private",
		"rm -rf docs/private",
		"mv .norma x && mkdir .norma && printf widening > .norma/policy.yaml",
		"rm -f .norma/policy.yaml",
		"mv .norma/policy.yaml .norma/old.yaml",
		"printf widening > .norma/policy.yaml",
		"ln .norma/policy.yaml p.yaml",
		"cp -al .norma n2",
		"ln -s .norma/policy.yaml p.yaml && cat p.yaml",
		"cat docs/private/secret",
		"ls -la docs/private",
	}
	for _, a := range attacks {
		res, o := run(t, spec(a, pins...))
		out := o.stdout.String() + o.stderr.String()
		if res.ExitCode == 0 {
			t.Errorf("%q succeeded in the sandbox; output %q", a, out)
		}
		if strings.Contains(out, canary) {
			t.Errorf("%q printed the hidden canary: %q", a, out)
		}
		// Undo what a partly successful attack created (n2/, p.yaml), so
		// that only changes to what was there count.
		for _, extra := range []string{"n2", "p.yaml", "docs2", "x"} {
			if _, err := os.Lstat(filepath.Join(ws, extra)); err == nil {
				os.RemoveAll(filepath.Join(ws, extra))
			}
		}
		treetest.Equal(t, ws, before)
	}
	// Writes inside a pinned directory still work: the pin keeps the
	// grant's access.
	if res, o := run(t, spec("echo new > docs/new.md && echo more >> .norma/memory/notes.md", pins...)); res.ExitCode != 0 {
		t.Fatalf("writing inside pinned directories failed: %+v %q", res, o.stderr.String())
	}
	if b, err := os.ReadFile(filepath.Join(ws, "docs/new.md")); err != nil || string(b) != "new\n" {
		t.Errorf("docs/new.md = %q, %v; want new", b, err)
	}
	// Negative control: without the pins the rename goes through.
	if res, o := run(t, spec("mv docs docs2 && mv docs2 docs")); res.ExitCode != 0 {
		t.Errorf("without pins, mv docs docs2 failed: %+v %q; the pin test proves nothing", res, o.stderr.String())
	}
}
