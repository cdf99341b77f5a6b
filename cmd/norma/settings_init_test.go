package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/norma-run/norma/settings"
)

// TestSettingsInit: init writes the starter to the workspace's settings
// file, prints its path, and records it as accepted, so that a run
// applies it at once: git status is allowed, rm asks, a key is denied.
// It lints clean, keeps an existing file (exit 1, naming it) unless
// --force, and leaves no temporary file behind.
func TestSettingsInit(t *testing.T) {
	home, ws := t.TempDir(), t.TempDir()
	path := filepath.Join(ws, settings.WorkspaceFile)
	code, out, errs := norma(t, "--home", home, "settings", "init", "--workspace", ws)
	if code != exitOK || out != path+"\n" || errs != "" {
		t.Fatalf("settings init: exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
	data, err := os.ReadFile(path)
	if err != nil || string(data) != string(settings.Starter()) {
		t.Fatalf("the file is not the starter: %v\n%s", err, data)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("the file's mode: %v %v", fi.Mode(), err)
	}
	if ents, _ := os.ReadDir(filepath.Dir(path)); len(ents) != 1 {
		t.Errorf(".norma holds %d entries, want the settings file only", len(ents))
	}
	if code, out, errs := norma(t, "--home", home, "settings", "lint", "--workspace", ws); code != exitOK || out != "settings: ok\n" {
		t.Errorf("settings lint: exit %d\n%s%s", code, out, errs)
	}
	for _, tt := range []struct{ tool, input, want string }{
		{"Bash", `{"command":"git status"}`, "ALLOW"},
		{"Bash", `{"command":"git log --oneline -3"}`, "ALLOW"},
		{"Bash", `{"command":"rm README.md"}`, "APPROVAL_REQUIRED"},
		{"Read", `{"path":"README.md"}`, "ALLOW"},
		{"Read", `{"path":"certs/server.key"}`, "DENY"},
		{"Grep", `{"pattern":"x"}`, "ALLOW"},
		{"Write", `{"path":"x","content":"y"}`, "APPROVAL_REQUIRED"},
	} {
		code, out, errs := norma(t, "--home", home, "policy", "explain", "--workspace", ws, "--tool", tt.tool, "--input", tt.input)
		if code != exitOK || !strings.HasPrefix(out, tt.want+" ") || strings.Contains(errs, "not been accepted") {
			t.Errorf("policy explain %s %s: exit %d, want %s\n%s%s", tt.tool, tt.input, code, tt.want, out, errs)
		}
	}
	// acceptEdits: the starter's ask rules still ask for edits.
	if code, out, _ := norma(t, "--home", home, "policy", "explain", "--workspace", ws, "--mode", "acceptEdits", "--tool", "Edit", "--input", `{"path":"x","old_string":"a","new_string":"b"}`); code != exitOK || !strings.HasPrefix(out, "APPROVAL_REQUIRED ") {
		t.Errorf("acceptEdits Edit: exit %d\n%s", code, out)
	}

	// An existing file is kept.
	mine := []byte("permissions:\n  allow: [Read]\n")
	if err := os.WriteFile(path, mine, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs = norma(t, "--home", home, "settings", "init", "--workspace", ws)
	if code != exitFailed || out != "" || !strings.Contains(errs, path+" exists; nothing written (--force replaces it)") {
		t.Errorf("settings init over a file: exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
	if b, _ := os.ReadFile(path); string(b) != string(mine) {
		t.Errorf("the existing file changed:\n%s", b)
	}
	// Even a dangling symbolic link is something there.
	ws2 := t.TempDir()
	os.Mkdir(filepath.Join(ws2, ".norma"), 0o755)
	os.Symlink("elsewhere.yaml", filepath.Join(ws2, settings.WorkspaceFile))
	if code, _, errs := norma(t, "--home", home, "settings", "init", "--workspace", ws2); code != exitFailed || !strings.Contains(errs, "exists") {
		t.Errorf("settings init over a dangling link: exit %d\n%s", code, errs)
	}
	// --force replaces it, and accepts the new content.
	code, out, errs = norma(t, "--home", home, "settings", "init", "--workspace", ws, "--force")
	if code != exitOK || out != path+"\n" {
		t.Fatalf("settings init --force: exit %d\n%s%s", code, out, errs)
	}
	if b, _ := os.ReadFile(path); string(b) != string(settings.Starter()) {
		t.Errorf("--force did not write the starter:\n%s", b)
	}
	if code, out, errs := norma(t, "--home", home, "policy", "explain", "--workspace", ws, "--tool", "Bash", "--input", `{"command":"git diff"}`); code != exitOK || !strings.HasPrefix(out, "ALLOW ") {
		t.Errorf("after --force, git diff: exit %d\n%s%s", code, out, errs)
	}
	// A workspace that is not there.
	if code, _, errs := norma(t, "--home", home, "settings", "init", "--workspace", filepath.Join(ws, "missing")); code != exitFailed || !strings.Contains(errs, "no such file") {
		t.Errorf("settings init in a missing workspace: exit %d\n%s", code, errs)
	}
	if code, _, _ := norma(t, "--home", home, "settings", "init", "extra"); code != exitUsage {
		t.Errorf("settings init extra: exit %d, want 2", code)
	}
}
