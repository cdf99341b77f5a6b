package sandbox_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/norma-run/norma/sandbox"
)

// TestDeniedDirHoldsGrants: a grant inside a denied directory that lies in
// no grant (a plugin's package and data directory in Norma's state
// directory) shows through, and nothing else of that directory does: not
// the other entries, not their names — the directories on the way down to
// the grants cannot be listed — and nothing can be created there. Without
// the deny, the sandbox's own directories on the way are listable (the
// negative control).
func TestDeniedDirHoldsGrants(t *testing.T) {
	requireSandbox(t)
	parent := t.TempDir()
	state := filepath.Join(parent, "state")
	for _, d := range []string{"plugins/mine", "plugins/other", "secrets"} {
		os.MkdirAll(filepath.Join(state, d), 0o755)
		os.WriteFile(filepath.Join(state, d, "f"), []byte(d), 0o644)
	}
	mine, ca := filepath.Join(state, "plugins", "mine"), filepath.Join(state, "secrets", "f")
	script := `cat ` + mine + `/f; echo; cat ` + ca + `; echo; echo new > ` + mine + `/new && echo WROTE
for d in ` + state + ` ` + state + `/plugins ` + state + `/secrets; do if ls $d; then echo LISTED $d; fi; done
if cat ` + state + `/plugins/other/f; then echo READ-OTHER; fi
if mkdir ` + state + `/plugins/x; then echo MKDIR; fi
`
	spec := func(deny []string) sandbox.Spec {
		return sandbox.Spec{Argv: []string{"sh", "-c", script}, ReadOnly: []string{ca}, ReadWrite: []string{mine}, Deny: deny, Env: []string{"PATH=/usr/bin:/bin"}}
	}
	res, o := run(t, spec([]string{state}))
	out := o.stdout.String()
	if res.ExitCode != 0 || !strings.HasPrefix(out, "plugins/mine\nsecrets\nWROTE\n") {
		t.Fatalf("control: the grants cannot be used: %+v\n%s%s", res, out, o.stderr.String())
	}
	for _, leak := range []string{"LISTED", "other", "READ-OTHER", "MKDIR"} {
		if strings.Contains(out, leak) {
			t.Errorf("the denied directory showed %s:\n%s", leak, out)
		}
	}
	if _, err := os.Stat(filepath.Join(state, "plugins", "x")); err == nil {
		t.Error("mkdir inside the denied directory reached the host")
	}
	// Negative control: without the deny, the sandbox's skeleton lists.
	_, o = run(t, spec(nil))
	if !strings.Contains(o.stdout.String(), "LISTED "+state+"/plugins") {
		t.Errorf("control without the deny: %s", o.stdout.String())
	}
}
