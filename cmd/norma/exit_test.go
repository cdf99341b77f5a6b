package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMissingFileExits1: a file named on the command line that is not
// there is invalid input (exit 1, as the README says), never an internal
// error (4) — whichever flag or argument names it.
func TestMissingFileExits1(t *testing.T) {
	home, ws := t.TempDir(), t.TempDir()
	missing := filepath.Join(t.TempDir(), "missing.yaml")
	script := filepath.Join(t.TempDir(), "script.yaml")
	os.WriteFile(script, []byte("turns:\n  - text: hi\n"), 0o644)
	for _, args := range [][]string{
		{"run", "--workspace", ws, "--script", missing, "go"},
		{"run", "--workspace", ws, "--script", script, "--settings", missing, "go"},
		{"policy", "explain", "--workspace", ws, "--settings", missing, "--tool", "Read", "--input", "{}"},
		{"policy", "explain", "--manifest", missing, "--tool", "x"},
		{"policy", "explain", "--workspace-policy", missing, "--tool", "Read"},
		{"policy", "test", missing},
		{"manifest", "lint", missing},
		{"manifest", "show", missing},
		{"manifest", "diff", missing, helperManifest},
		{"plugin", "install", missing},
		{"plugin", "install", "--dev", missing + ".tar.gz"},
		{"plugin", "update", missing},
		{"plugin", "verify", missing},
		{"plugin", "consent", "com.example.echo", "--yes", "--grant", missing},
		{"settings", "show", "--settings", missing},
		{"audit", "verify", "--checkpoint", missing},
		{"audit", "checkpoint", "--out", filepath.Join(missing, "out")},
	} {
		code, out, errs := norma(t, append([]string{"--home", home}, args...)...)
		if code != exitFailed || !strings.Contains(out+errs, "no such file") {
			t.Errorf("norma %s: exit %d, want 1 naming the missing file\n%s%s", strings.Join(args, " "), code, out, errs)
		}
	}
}
