package gate_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/gate"
)

// TestAcceptEditsLinksInside: in acceptEdits, cp or mv into a directory
// that holds a symbolic link or a second name of a file asks (the red
// team's R23: cp config dst wrote .git/config through dst/config), and
// into one that holds neither runs without asking.
func TestAcceptEditsLinksInside(t *testing.T) {
	ws := t.TempDir()
	for _, d := range []string{"src/plain", "src/linked/deep", "src/hard", ".git"} {
		if err := os.MkdirAll(filepath.Join(ws, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"src/a.go", ".git/config", "src/plain/x"} {
		if err := os.WriteFile(filepath.Join(ws, f), []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("../../../.git/config", filepath.Join(ws, "src", "linked", "deep", "a.go")); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(ws, ".git", "config"), filepath.Join(ws, "src", "hard", "a.go")); err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, withMode(gate.ModeAcceptEdits), func(o *gate.Options, _ *fixture) { o.Workspace = ws })
	for _, tt := range []struct {
		cmd  string
		want capability.Reason
	}{
		{"cp src/a.go src/plain", capability.ReasonAllowed},
		{"mv src/plain/x src/y", capability.ReasonAllowed},
		{"cp -r src/plain/. src/linked", capability.ReasonApprovalDenied},
		{"cp src/a.go src/linked/deep", capability.ReasonApprovalDenied},
		{"mv src/a.go src/hard", capability.ReasonApprovalDenied},
	} {
		t.Run(tt.cmd, func(t *testing.T) {
			wantReason(t, f.g.Execute(t.Context(), bash(tt.cmd)), tt.want)
		})
	}
}
