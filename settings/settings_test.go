package settings

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/norma-run/norma/manifest"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata (invalid/*.err, claude/*.golden)")

// testWorkspace is the workspace the table tests parse against; it only
// substitutes $CLAUDE_PROJECT_DIR and resolves relative programs, nothing
// is read from it.
const testWorkspace = "/work/ws"

// golden compares got with the file want, or rewrites it with -update.
func golden(t *testing.T, want string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(want, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	w, err := os.ReadFile(want)
	if err != nil {
		t.Fatalf("missing golden file (run go test -update): %v", err)
	}
	if string(got) != string(w) {
		t.Errorf("%s:\n got\n%s\n want\n%s", want, got, w)
	}
}

// TestInvalid parses every file in testdata/invalid and compares every
// problem it reports with the .err file beside it.
func TestInvalid(t *testing.T) {
	files, _ := filepath.Glob("testdata/invalid/*.yaml")
	if len(files) < 30 {
		t.Fatalf("only %d invalid cases", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			name := filepath.Base(f)
			got, err := Parse(name, data, ScopeWorkspace, testWorkspace)
			if err == nil {
				t.Fatalf("Parse(%s) = %+v, want an error", f, got)
			}
			var probs manifest.Errors
			if !errors.As(err, &probs) {
				t.Fatalf("Parse(%s) error is %T, want manifest.Errors", f, err)
			}
			msg := err.Error() + "\n"
			golden(t, strings.TrimSuffix(f, ".yaml")+".err", []byte(msg))
			for _, p := range probs {
				if p.File != name {
					t.Errorf("problem %q does not name the file", p)
				}
				if p.Line == 0 {
					t.Errorf("problem %q has no position", p)
				}
			}
		})
	}
}
