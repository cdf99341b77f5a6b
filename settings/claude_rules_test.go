package settings

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
)

// TestImportClaudeRules converts a settings file holding every form of
// Claude Code's rule language (testdata/claude/rules.json). Norma reads
// the language itself, so each rule it can read comes out as written;
// each other rule is named in a note and either left out (an allow: Norma
// asks instead) or replaced by a stricter one (a deny or an ask on a tool
// whose argument Norma does not read becomes the rule on the whole tool).
// Nothing is dropped without a note, and no deny or ask is lost.
func TestImportClaudeRules(t *testing.T) {
	in, err := os.ReadFile("testdata/claude/rules.json")
	if err != nil {
		t.Fatal(err)
	}
	out, notes, err := ImportClaude(in, testWorkspace)
	if err != nil {
		t.Fatalf("ImportClaude: %v", err)
	}
	golden(t, "testdata/claude/rules.yaml.golden", out)
	golden(t, "testdata/claude/rules.notes.golden", []byte(strings.Join(notes, "\n")+"\n"))
	f, err := Parse("imported.yaml", out, ScopeWorkspace, testWorkspace)
	if err != nil {
		t.Fatalf("Parse(ImportClaude output): %v\n%s", err, out)
	}
	got := map[string][]string{}
	for _, r := range f.Rules {
		got[r.List] = append(got[r.List], r.Text)
	}
	var raw struct {
		Permissions map[string][]string `json:"permissions"`
	}
	if err := json.Unmarshal(in, &raw); err != nil {
		t.Fatal(err)
	}
	// Rules Norma cannot read, by hand: what must become of each.
	stricter := map[string]string{"Grep(password)": "Grep", "NotebookEdit(*.ipynb)": "NotebookEdit", "WebSearch(claude code)": "WebSearch"}
	leftOut := []string{"Glob(**/*.go)", "Bash(echo 'unterminated)", "Raed(./x)"}
	for _, list := range []string{"allow", "ask", "deny"} {
		for _, r := range raw.Permissions[list] {
			note := slices.ContainsFunc(notes, func(n string) bool { return strings.Contains(n, fmt.Sprintf("permissions.%s %q", list, r)) })
			switch {
			case stricter[r] != "":
				if !slices.Contains(got[list], stricter[r]) || !note {
					t.Errorf("%s %q: want %q in the output and a note; output %q", list, r, stricter[r], got[list])
				}
			case slices.Contains(leftOut, r):
				if slices.Contains(got[list], r) || !note {
					t.Errorf("%s %q: want it left out, with a note", list, r)
				}
			case !slices.Contains(got[list], r):
				t.Errorf("%s %q: missing from the output %q", list, r, got[list])
			}
		}
	}
}

// TestImportClaudeRuleErrors: a deny or ask rule of a file, command or
// domain that Norma cannot read fails the import, every one named: left
// out, it would let through what it stops.
func TestImportClaudeRuleErrors(t *testing.T) {
	in, err := os.ReadFile("testdata/claude/rules-error.json")
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := ImportClaude(in, testWorkspace)
	if err == nil {
		t.Fatalf("ImportClaude = %s, want an error", out)
	}
	golden(t, "testdata/claude/rules-error.err", []byte(err.Error()+"\n"))
	for _, r := range []string{"Read($HOME/.aws/**)", "WebFetch(example.com)", "Read(~bob/.ssh/**)", "Bash(echo 'unterminated)"} {
		if !strings.Contains(err.Error(), fmt.Sprintf("%q", r)) {
			t.Errorf("the error does not name %q: %v", r, err)
		}
	}
}
