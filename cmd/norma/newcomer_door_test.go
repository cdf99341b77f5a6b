package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/norma-run/norma/settings"
)

// TestDoorUnknownCommand: the built binary refuses an unknown subcommand
// of a group with exit 2 and a suggestion on stderr, and prints the help
// of a group named alone (exit 0), as of norma itself.
func TestDoorUnknownCommand(t *testing.T) {
	home := t.TempDir()
	code, out, errs := door(t, "--home", home, "mcp", "ad", "foo")
	if code != exitUsage || out != "" ||
		!strings.Contains(errs, `norma: unknown command "ad" for "norma mcp"`) ||
		!strings.Contains(errs, "Did you mean this?\n\tadd\n") {
		t.Errorf("norma mcp ad foo: exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
	for _, args := range [][]string{{"plugin", "lst"}, {"settings", "sohw"}, {"approvals", "zzz"}, {"audit", "verfy"}, {"secret", "zzz"}, {"policy", "explian"}, {"polcy"}} {
		code, _, errs := door(t, append([]string{"--home", home}, args...)...)
		if code != exitUsage || !strings.Contains(errs, `norma: unknown command "`+args[len(args)-1]+`"`) {
			t.Errorf("norma %s: exit %d\n%s", strings.Join(args, " "), code, errs)
		}
	}
	for _, args := range [][]string{{}, {"mcp"}, {"settings"}} {
		code, out, errs := door(t, append([]string{"--home", home}, args...)...)
		if code != exitOK || !strings.Contains(out, "Usage:\n") || !strings.Contains(out, "Available Commands:") || errs != "" {
			t.Errorf("norma %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, out, errs)
		}
	}
}

// TestDoorUnknownFlag: an unknown flag exits 2 and names the flag likely
// meant.
func TestDoorUnknownFlag(t *testing.T) {
	code, out, errs := door(t, "--home", t.TempDir(), "policy", "explain", "--tol", "Bash")
	if code != exitUsage || out != "" || errs != "norma: unknown flag: --tol (did you mean --tool?)\n" {
		t.Errorf("policy explain --tol Bash: exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
}

// TestDoorSettingsInit: `norma settings init` in a new workspace writes a
// starter that `settings show` reads and `settings lint` passes, that a
// decision applies at once (git status allowed, rm asked), and that a
// second init leaves alone; a misspelt tool in a rule is then reported
// with the tool likely meant, at its FILE:LINE:COL.
func TestDoorSettingsInit(t *testing.T) {
	home, ws := t.TempDir(), t.TempDir()
	path := filepath.Join(ws, settings.WorkspaceFile)
	code, out, errs := door(t, "--home", home, "settings", "init", "--workspace", ws)
	if code != exitOK || out != path+"\n" {
		t.Fatalf("settings init: exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
	code, out, errs = door(t, "--home", home, "settings", "show", "--workspace", ws)
	if code != exitOK || !strings.Contains(out, `allow "Bash(git status:*)"`) || !strings.Contains(out, `ask   "Write"`) || !strings.Contains(out, "mode  default") {
		t.Errorf("settings show: exit %d\n%s%s", code, out, errs)
	}
	if code, out, errs := door(t, "--home", home, "settings", "lint", "--workspace", ws); code != exitOK || out != "settings: ok\n" {
		t.Errorf("settings lint: exit %d\n%s%s", code, out, errs)
	}
	for cmd, want := range map[string]string{"git status": "ALLOW ", "git show HEAD": "ALLOW ", "rm -rf src": "APPROVAL_REQUIRED "} {
		code, out, errs := door(t, "--home", home, "policy", "explain", "--workspace", ws, "--tool", "Bash", "--input", `{"command":"`+cmd+`"}`)
		if code != exitOK || !strings.HasPrefix(out, want) {
			t.Errorf("policy explain Bash %q: exit %d, want %s\n%s%s", cmd, code, want, out, errs)
		}
	}
	if code, _, errs := door(t, "--home", home, "settings", "init", "--workspace", ws); code != exitFailed || !strings.Contains(errs, path+" exists") {
		t.Errorf("second settings init: exit %d\n%s", code, errs)
	}

	// A rule's misspelt tool, as a newcomer edits the starter.
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(string(data), "    - Read\n", "    - \"Raed(./x/**)\"\n", 1)
	if edited == string(data) {
		t.Fatal("the starter has no Read rule to misspell")
	}
	line := strings.Count(edited[:strings.Index(edited, "Raed")], "\n") + 1
	if err := os.WriteFile(path, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs = door(t, "--home", home, "settings", "lint", "--workspace", ws)
	want := path + ":" + strconv.Itoa(line) + `:7: permissions.allow[0]: "Raed(./x/**)" is not a permission rule: unknown tool "Raed" (did you mean "Read"?)`
	if code != exitFailed || !strings.Contains(errs, want) {
		t.Errorf("settings lint with Raed: exit %d\n%s\nwant %s", code, errs, want)
	}
}
