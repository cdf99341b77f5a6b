package agenthook

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/norma-run/norma/gate"
	"github.com/norma-run/norma/gate/gatetest"
	"github.com/norma-run/norma/settings"
)

// claudeRulesSettings are rules of every class of issue 31, in Claude
// Code's language, as `norma settings import claude` keeps them.
const claudeRulesSettings = `permissions:
  allow:
    - "Bash(git:*)"
    - "Bash(find:*)"
    - "Bash(ls:*)"
    - "Bash(kubectl get:*)"
    - "Read"
  ask:
    - "Bash(git commit *)"
  deny:
    - "Bash(git push *)"
    - "Bash(git * --force)"
    - "Bash(* --delete)"
    - "Bash(git reset:*)"
    - "Read(/secrets/**)"
    - "Read(*.pem)"
    - "Read(key.txt)"
    - "Read(~/proj/private/**)"
    - "Edit(./protected/**)"
`

// TestEngineClaudeRules: the classes of issue 31 decided through the
// hook door with the rules above, where Norma allowed what Claude Code
// denies or asks: the wildcard denies (1), global options before the
// subcommand (2), path rule forms (3), the flags that make a prefix allow
// not apply (5), and wrappers looked through. Each row names Claude
// Code's own answer where it is the same.
func TestEngineClaudeRules(t *testing.T) {
	root, _ := filepath.EvalSymlinks(t.TempDir())
	home := filepath.Join(root, "home")
	ws := filepath.Join(home, "proj")
	userDir := filepath.Join(root, "user")
	for _, d := range []string{filepath.Join(ws, "secrets"), filepath.Join(ws, "SECRETS"), filepath.Join(ws, "a", "b"),
		filepath.Join(ws, "private"), filepath.Join(ws, "protected"), userDir, filepath.Join(root, "state")} {
		must(t, os.MkdirAll(d, 0o755))
	}
	for _, f := range []string{"secrets/k.txt", "SECRETS/key.txt", "a/b/cert.pem", "a/key.txt", "private/p.txt", "protected/x.txt", "README.md"} {
		must(t, os.WriteFile(filepath.Join(ws, f), []byte("x"), 0o644))
	}
	must(t, os.WriteFile(filepath.Join(userDir, "settings.yaml"), []byte(claudeRulesSettings), 0o644))
	eng, err := NewEngine(EngineOptions{Home: filepath.Join(root, "state"), Settings: settings.Options{UserDir: userDir},
		Audit: &gatetest.MemorySink{}, Shell: gate.AgentShell{Home: home}})
	must(t, err)
	defer eng.Close()
	w := &hookWorld{ws: ws}
	for _, tt := range []struct {
		name, tool string
		input      map[string]any
		want       string
	}{
		// 1: wildcard denies under allow Bash(git:*).
		{"wildcard", "Bash", map[string]any{"command": "git push origin main"}, "deny"},
		{"wildcard tail optional", "Bash", map[string]any{"command": "git push"}, "deny"},
		{"wildcard middle", "Bash", map[string]any{"command": "git fetch --force"}, "deny"},
		{"wildcard lead", "Bash", map[string]any{"command": "ls --delete"}, "deny"},
		{"wildcard ask", "Bash", map[string]any{"command": "git commit -m wip"}, "ask"},
		{"allowed", "Bash", map[string]any{"command": "git status"}, "allow"},
		// 2: global options.
		{"git -C", "Bash", map[string]any{"command": "git -C . push"}, "deny"},
		{"git -c", "Bash", map[string]any{"command": "git -c core.pager=cat push"}, "deny"},
		{"git -C reset", "Bash", map[string]any{"command": "git -C . reset --hard"}, "deny"},
		// 3: path forms.
		{"slash is the project", "Read", map[string]any{"file_path": filepath.Join(ws, "secrets", "k.txt")}, "deny"},
		{"any case", "Read", map[string]any{"file_path": filepath.Join(ws, "SECRETS", "key.txt")}, "deny"},
		{"name at any depth", "Read", map[string]any{"file_path": filepath.Join(ws, "a", "b", "cert.pem")}, "deny"},
		{"file at any depth", "Read", map[string]any{"file_path": filepath.Join(ws, "a", "key.txt")}, "deny"},
		{"home form", "Read", map[string]any{"file_path": filepath.Join(ws, "private", "p.txt")}, "deny"},
		{"other file", "Read", map[string]any{"file_path": filepath.Join(ws, "README.md")}, "allow"},
		{"edit denied", "Edit", map[string]any{"file_path": filepath.Join(ws, "protected", "x.txt"), "old_string": "x", "new_string": "y"}, "deny"},
		// 5: flags under a prefix allow.
		{"find -name", "Bash", map[string]any{"command": "find . -name '*.go'"}, "allow"},
		{"find -delete", "Bash", map[string]any{"command": "find . -delete"}, "ask"},
		{"find -exec", "Bash", map[string]any{"command": "find . -exec ls -l {} ;"}, "ask"},
		// The names find -exec ... + adds are any number of words: the
		// deny matches as some of them would (one may be --delete).
		{"find -exec +", "Bash", map[string]any{"command": "find . -exec ls {} +"}, "deny"},
		{"git diff --output", "Bash", map[string]any{"command": "git diff --output=x.patch"}, "ask"},
		// 4: file rules on the files a command writes.
		{"cp into a denied edit", "Bash", map[string]any{"command": "cp README.md protected/c.txt"}, "deny"},
		{"tee into a denied edit", "Bash", map[string]any{"command": "echo x | tee protected/d.txt"}, "deny"},
		{"sed -i a denied edit", "Bash", map[string]any{"command": "sed -i s/x/y/ protected/x.txt"}, "deny"},
		{"rm a denied edit", "Bash", map[string]any{"command": "rm -f protected/x.txt"}, "deny"},
		// 4: file rules on the files a command's patterns read.
		{"cat a pattern of denied files", "Bash", map[string]any{"command": "ls secrets/*"}, "deny"},
		{"a pattern at any depth", "Bash", map[string]any{"command": "ls a/b/*.pem"}, "deny"},
		{"a pattern in a cd", "Bash", map[string]any{"command": "cd a && ls key*"}, "deny"},
		{"a pattern of allowed files", "Bash", map[string]any{"command": "ls *.md"}, "allow"},
		// Wrappers that only run their argument.
		{"timeout", "Bash", map[string]any{"command": "timeout 5 git status"}, "allow"},
		{"nice", "Bash", map[string]any{"command": "nice -n 5 kubectl get pods"}, "allow"},
		{"kubectl -n asks, as in Claude Code", "Bash", map[string]any{"command": "kubectl -n kube-system get pods"}, "ask"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, exit := Handle(t.Context(), Claude{}, eng, w.pre(tt.tool, "toolu_1", tt.input))
			if d, reason, _ := answer(t, out, exit); d != tt.want {
				t.Errorf("%s %v = %s (%s), want %s", tt.tool, tt.input, d, reason, tt.want)
			}
		})
	}
}

// TestEngineReadOnlyBash: with no rule naming them, the commands whose
// every effect is a read run without asking, as in Claude Code — in
// default, plan and dontAsk — while a denied file stays denied and any
// other command asks (default) or is refused (plan, dontAsk).
func TestEngineReadOnlyBash(t *testing.T) {
	w := newHookWorld(t)
	must(t, os.WriteFile(filepath.Join(w.ws, "README.md"), []byte("# x\n"), 0o644))
	for _, mode := range []string{"default", "plan", "dontAsk"} {
		for _, tt := range []struct {
			cmd, want string
		}{
			{"ls", "allow"},
			{"cat README.md", "allow"},
			{"git status", "allow"}, // allowed by the world's rule too
			{"git log -1", "allow"},
			{"grep -n hello README.md", "allow"},
			// Stricter than Claude Code (docs/claude-rules.md): a recursive
			// grep reads every file of the directory, .env too; rg runs
			// programs (--pre, -z); sed and awk run commands and write.
			{"grep -r hello .", "other"},
			{"rg hello", "other"},
			{"sed -n 1p README.md", "other"},
			{"awk 'BEGIN{system(\"touch p\")}'", "other"},
			// The red team's: each ran or wrote, classified read-only.
			{"x=-delete; find . $x", "other"},
			{"env --split='sh -c \"touch p\"' cat", "other"},
			{"git grep -Otouch hello", "other"},
			{"printf evil | uniq - README.md", "other"},
			{"command time -o out cat README.md", "other"},
			{"find . -name '*.md'", "allow"},
			{"pwd", "allow"},
			{"cat README.md | head -1 | wc -l", "allow"},
			{"cat .env", "deny"},
			{"ls > out.txt", "other"},
			{"find . -delete", "other"},
			{"git branch x", "other"},
			{"touch x", "other"},
		} {
			t.Run(mode+"/"+tt.cmd, func(t *testing.T) {
				out, exit := Handle(t.Context(), Claude{}, w.eng, w.input("PreToolUse", "Bash", "toolu_1", mode, map[string]any{"command": tt.cmd}))
				d, reason, _ := answer(t, out, exit)
				want := tt.want
				if want == "other" {
					want = map[string]string{"default": "ask", "plan": "deny", "dontAsk": "deny"}[mode]
				}
				if d != want {
					t.Errorf("%s in %s = %s (%s), want %s", tt.cmd, mode, d, reason, want)
				}
			})
		}
	}
}
