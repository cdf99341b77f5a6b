package sandbox_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/norma-run/norma/sandbox"
)

// TestSkeletonDirsCannotBeListed: the directories the sandbox creates to
// hold its binds (the parents of a granted path) can be passed through but
// not listed, so a process does not learn the names of the other binds
// beside its own (a plugin's id and data directory in the state
// directory, another grant). The grants themselves list as usual.
func TestSkeletonDirsCannotBeListed(t *testing.T) {
	requireSandbox(t)
	parent := t.TempDir()
	for _, d := range []string{"mine", "other-grant", "not-granted"} {
		os.MkdirAll(filepath.Join(parent, "state", d), 0o755)
		os.WriteFile(filepath.Join(parent, "state", d, "f"), []byte(d), 0o644)
	}
	mine, other := filepath.Join(parent, "state", "mine"), filepath.Join(parent, "state", "other-grant")
	script := `cat ` + mine + `/f; echo; ls ` + mine + `
if ls ` + filepath.Join(parent, "state") + `; then echo LISTED-STATE; fi
if ls ` + parent + `; then echo LISTED-PARENT; fi
if ls ` + filepath.Dir(parent) + `; then echo LISTED-GRANDPARENT; fi
`
	res, o := run(t, sandbox.Spec{Argv: []string{"sh", "-c", script}, ReadOnly: []string{other}, ReadWrite: []string{mine}, Env: []string{"PATH=/usr/bin:/bin"}})
	out := o.stdout.String()
	if res.ExitCode != 0 || !strings.HasPrefix(out, "mine\nf\n") {
		t.Fatalf("control: the grant cannot be read or listed: %+v\n%s%s", res, out, o.stderr.String())
	}
	for _, leak := range []string{"LISTED", "other-grant", "not-granted"} {
		if strings.Contains(out, leak) {
			t.Errorf("the skeleton was listed (%s):\n%s", leak, out)
		}
	}
	if !strings.Contains(o.stderr.String(), "Permission denied") {
		t.Errorf("stderr = %q, want Permission denied", o.stderr.String())
	}
}
