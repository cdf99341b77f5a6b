package sandboxpolicy

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/norma-run/norma/agentfiles"
	"github.com/norma-run/norma/manifest"
	"github.com/norma-run/norma/policy"
	"github.com/norma-run/norma/sandbox/sandboxtest"
	"github.com/norma-run/norma/tool"
)

// floorFS is the shape of a run's built-in policy with the workspace
// floor: the whole workspace, the agent files that exist hidden.
const floorFS = "    read: [workspace://**]\n    write: [workspace://**]\n" +
	"    deny: [workspace://**/.env*, workspace://.git/hooks/**, workspace://.claude/settings.json]\n"

// floorRunner returns a Runner over a new workspace that setup prepared.
func floorRunner(t *testing.T, setup func(ws string)) *Runner {
	t.Helper()
	ws := t.TempDir()
	setup(ws)
	m, err := manifest.Parse("manifest.yaml", []byte(manifestHead+floorFS))
	if err != nil {
		t.Fatal(err)
	}
	set, err := policy.Compile(policy.Inputs{Manifest: m, Host: policy.Host{Sandbox: true}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewRunner(RunnerConfig{Workspace: ws, Policy: set, Layers: []manifest.Permissions{m.Permissions}})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func write(t *testing.T, name, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestDeriveAgentFloor: which names Derive freezes and which directories
// it creates first, without starting a sandbox.
func TestDeriveAgentFloor(t *testing.T) {
	outside := t.TempDir()
	tests := []struct {
		name    string
		setup   func(ws string)
		freeze  []string // relative to the workspace
		created []string // directories that must exist afterwards
		absent  []string // names that must still not exist
	}{{
		name:    "plain workspace: the directories are made, .git is not",
		setup:   func(ws string) {},
		freeze:  []string{".claude", ".codex", ".gemini", ".cursor", ".vscode"},
		created: []string{".claude", ".codex", ".gemini", ".cursor", ".vscode"},
		absent:  []string{".git"},
	}, {
		name: "repository without hooks, with the root files",
		setup: func(ws string) {
			write(t, filepath.Join(ws, ".git/config"), "[core]\n")
			for _, f := range agentfiles.SandboxFiles() {
				write(t, filepath.Join(ws, f), "x\n")
			}
		},
		freeze:  slices.Concat(agentfiles.SandboxDirs(), agentfiles.SandboxFiles()),
		created: []string{".git/hooks", ".git/info"},
	}, {
		name: "links: the target inside is made, nothing outside",
		setup: func(ws string) {
			os.Symlink("cfg", filepath.Join(ws, ".claude"))
			os.Symlink(filepath.Join(outside, "missing"), filepath.Join(ws, ".codex"))
			os.Symlink("a/b", filepath.Join(ws, ".gemini"))
			write(t, filepath.Join(ws, "gitdir/config"), "[core]\n")
			write(t, filepath.Join(ws, ".git"), "gitdir: gitdir\n")
		},
		freeze:  []string{".claude", ".codex", ".gemini", ".cursor", ".vscode", ".git"},
		created: []string{"cfg"},
		absent:  []string{"a", filepath.Join(outside, "missing")},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := floorRunner(t, tc.setup)
			ws := r.ws
			p, err := Derive(t.Context(), ws, r.cfg.Policy, Protected{}, r.cfg.Layers[0], RootCandidate)
			if err != nil {
				t.Fatalf("Derive: %v", err)
			}
			var want []string
			for _, f := range tc.freeze {
				want = append(want, filepath.Join(ws, f))
			}
			slices.Sort(want)
			got := slices.Sorted(slices.Values(p.Freeze))
			if !slices.Equal(got, want) {
				t.Errorf("Freeze:\n\tgot  %q\n\twant %q", got, want)
			}
			for _, d := range tc.created {
				if fi, err := os.Stat(filepath.Join(ws, d)); err != nil || !fi.IsDir() {
					t.Errorf("%s was not created", d)
				} else if ents, _ := os.ReadDir(filepath.Join(ws, d)); len(ents) != 0 {
					t.Errorf("%s holds %d entries, want it empty", d, len(ents))
				}
			}
			for _, a := range tc.absent {
				if !filepath.IsAbs(a) {
					a = filepath.Join(ws, a)
				}
				if _, err := os.Lstat(a); err == nil {
					t.Errorf("%s was created", a)
				}
			}
		})
	}
}

// TestAgentFilesStayReadOnly runs real bash and git commands in the
// sandbox a Runner builds over a git repository (what the Bash of `norma
// run` and `norma hook exec` get): every attempt to create or change a
// file an agent or git loads as code fails with an error on stderr and
// leaves nothing on the host, a denied file inside a frozen directory
// stays hidden, while git status, add and commit and ordinary writes
// work. Each attack is first run without the sandbox on a copy of the
// workspace, to show that it is real there.
func TestAgentFilesStayReadOnly(t *testing.T) {
	sandboxtest.Require(t)
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	const canary = "canary-agent-floor-93c1"
	repo := func(ws string) {
		git := exec.Command("git", "init", "-q", "-b", "main", ws)
		if out, err := git.CombinedOutput(); err != nil {
			t.Fatalf("git init: %v\n%s", err, out)
		}
		write(t, filepath.Join(ws, "a.txt"), "a\n")
		write(t, filepath.Join(ws, ".claude/settings.json"), `{"canary": "`+canary+`"}`+"\n")
		write(t, filepath.Join(ws, ".git/hooks/post-checkout"), "#!/bin/sh\necho "+canary+"\n")
	}
	bash := func(t *testing.T, r *Runner, script string) (string, string, int) {
		t.Helper()
		res, err := r.Run(t.Context(), tool.Command{Argv: []string{"/bin/bash", "--norc", "--noprofile", "-c", script}})
		if err != nil {
			t.Fatalf("Run(%q): %v", script, err)
		}
		return string(res.Stdout), string(res.Stderr), res.ExitCode
	}
	r := floorRunner(t, repo)
	ws := r.ws
	config, err := os.ReadFile(filepath.Join(ws, ".git/config"))
	if err != nil {
		t.Fatal(err)
	}
	attacks := []struct {
		script string
		made   string // the file the attack would create or change
	}{
		{"mkdir -p .claude && echo {} > .claude/settings.local.json", ".claude/settings.local.json"},
		{"mkdir -p .codex && echo 'notify = [\"x\"]' > .codex/config.toml", ".codex/config.toml"},
		{"mkdir -p .gemini && echo {} > .gemini/settings.json", ".gemini/settings.json"},
		{"mkdir -p .cursor && echo {} > .cursor/mcp.json", ".cursor/mcp.json"},
		{"mkdir -p .vscode && echo {} > .vscode/tasks.json", ".vscode/tasks.json"},
		{"mkdir -p .claude/hooks && echo x > .claude/hooks/h.sh", ".claude/hooks"},
		{"rm -rf .vscode && mkdir .vscode && echo {} > .vscode/tasks.json", ".vscode/tasks.json"},
		{"mv .claude .c2 && mkdir .claude && echo {} > .claude/settings.local.json", ".claude/settings.local.json"},
		{"git config core.fsmonitor 'touch /tmp/x'", ""},
		{"git config core.hooksPath x", ""},
		{"git config --add alias.st '!touch /tmp/x'", ""},
		{"echo '#!/bin/sh' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit", ".git/hooks/pre-commit"},
		{"echo '*.txt filter=x' > .git/info/attributes", ".git/info/attributes"},
		{"mv .git .g2 && mkdir .git", ".g2"},
	}
	for _, a := range attacks {
		// The control: the same script, unconfined, on a copy.
		cp := t.TempDir()
		if out, err := exec.Command("cp", "-a", ws+"/.", cp).CombinedOutput(); err != nil {
			t.Fatalf("cp: %v %s", err, out)
		}
		ctl := exec.Command("/bin/bash", "--norc", "--noprofile", "-c", a.script)
		ctl.Dir = cp
		if out, err := ctl.CombinedOutput(); err != nil {
			t.Fatalf("unconfined %q failed (%v, %s): the attack is not real", a.script, err, out)
		}
		out, errOut, code := bash(t, r, a.script)
		t.Logf("%q: exit %d, %s", a.script, code, strings.TrimSpace(errOut))
		if code == 0 {
			t.Errorf("%q succeeded in the sandbox: %q %q", a.script, out, errOut)
		}
		if !strings.Contains(errOut, "Read-only file system") && !strings.Contains(errOut, "Device or resource busy") &&
			!strings.Contains(errOut, "Permission denied") && !strings.Contains(errOut, "could not") {
			t.Errorf("%q: stderr %q; want the sandbox's refusal", a.script, errOut)
		}
		if a.made != "" {
			if _, err := os.Lstat(filepath.Join(ws, a.made)); err == nil {
				t.Errorf("%q: %s exists on the host", a.script, a.made)
			}
		}
		if b, err := os.ReadFile(filepath.Join(ws, ".git/config")); err != nil || !bytes.Equal(b, config) {
			t.Fatalf("%q: .git/config changed on the host: %q, %v", a.script, b, err)
		}
		// A lock left behind would make the user's next git config fail.
		if _, err := os.Lstat(filepath.Join(ws, ".git/config.lock")); err == nil {
			t.Errorf("%q left .git/config.lock on the host", a.script)
		}
	}
	// The denied files inside frozen directories stay hidden.
	out, errOut, _ := bash(t, r, "cat .claude/settings.json .git/hooks/post-checkout; ls -la .git/hooks .claude")
	if strings.Contains(out+errOut, canary) {
		t.Errorf("a hidden file showed through a frozen directory: %q %q", out, errOut)
	}
	// What a coding agent does keeps working.
	out, errOut, code := bash(t, r, "echo hi > new.txt && git status --short && git add a.txt new.txt && "+
		"git -c user.name=n -c user.email=n@example.com commit -q -m x && git log --oneline && git diff HEAD~0 --stat && "+
		"cat .git/config >/dev/null && ls .claude")
	if code != 0 {
		t.Fatalf("status, add, commit: exit %d, %q %q", code, out, errOut)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "new.txt")); err != nil || string(b) != "hi\n" {
		t.Errorf("new.txt = %q, %v; want hi", b, err)
	}
	log, err := exec.Command("git", "-C", ws, "log", "--format=%s", "-1").Output()
	if err != nil || string(log) != "x\n" {
		t.Errorf("host git log = %q, %v; want the commit made in the sandbox", log, err)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, ".git/config")); !bytes.Equal(b, config) {
		t.Errorf(".git/config changed: %q", b)
	}

	t.Run("repository without hooks", func(t *testing.T) {
		r := floorRunner(t, func(ws string) {
			repo(ws)
			os.RemoveAll(filepath.Join(ws, ".git/hooks"))
		})
		// The workspace floor hides .git/hooks as a whole (EACCES); the
		// frozen directory under the mask would refuse too (EROFS).
		if _, errOut, code := bash(t, r, "mkdir -p .git/hooks && printf '#!/bin/sh\\n' > .git/hooks/pre-commit"); code == 0 ||
			!strings.Contains(errOut, "Permission denied") && !strings.Contains(errOut, "Read-only file system") {
			t.Errorf("writing .git/hooks/pre-commit: exit %d, %q; want EACCES or EROFS", code, errOut)
		}
		if _, err := os.Lstat(filepath.Join(r.ws, ".git/hooks/pre-commit")); err == nil {
			t.Error(".git/hooks/pre-commit exists on the host")
		}
	})
	t.Run("linked directory", func(t *testing.T) {
		outside := t.TempDir()
		r := floorRunner(t, func(ws string) {
			os.Mkdir(filepath.Join(ws, "cfg"), 0o755)
			os.Symlink("cfg", filepath.Join(ws, ".claude"))
			os.Symlink(filepath.Join(outside, "codex"), filepath.Join(ws, ".codex"))
		})
		for _, s := range []string{
			"echo {} > .claude/settings.local.json",
			"echo {} > cfg/settings.local.json",
			"rm .claude && mkdir .claude && echo {} > .claude/settings.local.json",
			"ln -sfn other .claude",
			"mkdir -p .codex && echo x > .codex/config.toml",
			"rm .codex && mkdir .codex && echo x > .codex/config.toml",
		} {
			if _, errOut, code := bash(t, r, s); code == 0 || errOut == "" {
				t.Errorf("%q: exit %d, stderr %q; want a refusal", s, code, errOut)
			}
		}
		for _, p := range []string{"cfg/settings.local.json", "other", ".codex/config.toml"} {
			if _, err := os.Lstat(filepath.Join(r.ws, p)); err == nil {
				t.Errorf("%s exists on the host", p)
			}
		}
		if l, err := os.Readlink(filepath.Join(r.ws, ".claude")); err != nil || l != "cfg" {
			t.Errorf(".claude -> %q, %v; want the link kept", l, err)
		}
		if ents, _ := os.ReadDir(outside); len(ents) != 0 {
			t.Errorf("something was created outside the workspace: %v", ents)
		}
	})
}

// TestDeriveHidesThroughAlias: with .claude a link to cfg, a deny of
// .claude/settings.json hides cfg/settings.json, the file the agent loads
// by that name, and a deny glob of .git/hooks/** the hooks directory a
// link makes of hooks/.
func TestDeriveHidesThroughAlias(t *testing.T) {
	r := floorRunner(t, func(ws string) {
		write(t, filepath.Join(ws, "cfg", "settings.json"), "{}\n")
		write(t, filepath.Join(ws, "cfg", "notes.md"), "x\n")
		write(t, filepath.Join(ws, "hooks", "pre-commit"), "x\n")
		write(t, filepath.Join(ws, ".git", "config"), "[core]\n")
		if err := os.Symlink("cfg", filepath.Join(ws, ".claude")); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("../hooks", filepath.Join(ws, ".git", "hooks")); err != nil {
			t.Fatal(err)
		}
	})
	p, err := Derive(t.Context(), r.ws, r.cfg.Policy, Protected{}, r.cfg.Layers[0], RootCandidate)
	if err != nil {
		t.Fatalf("Derive: %v", err)
	}
	for _, rel := range []string{"cfg/settings.json", "hooks/pre-commit"} {
		if !slices.ContainsFunc(p.Deny, func(d string) bool {
			return d == filepath.Join(r.ws, rel) || strings.HasPrefix(filepath.Join(r.ws, rel), d+"/")
		}) {
			t.Errorf("%s is not hidden: Deny = %q", rel, p.Deny)
		}
	}
	if slices.Contains(p.Deny, filepath.Join(r.ws, "cfg", "notes.md")) {
		t.Errorf("cfg/notes.md is hidden; no agent loads it")
	}
}

// TestSweep: what no mount can keep missing — .git/commondir (git follows
// it to another config), HEAD at the root (a bare repository of the
// workspace), .mcp.json, a new .git in a workspace that had none — is
// moved aside once the command's whole tree has ended, background
// children included, and the command's stderr says so; a name that
// existed before is left alone.
func TestSweep(t *testing.T) {
	sandboxtest.Require(t)
	for _, tc := range []struct {
		name, script string
		repo         bool
		gone         []string // must not exist afterwards
		kept         []string // must exist afterwards
	}{
		{"commondir", "mkdir -p evil && echo ../evil > .git/commondir", true, []string{".git/commondir"}, []string{"evil"}},
		{"bare", "cp .git/HEAD HEAD && printf '[core]\\n\\tbare = true\\n' > config", true, []string{"HEAD"}, []string{"config", ".git/HEAD"}},
		{"mcp and envrc in the background", "(sleep 0.2; echo '{}' > .mcp.json; echo x > .envrc) & sleep 0.5", true, []string{".mcp.json", ".envrc"}, nil},
		{"git init", "git init -q . && git config core.fsmonitor 'touch /tmp/x'", false, []string{".git"}, nil},
		{"existing left alone", "echo more >> notes.md", true, nil, []string{"notes.md"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := floorRunner(t, func(ws string) {
				if tc.repo {
					if out, err := exec.Command("git", "init", "-q", ws).CombinedOutput(); err != nil {
						t.Fatalf("git init: %v %s", err, out)
					}
				}
				write(t, filepath.Join(ws, "notes.md"), "x\n")
			})
			var stderr bytes.Buffer
			res, err := r.Run(t.Context(), tool.Command{Argv: []string{"/bin/bash", "--norc", "--noprofile", "-c", tc.script}, Stderr: &stderr})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			for _, g := range tc.gone {
				if _, err := os.Lstat(filepath.Join(r.ws, g)); err == nil {
					t.Errorf("%s is still there (exit %d, %s)", g, res.ExitCode, stderr.String())
				}
				if m, _ := filepath.Glob(filepath.Join(r.ws, g+".norma-quarantine-*")); len(m) != 1 {
					t.Errorf("%s was not moved aside: %v", g, m)
				}
				if !strings.Contains(stderr.String(), "created "+g+",") {
					t.Errorf("stderr does not report %s: %q", g, stderr.String())
				}
			}
			for _, k := range tc.kept {
				if _, err := os.Lstat(filepath.Join(r.ws, k)); err != nil {
					t.Errorf("%s is gone: %v", k, err)
				}
			}
			if len(tc.gone) == 0 && strings.Contains(stderr.String(), "norma:") {
				t.Errorf("stderr reports a sweep: %q", stderr.String())
			}
		})
	}
}

// TestFloorHome: in a workspace that contains $HOME, the user's agent,
// git, ssh and shell files are kept as the project's: frozen, the
// directories made when missing, a shell profile the command creates
// swept.
func TestFloorHome(t *testing.T) {
	sandboxtest.Require(t)
	var home string
	r := floorRunner(t, func(ws string) {
		home = filepath.Join(ws, "u")
		write(t, filepath.Join(home, ".bashrc"), "# mine\n")
		write(t, filepath.Join(home, ".claude", "settings.json"), "{}\n")
	})
	t.Setenv("HOME", home)
	var stderr bytes.Buffer
	script := "echo evil >> u/.bashrc; mkdir -p u/.ssh; echo 'Host *' > u/.ssh/config; echo x > u/.claude/agents.md; echo 'alias ls=x' > u/.zshrc; echo ok > u/notes.txt"
	if _, err := r.Run(t.Context(), tool.Command{Argv: []string{"/bin/bash", "--norc", "--noprofile", "-c", script}, Stderr: &stderr}); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(home, ".bashrc")); string(b) != "# mine\n" {
		t.Errorf(".bashrc = %q", b)
	}
	for _, n := range []string{".ssh/config", ".claude/agents.md", ".zshrc"} {
		if _, err := os.Lstat(filepath.Join(home, n)); err == nil {
			t.Errorf("%s exists after the command (%s)", n, stderr.String())
		}
	}
	if m, _ := filepath.Glob(filepath.Join(home, ".zshrc.norma-quarantine-*")); len(m) != 1 {
		t.Errorf(".zshrc was not moved aside: %v (%s)", m, stderr.String())
	}
	if b, _ := os.ReadFile(filepath.Join(home, "notes.txt")); string(b) != "ok\n" {
		t.Errorf("an ordinary file in the home directory was not written: %q", b)
	}
}
