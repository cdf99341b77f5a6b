package settings

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// parseFixture parses testdata/valid/name as a file of scope.
func parseFixture(t *testing.T, name string, scope Scope) *File {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata/valid", name))
	if err != nil {
		t.Fatal(err)
	}
	f, err := Parse(name, data, scope, testWorkspace)
	if err != nil {
		t.Fatalf("Parse(%s): %v", name, err)
	}
	return f
}

// summary is what a merge produced, as text that a test table can spell.
type summary struct {
	Files        []string
	Rules        []string
	Hooks        []string
	Mode         string
	ManagedMode  bool
	Dirs         []string
	Env          []string
	Requests     []string
	AllowPrivate []string
	Ignored      []string
}

func summarize(s *Settings) summary {
	var out summary
	for _, f := range s.Files {
		out.Files = append(out.Files, f.String())
	}
	for _, r := range s.Rules {
		out.Rules = append(out.Rules, fmt.Sprintf("%s %s @ %s", r.List, r.Text, r.Source))
	}
	for _, h := range s.Hooks {
		trust := "untrusted"
		if h.Trusted() {
			trust = "trusted"
		}
		out.Hooks = append(out.Hooks, fmt.Sprintf("%s %q %q %v %s @ %s", h.Event, h.Matcher, h.Argv, h.Timeout, trust, h.Source))
	}
	if s.DefaultMode != "" {
		out.Mode = s.DefaultMode + " @ " + s.DefaultModeSource.String()
	}
	out.ManagedMode = s.ManagedMode
	out.Dirs = s.AdditionalDirs
	out.Env = s.EnvList()
	if len(out.Env) == 0 {
		out.Env = nil
	}
	if s.Network != nil {
		for _, r := range s.Network.Requests {
			out.Requests = append(out.Requests, fmt.Sprintf("%s %v %v", r.Origin, r.Methods, r.Paths))
		}
		out.AllowPrivate = s.Network.AllowPrivate
	}
	out.Ignored = s.Ignored
	return out
}

// fixtures are the files of testdata/valid and the scope each is read as.
var fixtures = map[string]Scope{
	"user.yaml":           ScopeUser,
	"workspace.yaml":      ScopeWorkspace,
	"local.yaml":          ScopeLocal,
	"flag.json":           ScopeFlag,
	"managed.yaml":        ScopeManaged,
	"managed-locked.yaml": ScopeManaged,
}

// Each line of the fixtures' rules and hooks, as summarize spells them;
// the cases below pick theirs.
var (
	userRules = []string{
		"allow Read @ user.yaml:5:7 (user)",
		"allow Bash(git status) @ user.yaml:6:7 (user)",
		"deny Read(./.env) @ user.yaml:8:7 (user)",
	}
	workspaceRules = []string{
		"allow Bash(npm run test:*) @ workspace.yaml:4:7 (workspace)",
		"allow WebFetch(domain:github.com) @ workspace.yaml:5:7 (workspace)",
		"allow mcp__github__* @ workspace.yaml:6:7 (workspace)",
		"ask Write(./src/**) @ workspace.yaml:8:7 (workspace)",
	}
	localRules   = []string{"deny Bash(rm:*) @ local.yaml:3:10 (local)"}
	flagRules    = []string{"ask mcp__jira @ flag.json:2:27 (flag)"}
	managedRules = []string{"deny WebFetch(domain:*.evil.example) @ managed.yaml:4:10 (managed)"}

	userHooks = []string{
		`PreToolUse "Bash" ["/usr/local/bin/audit-bash" "--json"] 2.5s trusted @ user.yaml:15:20 (user)`,
	}
	workspaceHooks = []string{
		`PreToolUse "Bash" ["/work/ws/.norma/hooks/check.sh"] 0s untrusted @ workspace.yaml:23:20 (workspace)`,
		`PostToolUse "Write|Edit" ["/work/ws/.norma/hooks/format.sh" "--check" "two words"] 0s untrusted @ workspace.yaml:18:20 (workspace)`,
	}
	localHooks = []string{
		`Stop "" ["/work/ws/.norma/hooks/stop.sh"] 0s untrusted @ local.yaml:8:20 (local)`,
	}
	managedHooks = []string{
		`SessionStart "" ["/opt/corp/bin/session-start"] 0s trusted @ managed.yaml:9:20 (managed)`,
	}
)

func cat(lists ...[]string) []string {
	var out []string
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

// TestMerge merges fixtures and checks precedence, provenance and the
// managed locks. Files are given to Merge out of order: it sorts them.
func TestMerge(t *testing.T) {
	for _, tt := range []struct {
		name  string
		files []string
		want  summary
	}{
		{
			name: "no files",
			want: summary{},
		},
		{
			name:  "user only",
			files: []string{"user.yaml"},
			want: summary{
				Files:        []string{"user.yaml:1:1 (user)"},
				Rules:        userRules,
				Hooks:        userHooks,
				Mode:         "plan @ user.yaml:9:16 (user)",
				Env:          []string{"EDITOR=vi", "SHARED=user"},
				AllowPrivate: []string{"10.0.0.0/8", "127.0.0.1/32"},
			},
		},
		{
			// Every file's rules are kept, lowest file first; the highest
			// defaultMode wins (the flag file's, managed sets none); env
			// names go to the highest file that sets them; network
			// requests are the union and allow_private has no
			// duplicates (10.1.2.3/8 is 10.0.0.0/8); hooks run lowest
			// file first, in event order within a file.
			name:  "every scope",
			files: []string{"managed.yaml", "local.yaml", "flag.json", "user.yaml", "workspace.yaml"},
			want: summary{
				Files: []string{"user.yaml:1:1 (user)", "workspace.yaml:1:1 (workspace)", "local.yaml:1:1 (local)",
					"flag.json:1:1 (flag)", "managed.yaml:1:1 (managed)"},
				Rules: cat(userRules, workspaceRules, localRules, flagRules, managedRules),
				Hooks: cat(userHooks, workspaceHooks, localHooks, managedHooks),
				Mode:  "dontAsk @ flag.json:2:56 (flag)",
				Dirs:  []string{"../shared"},
				Env:   []string{"CORP=1", "EDITOR=vi", "NODE_ENV=test", "SHARED=flag"},
				Requests: []string{
					"https://api.github.com:443 [GET] [/repos/{owner}/{repo}]",
				},
				AllowPrivate: []string{"10.0.0.0/8", "127.0.0.1/32", "192.168.1.0/24"},
			},
		},
		{
			name:  "workspace above user",
			files: []string{"workspace.yaml", "user.yaml"},
			want: summary{
				Files:        []string{"user.yaml:1:1 (user)", "workspace.yaml:1:1 (workspace)"},
				Rules:        cat(userRules, workspaceRules),
				Hooks:        cat(userHooks, workspaceHooks),
				Mode:         "acceptEdits @ workspace.yaml:9:16 (workspace)",
				Dirs:         []string{"../shared"},
				Env:          []string{"EDITOR=vi", "NODE_ENV=test", "SHARED=workspace"},
				Requests:     []string{"https://api.github.com:443 [GET] [/repos/{owner}/{repo}]"},
				AllowPrivate: []string{"10.0.0.0/8", "127.0.0.1/32"},
			},
		},
		{
			// The locks drop every other file's allow and ask rules
			// (their deny rules still narrow) and hooks, and say so; the
			// rest (mode, env, network) still merges, and the managed
			// mode is marked as such.
			name:  "managed locks",
			files: []string{"local.yaml", "managed-locked.yaml", "user.yaml", "workspace.yaml"},
			want: summary{
				Files: []string{"user.yaml:1:1 (user)", "workspace.yaml:1:1 (workspace)", "local.yaml:1:1 (local)",
					"managed-locked.yaml:1:1 (managed)"},
				Rules: []string{
					"deny Read(./.env) @ user.yaml:8:7 (user)",
					"deny Bash(rm:*) @ local.yaml:3:10 (local)",
					"allow Bash(make:*) @ managed-locked.yaml:5:11 (managed)",
					"deny WebFetch(domain:*.evil.example) @ managed-locked.yaml:6:10 (managed)",
				},
				Hooks: []string{
					`SessionStart "" ["/opt/corp/bin/session-start"] 0s trusted @ managed-locked.yaml:12:20 (managed)`,
				},
				Mode:         "default @ managed-locked.yaml:7:16 (managed)",
				ManagedMode:  true,
				Dirs:         []string{"../shared"},
				Env:          []string{"EDITOR=vi", "NODE_ENV=test", "SHARED=local"},
				Requests:     []string{"https://api.github.com:443 [GET] [/repos/{owner}/{repo}]"},
				AllowPrivate: []string{"10.0.0.0/8", "127.0.0.1/32"},
				Ignored: []string{
					"2 allow and ask rules of user.yaml (managed settings allow their own only; deny rules still apply)",
					"1 hooks of user.yaml (managed settings allow their own hooks only)",
					"4 allow and ask rules of workspace.yaml (managed settings allow their own only; deny rules still apply)",
					"2 hooks of workspace.yaml (managed settings allow their own hooks only)",
					"1 hooks of local.yaml (managed settings allow their own hooks only)",
				},
			},
		},
		{
			// Without locks, managed settings add to the others.
			name:  "managed without locks",
			files: []string{"managed.yaml", "local.yaml"},
			want: summary{
				Files: []string{"local.yaml:1:1 (local)", "managed.yaml:1:1 (managed)"},
				Rules: cat(localRules, managedRules),
				Hooks: cat(localHooks, managedHooks),
				Env:   []string{"CORP=1", "SHARED=local"},
			},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var files []*File
			for _, n := range tt.files {
				files = append(files, parseFixture(t, n, fixtures[n]))
			}
			got := summarize(Merge(files))
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Merge(%v):\n got  %s\n want %s", tt.files, dump(got), dump(tt.want))
			}
		})
	}
}

func dump(v any) string {
	b, _ := json.MarshalIndent(v, "", "  ")
	return string(b)
}

// TestMergeGolden keeps the JSON of `norma settings show --json` for every
// scope at once: provenance of every rule, hook and value.
func TestMergeGolden(t *testing.T) {
	var files []*File
	for _, n := range []string{"user.yaml", "workspace.yaml", "local.yaml", "flag.json", "managed.yaml"} {
		files = append(files, parseFixture(t, n, fixtures[n]))
	}
	b, err := json.MarshalIndent(Merge(files), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "testdata/valid/merged.json.golden", append(b, '\n'))
}

// TestPolicyRules: the merged rules reach the gate list by list, in order.
func TestPolicyRules(t *testing.T) {
	s := Merge([]*File{parseFixture(t, "local.yaml", ScopeLocal), parseFixture(t, "user.yaml", ScopeUser)})
	r := s.PolicyRules()
	if got, want := r.Allow, []string{"Read", "Bash(git status)"}; !reflect.DeepEqual(got, want) {
		t.Errorf("PolicyRules().Allow = %q, want %q", got, want)
	}
	if got, want := r.Deny, []string{"Read(./.env)", "Bash(rm:*)"}; !reflect.DeepEqual(got, want) {
		t.Errorf("PolicyRules().Deny = %q, want %q", got, want)
	}
	if r.Ask != nil {
		t.Errorf("PolicyRules().Ask = %q, want none", r.Ask)
	}
}

// TestTrusted: hooks run without `norma hooks trust` only from the user's
// file and managed settings, never from files a repository can carry.
func TestTrusted(t *testing.T) {
	for _, tt := range []struct {
		scope Scope
		want  bool
	}{
		{ScopeUser, true},
		{ScopeWorkspace, false},
		{ScopeLocal, false},
		{ScopeFlag, false},
		{ScopeManaged, true},
		{0, false},  // the zero scope trusts nothing
		{99, false}, // nor does an unknown one
	} {
		h := Hook{Source: Source{Scope: tt.scope}}
		if got := h.Trusted(); got != tt.want {
			t.Errorf("Hook{Scope: %v}.Trusted() = %v, want %v", tt.scope, got, tt.want)
		}
	}
	if got := Scope(99).String(); got != "unknown(99)" {
		t.Errorf("Scope(99).String() = %q", got)
	}
}

// TestEmpty: a file of comments only, and one of empty sections, set
// nothing and merge to nothing.
func TestEmpty(t *testing.T) {
	for _, name := range []string{"empty.yaml", "empty-sections.yaml"} {
		f := parseFixture(t, name, ScopeLocal)
		if len(f.Rules)+len(f.Hooks) != 0 {
			t.Errorf("Parse(%s) = %d rules, %d hooks", name, len(f.Rules), len(f.Hooks))
		}
		s := Merge([]*File{f})
		if s.DefaultMode != "" || len(s.Env) != 0 || len(s.Rules) != 0 {
			t.Errorf("Merge(%s) = %+v", name, s)
		}
	}
	if _, err := Parse("blank.yaml", nil, ScopeLocal, testWorkspace); err != nil {
		t.Errorf("Parse(empty) = %v", err)
	}
}

// TestHookCommand: the command of a hook becomes the program and its
// literal arguments, with the workspace substituted as one word (a
// workspace path with spaces or shell characters stays one word) and a
// relative program resolved against the workspace.
func TestHookCommand(t *testing.T) {
	for _, tt := range []struct {
		name, cmd, workspace string
		want                 []string // nil: refused
	}{
		{"absolute", "/usr/local/bin/check --strict", "/w", []string{"/usr/local/bin/check", "--strict"}},
		{"claude variable", "$CLAUDE_PROJECT_DIR/.claude/hooks/x.sh", "/w", []string{"/w/.claude/hooks/x.sh"}},
		{"braced", "${CLAUDE_PROJECT_DIR}/x.sh ${NORMA_WORKSPACE}", "/w", []string{"/w/x.sh", "/w"}},
		{"norma variable", "$NORMA_WORKSPACE/x.sh", "/w", []string{"/w/x.sh"}},
		{"quoted variable", `"$CLAUDE_PROJECT_DIR"/x.sh 'a b' "c d"`, "/w", []string{"/w/x.sh", "a b", "c d"}},
		{"workspace with a space", "$CLAUDE_PROJECT_DIR/x.sh", "/home/jo/my project", []string{"/home/jo/my project/x.sh"}},
		{"workspace with shell characters", "$CLAUDE_PROJECT_DIR/x.sh", "/tmp/a;b$c|d", []string{"/tmp/a;b$c|d/x.sh"}},
		{"relative", "./hooks/x.sh a", "/w", []string{"/w/hooks/x.sh", "a"}},
		{"relative without dot", "hooks/x.sh", "/w", []string{"/w/hooks/x.sh"}},
		{"relative parent", "../x.sh", "/w/ws", []string{"/w/x.sh"}},
		{"absolute without workspace", "/usr/bin/true", "", []string{"/usr/bin/true"}},
		{"variable without workspace", "$CLAUDE_PROJECT_DIR/x.sh", "", nil},
		{"relative without workspace", "./x.sh", "", nil},
		{"relative workspace", "./x.sh", "ws", nil},
		{"longer variable name", "$CLAUDE_PROJECT_DIRX/x.sh", "/w", nil},
		{"other variable", "/usr/bin/check $HOME", "/w", nil},
		{"quoted other variable", `/usr/bin/check "$HOME"`, "/w", nil},
		{"glob", "/usr/bin/check *.go", "/w", nil},
		{"tilde", "~/bin/check", "/w", nil},
		{"bare", "check", "/w", nil},
		{"pipe", "/usr/bin/a | /usr/bin/b", "/w", nil},
		{"quoted pipe", "/usr/bin/check 'a|b'", "/w", nil},
		{"substitution", "/usr/bin/check $(/usr/bin/id)", "/w", nil},
		{"backquotes", "/usr/bin/check `id`", "/w", nil},
		{"redirection", "/usr/bin/check < /etc/passwd", "/w", nil},
		{"and list", "/usr/bin/a && /usr/bin/b", "/w", nil},
		{"assignment", "FOO=1 /usr/bin/check", "/w", nil},
		{"shell -c", "/bin/sh -c /usr/bin/check", "/w", nil},
		{"does not parse", `/usr/bin/check "unclosed`, "/w", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			q, _ := json.Marshal(tt.cmd)
			src := "hooks:\n  PreToolUse:\n    - hooks:\n        - type: command\n          command: " + string(q) + "\n          timeout: 0.25\n"
			f, err := Parse("hook.yaml", []byte(src), ScopeWorkspace, tt.workspace)
			if tt.want == nil {
				if err == nil {
					t.Fatalf("Parse(command %q, workspace %q) = %q, want an error", tt.cmd, tt.workspace, f.Hooks[0].Argv)
				}
				if !strings.HasPrefix(err.Error(), "hook.yaml:5:20: hooks.PreToolUse[0].hooks[0].command: ") {
					t.Errorf("Parse(command %q) error %q is not at the command", tt.cmd, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse(command %q, workspace %q): %v", tt.cmd, tt.workspace, err)
			}
			h := f.Hooks[0]
			if !reflect.DeepEqual(h.Argv, tt.want) {
				t.Errorf("Parse(command %q, workspace %q).Argv = %q, want %q", tt.cmd, tt.workspace, h.Argv, tt.want)
			}
			if h.Command != tt.cmd || h.Timeout != 250*time.Millisecond || h.Event != "PreToolUse" {
				t.Errorf("Parse(command %q) = %+v, want the command as written and a 250ms timeout", tt.cmd, h)
			}
		})
	}
}
