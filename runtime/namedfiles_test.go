package runtime_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/gate"
	"github.com/norma-run/norma/policy"
	"github.com/norma-run/norma/runtime"
)

// TestNamedFilesRules: the file rules apply to the files a command names
// and to the REV:PATH operands of git show, cat-file and diff, deny and
// ask rules alike: under ask: Read(./notes/**) and allow: Bash(cat:*),
// cat notes/a.txt asks (behind an agent's hook, where the command runs
// outside the sandbox); under deny: Read(./config.yml) or the hidden
// floor (.env), git show HEAD:config.yml is denied even under
// allow: Bash(git show:*), and in a run's own Bash too, where the sandbox
// cannot stop git from reading its objects.
func TestNamedFilesRules(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"notes/a.txt", "README.md", ".env"} {
		p := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rules := policy.Rules{Allow: []string{"Bash(cat:*)", "Bash(git show:*)", "Bash(git cat-file:*)", "Bash(git diff:*)"},
		Ask: []string{"Read(./notes/**)"}, Deny: []string{"Read(./config.yml)"}}
	rt, err := runtime.Open(t.Context(), runtime.Options{Dir: dir, Home: t.TempDir(), Rules: rules, Audit: nopSink{}})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	for _, tt := range []struct {
		cmd                  string
		unconfined, confined capability.Mode
	}{
		{"cat notes/a.txt", capability.ApprovalRequired, capability.Allow},
		{"cat README.md notes/a.txt", capability.ApprovalRequired, capability.Allow},
		{"cat README.md", capability.Allow, capability.Allow},
		{"git show HEAD:config.yml", capability.Deny, capability.Deny},
		{"git show main:./CONFIG.yml", capability.Deny, capability.Deny},
		{"git -C . show HEAD:config.yml", capability.Deny, capability.Deny},
		{"git cat-file -p :0:config.yml", capability.Deny, capability.Deny},
		{"git diff HEAD:README.md HEAD:config.yml", capability.Deny, capability.Deny},
		{"git show HEAD:.env", capability.Deny, capability.Deny},
		{"cd notes && git show HEAD:config.yml", capability.Deny, capability.Deny},
		{"git show HEAD:notes/a.txt", capability.ApprovalRequired, capability.ApprovalRequired},
		{"git show HEAD~1", capability.Allow, capability.Allow},
		{"git show HEAD:README.md", capability.Allow, capability.Allow},
	} {
		in, _ := json.Marshal(map[string]string{"command": tt.cmd})
		e, err := rt.ExplainUnconfined(t.Context(), "Bash", in, envShell())
		if err != nil || e.Decision.Mode != tt.unconfined {
			t.Errorf("unconfined %q = %v %s %s, %v; want %v", tt.cmd, e.Decision.Mode, e.Decision.Reason, e.Decision.Rule, err, tt.unconfined)
		}
		e, err = rt.Explain(t.Context(), "Bash", in)
		if err != nil || e.Decision.Mode != tt.confined {
			t.Errorf("confined %q = %v %s %s, %v; want %v", tt.cmd, e.Decision.Mode, e.Decision.Reason, e.Decision.Rule, err, tt.confined)
		}
	}
}

// TestAcceptEditsRedTeam: the red team's commands that wrote under .git/,
// .claude/, .husky/ or protected/ through options the file-command check
// did not read (abbreviations and bundles of -t, backup suffixes, sed's
// -l, --expr, {e …}, -i with a directory suffix), a hard link made by an
// allowed call, and REV:PATH with a colon in braces: none is allowed
// behind the hook in acceptEdits.
func TestAcceptEditsRedTeam(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{".git/config", "config", "a.txt", "evil.txt", "pre-commit", ".env", "protected/p.txt"} {
		p := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Link(filepath.Join(dir, ".git/config"), filepath.Join(dir, "gc")); err != nil {
		t.Fatal(err)
	}
	rules := policy.Rules{Allow: []string{"Bash(git show:*)", "Bash(git status:*)"}, Deny: []string{"Read(./.env)", "Edit(./protected/**)"}}
	rt, err := runtime.Open(t.Context(), runtime.Options{Dir: dir, Home: t.TempDir(), Rules: rules, Audit: nopSink{}, Mode: gate.ModeAcceptEdits})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	for _, cmd := range []string{
		"cp --t .git config", "cp --target-dir=.git config", "cp -rt .claude a.txt", "mv --target-dir=.git config",
		"cp -ft .husky evil.txt", "cp --target-d .git/refs/heads a.txt", "cp --t .idea evil.txt",
		"sed -l 5 '1e touch PWNED' a.txt", "sed --line-length 5 '1e touch PWNED' a.txt",
		"sed --expr='1e touch PWNED' a.txt", "sed --e='1e touch PWNED' a.txt", "sed --fi=s.sed a.txt",
		"sed $'1{e touch PWNED\n}' a.txt", "sed '/x/{w out\n}' a.txt",
		"sed -i'.git/*' s/x/x/ config", "sed --in-place=.git/* s/x/x/ config", "sed -i'../*' s/x/x/ a.txt",
		"sed -i'.husky/*' s/x/x/ pre-commit", "sed -i.json s/x/x/ a.txt", "sed -invrc s/x/x/ a.txt",
		"cp -b -S .json a.txt .mcp", "cp --backup --suffix=.json a.txt .mcp", "mv -b -S .json a.txt .mcp",
		"cp -l .git/config gc2", "cp config gc", "cp --t protected evil.txt", "sed -i'protected/*' s/x/x/ evil.txt",
		"cp -rL d out",
		"sed -ne '1e touch PWNED' -e p a.txt", "sed -Ee '1e touch PWNED' --expression=p a.txt",
		"sed -n ':a 1e touch PWNED' a.txt", "sed -n '/[/]*/e touch PWNED' a.txt", "sed -n '/[/]*/w .git/config' config",
		"sed -n '\\,.*,Ie touch PWNED' a.txt", "sed -n 'v4.2 e touch PWNED' a.txt",
		"git show 'HEAD^{/i:*}:.env'",
	} {
		in, _ := json.Marshal(map[string]string{"command": cmd})
		e, err := rt.ExplainUnconfined(t.Context(), "Bash", in, envShell())
		if err != nil || e.Decision.Mode == capability.Allow {
			t.Errorf("%q = %v %s %s, %v; want ask or deny", cmd, e.Decision.Mode, e.Decision.Reason, e.Decision.Rule, err)
		}
	}
	// What the mode is for still runs.
	for _, cmd := range []string{"mkdir -p out && cp a.txt out/ && mv out/a.txt out/b.txt", "sed -i s/x/y/ a.txt", "rm -f evil.txt"} {
		in, _ := json.Marshal(map[string]string{"command": cmd})
		e, err := rt.ExplainUnconfined(t.Context(), "Bash", in, envShell())
		if err != nil || e.Decision.Mode != capability.Allow {
			t.Errorf("%q = %v %s %s, %v; want allow", cmd, e.Decision.Mode, e.Decision.Reason, e.Decision.Rule, err)
		}
	}
}

// TestRevPathBelowTop: in a workspace below its repository's top, a
// REV:PATH names a path relative to the top (git show HEAD:proj/creds.txt
// is the workspace's creds.txt): the rules of that file decide it, and a
// path of the repository outside the workspace is refused as any is.
func TestRevPathBelowTop(t *testing.T) {
	top := t.TempDir()
	dir := filepath.Join(top, "proj")
	for _, d := range []string{filepath.Join(top, ".git"), dir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"creds.txt", "README.md"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rules := policy.Rules{Allow: []string{"Bash(git show:*)"}, Deny: []string{"Read(./creds.txt)"}}
	rt, err := runtime.Open(t.Context(), runtime.Options{Dir: dir, Home: t.TempDir(), Rules: rules, Audit: nopSink{}})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	for _, tt := range []struct {
		cmd  string
		want capability.Mode
	}{
		{"git show HEAD:proj/creds.txt", capability.Deny},
		{"git show HEAD:creds.txt", capability.Deny},
		{"git show HEAD:other/x.txt", capability.Deny},
		{"git show HEAD:proj/README.md", capability.Allow},
	} {
		in, _ := json.Marshal(map[string]string{"command": tt.cmd})
		for name, explain := range map[string]func() (gate.Explanation, error){
			"unconfined": func() (gate.Explanation, error) { return rt.ExplainUnconfined(t.Context(), "Bash", in, envShell()) },
			"confined":   func() (gate.Explanation, error) { return rt.Explain(t.Context(), "Bash", in) },
		} {
			e, err := explain()
			if err != nil || e.Decision.Mode != tt.want {
				t.Errorf("%s %q = %v %s %s, %v; want %v", name, tt.cmd, e.Decision.Mode, e.Decision.Reason, e.Decision.Rule, err, tt.want)
			}
		}
	}
}

// TestProtectedWritesAsk: a write under .git/ (at any depth, in any
// case) or of another of Claude Code's protected paths asks even under
// allow: Write, as in Claude Code (differential rows 10-13, R25); a
// redirection under what an earlier mv of the line wrote asks in
// acceptEdits (R22).
func TestProtectedWritesAsk(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	rules := policy.Rules{Allow: []string{"Write", "Edit", "Bash(echo:*)", "Bash(mv:*)"}}
	for _, mode := range []gate.Mode{gate.ModeDefault, gate.ModeAcceptEdits} {
		rt, err := runtime.Open(t.Context(), runtime.Options{Dir: dir, Home: t.TempDir(), Rules: rules, Audit: nopSink{}, Mode: mode})
		if err != nil {
			t.Fatal(err)
		}
		for _, tt := range []struct {
			tool, in string
			want     capability.Mode
		}{
			{"Write", `{"path":".git/new-config","content":"x"}`, capability.ApprovalRequired},
			{"Write", `{"path":".GIT/new.txt","content":"x"}`, capability.ApprovalRequired},
			{"Write", `{"path":"sub/.git/new.txt","content":"x"}`, capability.ApprovalRequired},
			{"Write", `{"path":".npmrc","content":"x"}`, capability.ApprovalRequired},
			{"Write", `{"path":".cargo/config.toml","content":"x"}`, capability.ApprovalRequired},
			{"Bash", `{"command":"echo x > .git/x"}`, capability.ApprovalRequired},
			{"Write", `{"path":"src/a.txt","content":"x"}`, capability.Allow},
		} {
			e, err := rt.ExplainUnconfined(t.Context(), tt.tool, json.RawMessage(tt.in), envShell())
			if err != nil || e.Decision.Mode != tt.want {
				t.Errorf("%s %s %s = %v %s %s, %v; want %v", mode, tt.tool, tt.in, e.Decision.Mode, e.Decision.Reason, e.Decision.Rule, err, tt.want)
			}
		}
		if mode == gate.ModeAcceptEdits {
			in := json.RawMessage(`{"command":"mv d e && echo x > e/l/f"}`)
			if e, err := rt.ExplainUnconfined(t.Context(), "Bash", in, envShell()); err != nil || e.Decision.Mode == capability.Allow {
				t.Errorf("acceptEdits %s = %v %s, %v; want ask", in, e.Decision.Mode, e.Decision.Reason, err)
			}
		}
		rt.Close()
	}
}
