package runtime

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func defWrite(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestDefinitionsFound: each kind of definition, where Claude Code reads
// it, with the names it answers to, what it runs, and whether it needs
// trust.
func TestDefinitionsFound(t *testing.T) {
	ws := t.TempDir()
	user := t.TempDir()
	if err := os.Mkdir(filepath.Join(ws, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	defWrite(t, filepath.Join(ws, ".claude/agents/a.md"), "---\nname: Reviewer\nmcpServers: [x]\nisolation: worktree\nskills: one, two\n---\nx\n")
	defWrite(t, filepath.Join(ws, ".claude/agents/notes.txt"), "not a definition\n")
	defWrite(t, filepath.Join(ws, ".claude/skills/fmt/SKILL.md"), "---\nname: format\nhooks: {}\n---\nRun !`gofmt -l .`\n")
	defWrite(t, filepath.Join(ws, ".claude/skills/fmt/run.sh"), "gofmt\n")
	defWrite(t, filepath.Join(ws, ".claude/skills/empty/README.md"), "no SKILL.md: not a skill\n")
	defWrite(t, filepath.Join(ws, ".claude/commands/ops/deploy.md"), "---\nname: other\n---\n!`make deploy`\n")
	defWrite(t, filepath.Join(ws, "web/.claude/skills/bundle/SKILL.md"), "Bundle.\n")
	defWrite(t, filepath.Join(ws, "web/.claude/agents/nested.md"), "---\nname: nested\n---\n") // nested agents are not loaded
	defWrite(t, filepath.Join(user, "agents/mine.md"), "---\nname: mine\n---\n")
	defs, err := Definitions(ws, DefinitionSources{UserDir: user})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range defs {
		got = append(got, strings.Join([]string{string(d.Kind), string(d.Scope), d.Rel, strings.Join(d.Names, ","), strings.Join(d.Runs, ","),
			d.Isolation, strings.Join(d.Skills, ","), map[bool]string{true: "trust", false: "-"}[d.NeedsTrust]}, " | "))
	}
	want := []string{
		"agent | project | .claude/agents/a.md | a,reviewer | mcpServers | worktree | one,two | trust",
		"skill | project | .claude/skills/fmt | fmt,format | hooks,!`command` |  |  | trust",
		"command | project | .claude/commands/ops/deploy.md | deploy,ops:deploy,ops/deploy | !`command` |  |  | trust",
		"skill | nested | web/.claude/skills/bundle | bundle |  |  |  | trust",
		"agent | user | " + filepath.Join(user, "agents/mine.md") + " | mine |  |  |  | -",
	}
	if !slices.Equal(got, want) {
		t.Errorf("Definitions =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if a := defs[0]; !a.Answers("REVIEWER") || !a.Answers("plugin:a") || a.Answers("other") {
		t.Errorf("Answers of %v", a.Names)
	}
}

// TestDefinitionsUserInsideWorkspace: a workspace that contains the home
// directory holds the user's definitions; they need trust, as the agent
// could have written them. The walk above stops below home.
func TestDefinitionsUserInsideWorkspace(t *testing.T) {
	home := t.TempDir()
	defWrite(t, filepath.Join(home, ".claude/agents/mine.md"), "---\nname: mine\n---\n")
	defs, err := Definitions(home, DefinitionSources{Home: home, UserDir: filepath.Join(home, ".claude")}, DefinitionAgent)
	if err != nil {
		t.Fatal(err)
	}
	if len(defs) != 1 || defs[0].Scope != DefinitionUser || !defs[0].NeedsTrust || defs[0].Rel != ".claude/agents/mine.md" {
		t.Fatalf("Definitions = %+v, want the user's agent, needing trust", defs)
	}
}

// TestDefinitionTrustStates: never accepted, accepted, changed since;
// the record follows the definition through a symbolic link (.claude →
// cfg, as a repository can ship) and either spelling of its path.
func TestDefinitionTrustStates(t *testing.T) {
	ws, home := t.TempDir(), t.TempDir()
	defWrite(t, filepath.Join(ws, "cfg/skills/x/SKILL.md"), "X\n")
	defWrite(t, filepath.Join(ws, "cfg/skills/x/lib/run.sh"), "echo 1\n")
	if err := os.Symlink("cfg", filepath.Join(ws, ".claude")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(ws, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	defs, err := Definitions(ws, DefinitionSources{}, DefinitionSkill)
	if err != nil || len(defs) != 1 || defs[0].Rel != ".claude/skills/x" {
		t.Fatalf("Definitions = %+v, %v", defs, err)
	}
	d := defs[0]
	store, err := OpenDefinitionTrust(home)
	if err != nil {
		t.Fatal(err)
	}
	state := func() DefinitionState {
		t.Helper()
		s, err := store.State(d)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	if s := state(); s != DefinitionNotTrusted {
		t.Fatalf("State before trust = %v", s)
	}
	if _, err := store.Trust(d); err != nil {
		t.Fatal(err)
	}
	if s := state(); s != DefinitionTrusted {
		t.Fatalf("State after trust = %v", s)
	}
	viaTarget := d
	viaTarget.Path = filepath.Join(ws, "cfg/skills/x")
	if s, err := store.State(viaTarget); err != nil || s != DefinitionTrusted {
		t.Fatalf("State by the resolved path = %v, %v", s, err)
	}
	defWrite(t, filepath.Join(ws, "cfg/skills/x/lib/run.sh"), "curl x | sh\n")
	if s := state(); s != DefinitionChanged {
		t.Fatalf("State after a script changed = %v", s)
	}
	// A corrupt record refuses (the caller denies), it does not trust.
	defWrite(t, filepath.Join(home, DefinitionTrustFile), "{")
	if _, err := store.State(d); err == nil {
		t.Fatal("State with a corrupt record: no error")
	}
}

// FuzzFrontmatter: no input panics the frontmatter reader; a block it
// reads is a mapping.
func FuzzFrontmatter(f *testing.F) {
	for _, s := range []string{
		"---\nname: x\n---\nbody\n",             // a subagent
		"no frontmatter\n",                      // a command
		"---\nname: [unclosed\n---\n",           // YAML that does not parse
		"---\nname: x\n",                        // no closing line
		"\xef\xbb\xbf---\r\nname: x\r\n---\r\n", // BOM and CRLF
		"---\n---\n",                            // empty
		"---\n- a\n- b\n---\n",                  // not a mapping
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, ok, err := frontmatter(b)
		if err == nil && ok && m == nil {
			t.Fatalf("frontmatter(%q) = nil mapping without error", b)
		}
		if !ok && (m != nil || err != nil) {
			t.Fatalf("frontmatter(%q) = %v, %v with no block", b, m, err)
		}
	})
}
