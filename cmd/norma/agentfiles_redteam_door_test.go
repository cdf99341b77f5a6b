package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/norma-run/norma/sandbox/sandboxtest"
)

// Red-team door tests of the agent-file floor: each is an attack that got
// a catalogued file's effect (git's config) onto the host through the
// built binary with no approval, before the sandbox froze submodules'
// git directories and swept what no mount can keep missing (see
// sandboxpolicy's sweep). Two more found in the same round are gaps the
// README names: a link a concurrent confined command makes between
// Norma's decision and the agent's own write, and an instruction file
// written by a command's own file argument (cp notes.txt CLAUDE.md).

// plantedGitConfig is what host git, run in dir as the user would (git
// status from a shell prompt), takes from a config the attacker wrote:
// the core.fsmonitor, core.pager or core.hooksPath values it sees, with
// their origin.
func plantedGitConfig(t *testing.T, dir string) string {
	t.Helper()
	cmd := exec.Command("git", "config", "--show-origin", "--get-regexp", `^core\.(fsmonitor|pager|hookspath)$`)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CEILING_DIRECTORIES="+filepath.Dir(dir))
	out, _ := cmd.CombinedOutput()
	return strings.TrimSpace(string(out))
}

// gitCommit makes one commit in ws on the host.
func gitCommit(t *testing.T, ws string) {
	t.Helper()
	cmd := exec.Command("git", "-c", "user.name=n", "-c", "user.email=n@example.com", "commit", "-q", "--allow-empty", "-m", "init")
	cmd.Dir = ws
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git commit: %v %s", err, out)
	}
}

// TestDoorRedteamGitCommondir: .git is writable for a confined command
// (git add and commit need it), and git reads $GIT_DIR/commondir, when
// present, as the directory whose config and hooks it uses. A command
// that copies .git's objects and refs to evil/, writes evil/config with
// core.fsmonitor and .git/commondir = ../evil gets its fsmonitor run by
// the user's next git status on the host, unless the sandbox moves the
// new .git/commondir aside once the command has ended (a missing one
// cannot be pinned). The variant
// without commondir: moving .git/HEAD away makes .git no repository, and
// git discovers the workspace itself as a bare one, whose config (core.pager
// for git log) the command wrote; the new HEAD at the root is moved aside.
// By Claude Code's Write, .git/commondir
// and .git/config.worktree are refused AGENT_FILE_PROTECTED (fixed in the
// catalogue).
func TestDoorRedteamGitCommondir(t *testing.T) {
	sandboxtest.Require(t)
	h := newHookEnv(t)
	gitCommit(t, h.ws)
	rtWrite(t, filepath.Join(h.cfg, "norma", "settings.yaml"), "permissions:\n  defaultMode: acceptEdits\n", 0o644)
	for _, p := range []string{".git/commondir", ".git/config.worktree", ".git/worktrees/wt/commondir", ".git/modules/m/commondir"} {
		code, out, _ := h.hook(t, h.pre("Write", "toolu_"+filepath.Base(p), map[string]any{"file_path": filepath.Join(h.ws, p), "content": "../evil\n"}))
		a := parsePre(t, out)
		if code != 0 || a.HookSpecificOutput.PermissionDecision != "deny" || !strings.Contains(a.HookSpecificOutput.PermissionDecisionReason, "AGENT_FILE_PROTECTED") {
			t.Errorf("Write of %s: exit %d, %s; want AGENT_FILE_PROTECTED", p, code, out)
		}
	}
	if got := plantedGitConfig(t, h.ws); got != "" {
		t.Fatalf("the fresh repository already has %q", got)
	}
	attacks := map[string]string{
		"commondir": `mkdir -p evil && cp -r .git/objects .git/refs evil/ && cp .git/config evil/config && ` +
			`printf '[core]\n\tfsmonitor = "touch /tmp/norma-rt-x; false"\n' >> evil/config && echo ../evil > .git/commondir`,
		"bare": `mv .git/HEAD .git/HEAD.bak && cp .git/HEAD.bak HEAD && cp -r .git/objects .git/refs . && ` +
			`printf '[core]\n\tbare = true\n\tpager = "touch /tmp/norma-rt-x; cat"\n' > config`,
	}
	for name, c := range attacks {
		t.Run(name, func(t *testing.T) {
			ws, _ := filepath.EvalSymlinks(t.TempDir())
			if out, err := exec.Command("cp", "-a", h.ws+"/.", ws).CombinedOutput(); err != nil {
				t.Fatalf("cp: %v %s", err, out)
			}
			code, out, errs := doorEnv(t, h.env, "hook", "exec", "--workspace", ws, "--", c)
			t.Logf("%s: exit %d %s%s", name, code, out, errs)
			if got := plantedGitConfig(t, ws); got != "" {
				t.Errorf("after the confined %q (exit %d), host git in the workspace reads\n%s", c, code, got)
			}
		})
	}
}

// TestDoorRedteamGitInit: in a workspace that is not a git repository,
// the floor makes no .git (a missing parent is never created), so a
// confined `git init` followed by `git config core.fsmonitor` plants a
// command that the user's first git status there (or a shell prompt that
// shows git's state) runs on the host, unless the sandbox moves the new
// .git aside once the command has ended.
func TestDoorRedteamGitInit(t *testing.T) {
	sandboxtest.Require(t)
	h := newHookEnv(t)
	ws, _ := filepath.EvalSymlinks(t.TempDir())
	rtWrite(t, filepath.Join(ws, "a.txt"), "hello\n", 0o644)
	code, out, errs := doorEnv(t, h.env, "hook", "exec", "--workspace", ws, "--",
		`git init -q . && git config core.fsmonitor "touch /tmp/norma-rt-x; false"`)
	t.Logf("exit %d %s%s", code, out, errs)
	if got := plantedGitConfig(t, ws); got != "" {
		t.Errorf("after a confined git init and git config (exit %d), host git in the workspace reads\n%s", code, got)
	}
}

// TestDoorRedteamSubmoduleConfig: a confined `git -C sub config
// core.fsmonitor ...` would write the submodule's config, and the user's
// git status in the superproject, which looks into each submodule, would
// run it on the host: the sandbox freezes each submodule's config, hooks
// and info as .git's.
func TestDoorRedteamSubmoduleConfig(t *testing.T) {
	sandboxtest.Require(t)
	h := newHookEnv(t)
	gitCommit(t, h.ws)
	src := t.TempDir()
	for _, args := range [][]string{
		{"init", "-q", src},
		{"-C", src, "-c", "user.name=n", "-c", "user.email=n@example.com", "commit", "-q", "--allow-empty", "-m", "s"},
		{"-C", h.ws, "-c", "protocol.file.allow=always", "submodule", "add", "-q", src, "sub"},
		{"-C", h.ws, "-c", "user.name=n", "-c", "user.email=n@example.com", "commit", "-q", "-m", "sub"},
	} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	code, out, errs := doorEnv(t, h.env, "hook", "exec", "--workspace", h.ws, "--",
		`git -C sub config core.fsmonitor "touch /tmp/norma-rt-x; false"`)
	t.Logf("exit %d %s%s", code, out, errs)
	if got := plantedGitConfig(t, filepath.Join(h.ws, "sub")); got != "" {
		t.Errorf("after a confined git -C sub config (exit %d), host git in the submodule reads\n%s", code, got)
	}
	if _, err := os.Stat(filepath.Join(h.ws, ".git/modules/sub/config")); err != nil {
		t.Fatal(err)
	}
}
