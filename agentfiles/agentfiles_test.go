package agentfiles

import (
	"os"
	"slices"
	"strings"
	"testing"
)

func TestLookup(t *testing.T) {
	for _, tc := range []struct {
		rel, home string
		want      Class // 0: not catalogued
	}{
		{".claude/settings.local.json", "", Code},
		{".CLAUDE/Settings.Local.JSON", "", Code},
		{".claude/agents/x.md", "", Code},
		{".claude/ſettings.json", "", Code},
		{".claude/agents/sub/x.md", "", Code},
		{".claude/skills/s/SKILL.md", "", Code},
		{".claude/commands/c.md", "", Code},
		{".claude", "", 0},
		{".claude/notes.txt", "", 0},
		{".mcp.json", "", Code},
		{"sub/.mcp.json", "", 0},
		{".codex/config.toml", "", Code},
		{".gemini/settings.json", "", Code},
		{".cursor/mcp.json", "", Code},
		{".vscode/tasks.json", "", Code},
		{".vscode/extensions.json", "", 0},
		{".git/config", "", Code},
		{".git/hooks/pre-commit", "", Code},
		{".git/info/attributes", "", Code},
		{".git/modules/lib/config", "", Code},
		{".git/objects/ab/cdef", "", 0},
		{".git/index", "", 0},
		{"src/.gitattributes", "", 0},
		{".envrc", "", Code},
		{".norma/settings.yaml", "", Code},
		{".norma/settings.local.yaml", "", Code},
		{".norma/memory/MEMORY.md", "", 0},
		{"CLAUDE.md", "", Instructions},
		{"docs/CLAUDE.md", "", Instructions},
		{"AGENTS.md", "", Instructions},
		{"a/b/GEMINI.md", "", Instructions},
		{"README.md", "", 0},
		{".bashrc", "", 0},
		{".bashrc", ".", Code},
		{"u/.bashrc", "u", Code},
		{"u/.claude/agents/x.md", "u", Code},
		{"v/.bashrc", "u", 0},
		{"u/.ssh/config", "u", Code},
	} {
		m, ok := Lookup(tc.rel, tc.home)
		got := Class(0)
		if ok {
			got = m.Class
		}
		if got != tc.want {
			t.Errorf("Lookup(%q, %q) = %v, want %v", tc.rel, tc.home, got, tc.want)
		}
	}
}

// TestCatalogue lists every entry with what loads it and the version it
// was checked against (go test -v shows the list); each is complete.
func TestCatalogue(t *testing.T) {
	seen := map[string]bool{}
	for _, e := range Catalogue() {
		t.Logf("%-8s %-12s %-34s %-22s %s", e.Scope.String(), e.Class, e.Glob, e.Checked, e.Loads)
		key := e.Scope.String() + " " + e.Glob
		if seen[key] {
			t.Errorf("%s listed twice", key)
		}
		seen[key] = true
		if e.Agent == "" || e.Loads == "" || e.Checked == "" || e.Class == 0 || e.Scope == 0 {
			t.Errorf("%s: incomplete entry %+v", e.Glob, e)
		}
		if strings.HasPrefix(e.Glob, "/") || strings.Contains(e.Glob, "..") {
			t.Errorf("%s: not a relative glob", e.Glob)
		}
	}
	for _, d := range SandboxDirs() {
		if !slices.ContainsFunc(Catalogue(), func(e Entry) bool { return e.Scope == Project && strings.HasPrefix(e.Glob, d+"/") }) {
			t.Errorf("sandbox directory %s holds nothing catalogued", d)
		}
	}
	for _, f := range SandboxFiles() {
		if m, ok := Lookup(f, ""); !ok || m.Class != Code {
			t.Errorf("sandbox file %s is not a catalogued Code file", f)
		}
	}
}

func TestHiddenAreCode(t *testing.T) {
	for _, g := range Hidden() {
		name := strings.ReplaceAll(g, "**", "x")
		if m, ok := Lookup(name, ""); !ok || m.Class != Code {
			t.Errorf("hidden %s (%s) is not a catalogued Code file", g, name)
		}
	}
}

// TestREADMETable: the README's table of the catalogue lists every entry
// as TableRow renders it.
func TestREADMETable(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range Catalogue() {
		if row := TableRow(e); !strings.Contains(string(b), row+"\n") {
			t.Errorf("README.md lacks the row\n%s", row)
		}
	}
}
