package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/norma-run/norma/sandbox/sandboxtest"
)

// claudeRulesJSON is a Claude Code settings file of issue 31's classes,
// in Claude Code's own rule language.
const claudeRulesJSON = `{
  "permissions": {
    "allow": ["Bash(git:*)", "Bash(find:*)", "Read"],
    "ask": ["Bash(git commit *)", "WebSearch(norma)"],
    "deny": [
      "Bash(git push *)", "Bash(git * --force)", "Bash(* --delete)", "Bash(git reset:*)",
      "Read(./secrets/**)", "Read(/config/**)", "Read(*.pem)", "Read(~/.ssh/**)", "Read(//etc/shadow)",
      "Edit(./protected/**)"
    ]
  }
}
`

// TestDoorClaudeRules drives the built binary: `norma settings import
// claude` converts Claude Code's rules (wildcards, path forms) without
// dropping any, then `norma hook claude-code` decides under them the
// calls issue 31 found Norma allowing where Claude Code denies or asks,
// file rules on what a command reads by a pattern and writes included.
// An import with a deny Norma cannot read fails and writes nothing.
func TestDoorClaudeRules(t *testing.T) {
	sandboxtest.Require(t)
	h := newHookEnv(t)
	for _, d := range []string{".claude", ".norma", "secrets", "SECRETS", "config", "a/b", "protected"} {
		if err := os.MkdirAll(filepath.Join(h.ws, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"SECRETS/key.txt", "secrets/k.txt", "config/db.yaml", "a/b/cert.pem", "README.md"} {
		if err := os.WriteFile(filepath.Join(h.ws, f), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(h.ws, ".claude", "settings.json"), []byte(claudeRulesJSON), 0o644); err != nil {
		t.Fatal(err)
	}
	norma := func(args ...string) (int, string, string) {
		cmd := exec.Command(normaBin(t), args...)
		cmd.Env = append(os.Environ(), h.env...)
		cmd.Dir = h.ws
		return doorCmd(t, cmd)
	}

	code, _, stderr := norma("settings", "import", "claude", "--out", filepath.Join(".norma", "settings.yaml"))
	if code != 0 {
		t.Fatalf("settings import: exit %d: %s", code, stderr)
	}
	conv, err := os.ReadFile(filepath.Join(h.ws, ".norma", "settings.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []string{"Bash(git push *)", "Bash(git * --force)", "Bash(* --delete)", "Read(/config/**)", "Read(*.pem)", "Read(~/.ssh/**)", "Read(//etc/shadow)"} {
		if !strings.Contains(string(conv), r) {
			t.Errorf("the import dropped %q:\n%s", r, conv)
		}
	}
	// A rule Norma reads no argument of becomes the stricter rule on the
	// whole tool, and says so.
	if !strings.Contains(string(conv), "- WebSearch\n") || !strings.Contains(stderr, `permissions.ask "WebSearch(norma)": converted as "WebSearch"`) {
		t.Errorf("WebSearch(norma): output\n%s\nstderr %s", conv, stderr)
	}

	for _, c := range []struct {
		name, tool string
		input      map[string]any
		want       string
	}{
		{"wildcard deny", "Bash", map[string]any{"command": "git push origin main"}, "deny"},
		{"wildcard deny, global option", "Bash", map[string]any{"command": "git -C . push"}, "deny"},
		{"wildcard deny, -c", "Bash", map[string]any{"command": "git -c core.pager=cat push origin"}, "deny"},
		{"wildcard star between", "Bash", map[string]any{"command": "git fetch --force"}, "deny"},
		{"leading star", "Bash", map[string]any{"command": "git branch -D x --delete"}, "deny"},
		{"leading star, not last", "Bash", map[string]any{"command": "git branch --delete x"}, "allow"}, // * --delete ends with it
		{"prefix deny, global option", "Bash", map[string]any{"command": "git -C . reset --hard"}, "deny"},
		{"wildcard ask", "Bash", map[string]any{"command": "git commit -m wip"}, "ask"},
		{"wrapper looked through", "Bash", map[string]any{"command": "timeout 5 git status"}, "allow"},
		{"find -name", "Bash", map[string]any{"command": "find . -name '*.md'"}, "allow"},
		{"find -delete asks", "Bash", map[string]any{"command": "find . -delete"}, "ask"},
		{"git diff --output asks", "Bash", map[string]any{"command": "git diff --output=x.patch"}, "ask"},
		{"read any case", "Read", map[string]any{"file_path": filepath.Join(h.ws, "SECRETS", "key.txt")}, "deny"},
		{"read / is the project", "Read", map[string]any{"file_path": filepath.Join(h.ws, "config", "db.yaml")}, "deny"},
		{"read a name at any depth", "Read", map[string]any{"file_path": filepath.Join(h.ws, "a", "b", "cert.pem")}, "deny"},
		{"read allowed", "Read", map[string]any{"file_path": filepath.Join(h.ws, "README.md")}, "allow"},
		// File rules on what a command reads and writes.
		{"cat a pattern of denied files", "Bash", map[string]any{"command": "cat secrets/*"}, "deny"},
		{"cp into a denied edit", "Bash", map[string]any{"command": "cp README.md protected/c.txt"}, "deny"},
		{"tee into a denied edit", "Bash", map[string]any{"command": "echo x | tee protected/d.txt"}, "deny"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out, errs := h.hook(t, h.pre(c.tool, "toolu_rules", c.input))
			ans := parsePre(t, out)
			if code != 0 || ans.HookSpecificOutput.PermissionDecision != c.want {
				t.Errorf("%s %v: exit %d, answer %s, stderr %s; want %s", c.tool, c.input, code, out, errs, c.want)
			}
		})
	}

	// A deny of a file Norma cannot read fails the import: left out, it
	// would let through what it stops.
	bad := filepath.Join(h.ws, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"permissions": {"deny": ["Read($HOME/.aws/**)"]}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = norma("settings", "import", "claude", bad, "--out", "bad.yaml")
	if code == 0 || !strings.Contains(stderr, `"Read($HOME/.aws/**)"`) {
		t.Errorf("import of an unreadable deny: exit %d, stderr %s; want a failure naming the rule", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(h.ws, "bad.yaml")); err == nil {
		t.Error("the failed import wrote bad.yaml")
	}
}
