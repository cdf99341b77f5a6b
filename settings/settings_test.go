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

// TestLineBreaks: lines end in \n or \r\n, and positions count them the
// same way; a bare \r is refused at its own position, wherever it is.
func TestLineBreaks(t *testing.T) {
	const lf = "permissions:\n  deny: [Read]\n  ask: [\n    Bash]\n"
	want, err := Parse("s.yaml", []byte(lf), ScopeWorkspace, testWorkspace)
	if err != nil {
		t.Fatal(err)
	}
	crlf := strings.ReplaceAll(lf, "\n", "\r\n")
	got, err := Parse("s.yaml", []byte(crlf), ScopeWorkspace, testWorkspace)
	if err != nil {
		t.Fatalf("Parse(%q) = %v", crlf, err)
	}
	for i := range want.Rules {
		if got.Rules[i].Source != want.Rules[i].Source {
			t.Errorf("rule %q: CRLF source %v, LF source %v", got.Rules[i].Text, got.Rules[i].Source, want.Rules[i].Source)
		}
	}
	tests := []struct {
		in   string
		want string // the position of the error
	}{
		{"permissions:\n  deny: [\rA]", "s.yaml:2:10:"},
		{"\rpermissions: {}\n", "s.yaml:1:1:"},
		{"permissions:\r  deny: [Read]\r", "s.yaml:1:13:"},
		{"# x\rpermissions:\r  deny: [Read]\n", "s.yaml:1:4:"},
		{"permissions:\r\r\n  deny: [Read]\r\n", "s.yaml:1:13:"},
		{"env:\n  A: \"é\r\"\n", "s.yaml:2:8:"}, // columns count characters
		{"permissions:\n  deny: [Read]\r", "s.yaml:2:15:"},
	}
	for _, tt := range tests {
		_, err := Parse("s.yaml", []byte(tt.in), ScopeWorkspace, testWorkspace)
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) || !strings.Contains(err.Error(), "bare carriage return") {
			t.Errorf("Parse(%q) = %v, want %s bare carriage return", tt.in, err, tt.want)
		}
	}
}
