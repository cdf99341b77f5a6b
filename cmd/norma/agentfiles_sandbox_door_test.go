package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/norma-run/norma/sandbox/sandboxtest"
)

// agentFileAttacks are commands a confined Bash would use to plant code
// that Claude Code, Codex, Gemini CLI, Cursor, VS Code or git runs on the
// host later, each with the file it would create ("" when the target is
// .git/config, whose bytes are checked instead).
var agentFileAttacks = []struct{ command, made string }{
	{"mkdir -p .claude && echo {} > .claude/settings.local.json", ".claude/settings.local.json"},
	{"mkdir -p .codex && echo 'notify = [\"touch\", \"/tmp/x\"]' > .codex/config.toml", ".codex/config.toml"},
	{"mkdir -p .gemini && echo {} > .gemini/settings.json", ".gemini/settings.json"},
	{"mkdir -p .cursor && echo {} > .cursor/mcp.json", ".cursor/mcp.json"},
	{"mkdir -p .vscode && echo {} > .vscode/tasks.json", ".vscode/tasks.json"},
	{"rm -rf .claude; mv .claude c2; mkdir -p .claude/hooks && echo x > .claude/hooks/h.sh", ".claude/hooks/h.sh"},
	{"git config core.fsmonitor 'touch /tmp/x'", ""},
	{"git config core.hooksPath x", ""},
	{"mkdir -p .git/hooks && printf '#!/bin/sh\\ntouch /tmp/x\\n' > .git/hooks/pre-commit", ".git/hooks/pre-commit"},
	{"mv .git g2 && mkdir .git", "g2"},
}

// refused reports whether a confined command's stderr shows the sandbox's
// refusal.
func refused(stderr string) bool {
	for _, s := range []string{"Read-only file system", "Device or resource busy", "Permission denied"} {
		if strings.Contains(stderr, s) {
			return true
		}
	}
	return false
}

// TestDoorHookExecKeepsAgentFiles: through the built binary, `norma hook
// exec` (what Claude Code's shell runs for a Bash call Norma allowed)
// runs each attack in a git repository without .claude, .codex, .gemini,
// .cursor or .vscode: each fails with the sandbox's refusal on stderr
// (not exit 125: the command ran), nothing appears on the host and
// .git/config keeps its bytes, while git status, add and commit and an
// ordinary write work in the same confinement. Each attack succeeds
// unconfined on a copy, so the refusals are the sandbox's. With .claude a
// link to cfg, the write through the link and the swap of the link fail
// too.
func TestDoorHookExecKeepsAgentFiles(t *testing.T) {
	sandboxtest.Require(t)
	h := newHookEnv(t)
	exec1 := func(t *testing.T, ws, command string) (int, string, string) {
		t.Helper()
		return doorEnv(t, h.env, "hook", "exec", "--workspace", ws, "--", command)
	}
	config, err := os.ReadFile(filepath.Join(h.ws, ".git/config"))
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range agentFileAttacks {
		cp := t.TempDir()
		if out, err := exec.Command("cp", "-a", h.ws+"/.", cp).CombinedOutput(); err != nil {
			t.Fatalf("cp: %v %s", err, out)
		}
		ctl := exec.Command("/bin/bash", "--norc", "--noprofile", "-c", a.command)
		ctl.Dir = cp
		if out, err := ctl.CombinedOutput(); err != nil {
			t.Fatalf("unconfined %q failed (%v, %s): the attack is not real", a.command, err, out)
		}
		code, out, errs := exec1(t, h.ws, a.command)
		t.Logf("%q: exit %d, %s", a.command, code, strings.TrimSpace(errs))
		if code == 0 || code == exitNotRun {
			t.Errorf("%q: exit %d (%s%s); want the command's failure", a.command, code, out, errs)
		}
		if !refused(errs) {
			t.Errorf("%q: stderr %q; want the sandbox's refusal", a.command, errs)
		}
		if a.made != "" {
			if _, err := os.Lstat(filepath.Join(h.ws, a.made)); err == nil {
				t.Errorf("%q: %s exists on the host", a.command, a.made)
			}
		}
		if b, err := os.ReadFile(filepath.Join(h.ws, ".git/config")); err != nil || !bytes.Equal(b, config) {
			t.Fatalf("%q: .git/config changed on the host: %q, %v", a.command, b, err)
		}
		if _, err := os.Lstat(filepath.Join(h.ws, ".git/config.lock")); err == nil {
			t.Errorf("%q left .git/config.lock on the host", a.command)
		}
	}
	code, out, errs := exec1(t, h.ws, "echo hi > new.txt && git status --short && git add a.txt new.txt && "+
		"git -c user.name=n -c user.email=n@example.com commit -q -m confined && git log --format=%s")
	if code != 0 || !strings.Contains(out, "confined") {
		t.Fatalf("git status, add, commit: exit %d\n%s%s", code, out, errs)
	}
	if b, err := os.ReadFile(filepath.Join(h.ws, "new.txt")); err != nil || string(b) != "hi\n" {
		t.Errorf("new.txt = %q, %v; want hi", b, err)
	}
	if b, _ := os.ReadFile(filepath.Join(h.ws, ".git/config")); !bytes.Equal(b, config) {
		t.Errorf(".git/config changed by status, add and commit: %q", b)
	}

	t.Run("link", func(t *testing.T) {
		ws, _ := filepath.EvalSymlinks(t.TempDir())
		if err := os.Mkdir(filepath.Join(ws, "cfg"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("cfg", filepath.Join(ws, ".claude")); err != nil {
			t.Fatal(err)
		}
		for _, c := range []string{
			"echo {} > .claude/settings.local.json",
			"rm .claude && mkdir .claude && echo {} > .claude/settings.local.json",
		} {
			code, out, errs := exec1(t, ws, c)
			if code == 0 || code == exitNotRun || !refused(errs) {
				t.Errorf("%q: exit %d, %s%s; want the sandbox's refusal", c, code, out, errs)
			}
		}
		if _, err := os.Lstat(filepath.Join(ws, "cfg/settings.local.json")); err == nil {
			t.Error("cfg/settings.local.json exists on the host")
		}
		if l, err := os.Readlink(filepath.Join(ws, ".claude")); err != nil || l != "cfg" {
			t.Errorf(".claude -> %q, %v; want the link kept", l, err)
		}
	})
}

// TestDoorRunBashKeepsAgentFiles: the Bash tool of `norma run` gets the
// same floor. Each command names its target through a variable, which
// the gate's analysis cannot resolve, so that the sandbox is what
// refuses; nothing appears on the host.
func TestDoorRunBashKeepsAgentFiles(t *testing.T) {
	sandboxtest.Require(t)
	e := newRunEnv(t)
	git := exec.Command("git", "init", "-q", e.ws)
	if out, err := git.CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	config, err := os.ReadFile(filepath.Join(e.ws, ".git/config"))
	if err != nil {
		t.Fatal(err)
	}
	attacks := map[string]string{
		"claude": `d=.cla; d=${d}ude; mkdir -p $d && echo {} > $d/settings.local.json`,
		"codex":  `d=.co; d=${d}dex; mkdir -p $d && echo 'notify = ["x"]' > $d/config.toml`,
		"vscode": `d=.vs; d=${d}code; mkdir -p $d && echo {} > $d/tasks.json`,
		"fsmon":  `k=core.fs; git config ${k}monitor 'touch /tmp/x'`,
	}
	var script strings.Builder
	script.WriteString("turns:\n  - tool_calls:\n")
	for id, c := range attacks {
		fmt.Fprintf(&script, "      - {id: %s, name: Bash, input: {\"command\": %s}}\n", id, jsonQuote(c))
	}
	script.WriteString("      - {id: control, name: Bash, input: {\"command\": \"echo control >control.txt\"}}\n  - text: done\n")
	code, out, errs := door(t, "--home", e.home, "run", "--workspace", e.ws, "--provider", "scripted",
		"--script", e.script(t, script.String()), "--yes", "--json", "go")
	if code != 0 {
		t.Fatalf("run: exit %d\n%s%s", code, out, errs)
	}
	calls := toolCalls(jsonLines(t, out))
	for id := range attacks {
		c := calls[id]
		res, _ := c["result"].(string)
		t.Logf("%s: %v %v %q", id, c["decision"], c["reason"], res)
		if c["decision"] == "allow" && (strings.HasSuffix(res, "[exit code 0]") || !refused(res)) {
			t.Errorf("%s ran without the sandbox's refusal: %q", id, res)
		}
	}
	for _, p := range []string{".claude/settings.local.json", ".codex/config.toml", ".vscode/tasks.json"} {
		if _, err := os.Lstat(filepath.Join(e.ws, p)); err == nil {
			t.Errorf("%s exists on the host", p)
		}
	}
	if b, err := os.ReadFile(filepath.Join(e.ws, ".git/config")); err != nil || !bytes.Equal(b, config) {
		t.Errorf(".git/config changed: %q, %v", b, err)
	}
	if b, err := os.ReadFile(filepath.Join(e.ws, "control.txt")); err != nil || string(b) != "control\n" {
		t.Errorf("the control command did not run: %q %v", b, err)
	}
}
