package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestFrontStandInsMatch: the front build's stand-in for each command it
// does not link reads, in --help, as that command does in the full build.
func TestFrontStandInsMatch(t *testing.T) {
	for _, tc := range []struct {
		h    heavyCmd
		real func() *cobra.Command
	}{
		{runCmdName, newRunCmd}, {pluginCmdName, newPluginCmd}, {demoCmdName, newDemoCmd},
		{mcpCmdName, newMCPCmd}, {serveCmdName, newServeCmd},
	} {
		s, r := standIn(tc.h), tc.real()
		if s.Use != r.Use || s.Short != r.Short || s.Hidden != r.Hidden || strings.Join(s.Aliases, ",") != strings.Join(r.Aliases, ",") {
			t.Errorf("stand-in %q/%q, command %q/%q", s.Use, s.Short, r.Use, r.Short)
		}
	}
}

// fullBin is the full build beside normaBin's front build.
func fullBin(t *testing.T) string {
	return filepath.Join(filepath.Dir(normaBin(t)), fullExe)
}

// TestDoorFrontHelpMatchesFull: whichever binary answers, the user reads
// the same help, for the root, a linked command and a delegated one, by
// --help and by `norma help NAME`, and the same completions.
func TestDoorFrontHelpMatchesFull(t *testing.T) {
	for _, args := range [][]string{
		{"--help"}, {"policy", "--help"}, {"run", "--help"}, {"help", "run"}, {"help", "serve"},
		{"plugin", "install", "--help"}, {"--home", t.TempDir(), "mcp", "--help"},
		{"__complete", "run", "--pro"}, {"__complete", "pol"},
	} {
		fc, fout, ferr := door(t, args...)
		cmd := exec.Command(fullBin(t), args...)
		gc, gout, gerr := doorCmd(t, cmd)
		if fc != gc || fout != gout || ferr != gerr {
			t.Errorf("norma %v: front exit %d\n%s%s\nfull exit %d\n%s%s", args, fc, fout, ferr, gc, gout, gerr)
		}
		if fc != 0 || fout == "" {
			t.Errorf("norma %v: exit %d, %d bytes", args, fc, len(fout))
		}
	}
}

// TestDoorFrontDelegates: a command the front does not link runs in the
// full build with the front's arguments (a root flag before the command
// included), streams and exit code.
func TestDoorFrontDelegates(t *testing.T) {
	home, dir := t.TempDir(), t.TempDir()
	key := filepath.Join(dir, "pub")
	code, _, errs := door(t, "--home", home, "plugin", "keygen", "--out", key)
	if code != 0 {
		t.Fatalf("plugin keygen: exit %d\n%s", code, errs)
	}
	for _, f := range []string{key + ".key", key + ".pub"} {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("plugin keygen through the front: %v", err)
		}
	}
	// A usage error keeps its exit code and message through the exec.
	fc, _, ferr := door(t, "run", "--no-such-flag", "x")
	gc, _, gerr := doorCmd(t, exec.Command(fullBin(t), "run", "--no-such-flag", "x"))
	if fc != exitUsage || fc != gc || ferr != gerr {
		t.Errorf("run --no-such-flag: front %d %q, full %d %q", fc, ferr, gc, gerr)
	}
}

// TestDoorFrontWithoutFull: a front build alone runs what it links and
// refuses the rest, naming what is missing, with nothing done.
func TestDoorFrontWithoutFull(t *testing.T) {
	dir := t.TempDir()
	front := filepath.Join(dir, "norma")
	b, err := os.ReadFile(normaBin(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(front, b, 0o755); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := doorCmd(t, exec.Command(front, "--help")); code != 0 || !strings.Contains(out, "policy") {
		t.Fatalf("--help alone: exit %d\n%s%s", code, out, errs)
	}
	key := filepath.Join(dir, "k")
	code, _, errs := doorCmd(t, exec.Command(front, "--home", t.TempDir(), "plugin", "keygen", "--out", key))
	if code != exitInternal || !strings.Contains(errs, filepath.Join(dir, fullExe)) {
		t.Errorf("plugin keygen without norma-full: exit %d\n%s", code, errs)
	}
	if m, _ := filepath.Glob(key + "*"); len(m) != 0 {
		t.Errorf("files written without norma-full: %v", m)
	}
}
