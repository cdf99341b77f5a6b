package settings

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/norma-run/norma/tool/builtin"
)

// TestToolNamesCatalogue: every built-in tool is a known tool name, so a
// rule naming one is never taken for a typo. The list is written out in
// toolnames.go (settings does not import tool/builtin); this is what
// keeps it whole.
func TestToolNamesCatalogue(t *testing.T) {
	infos, err := builtin.Catalogue(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(infos) < 20 {
		t.Fatalf("the catalogue has %d tools", len(infos))
	}
	for _, i := range infos {
		if !slices.Contains(toolNames, i.Name) {
			t.Errorf("built-in tool %s is not in toolNames (toolnames.go): a rule naming it would be refused as a typo", i.Name)
		}
	}
	seen := map[string]bool{}
	for _, n := range toolNames {
		if seen[n] {
			t.Errorf("toolNames lists %s twice", n)
		}
		seen[n] = true
	}
}

// TestCheckToolName: a known name, a plugin tool and a name far from
// every known one pass; a likely misspelling is refused with the name it
// likely meant, whichever list and form the rule has.
func TestCheckToolName(t *testing.T) {
	for _, tt := range []struct {
		rule string
		want string // "" passes
	}{
		{"Read", ""},
		{"Read(./x/**)", ""},
		{"Bash(git status:*)", ""},
		{"NotebookEdit", ""},
		{"LSP", ""}, // Claude Code's, one edit from LS
		{"mcp__github__create_issue", ""},
		{"mcp__Raed", ""},
		{"mcp__github__*", ""},
		{"run_shell_command", ""}, // Gemini's
		{"FooBar", ""},
		{"Web*", ""}, // a wildcard: policy.CheckRule's to refuse
		{"", ""},
		{"Raed(./x/**)", `unknown tool "Raed" (did you mean "Read"?)`},
		{" Raed (./x/**)", `unknown tool "Raed" (did you mean "Read"?)`},
		{"Wirte", `unknown tool "Wirte" (did you mean "Write"?)`},
		{"bash", `unknown tool "bash" (did you mean "Bash"?)`},
		{"BASH(ls)", `unknown tool "BASH" (did you mean "Bash"?)`},
		{"WebFech(domain:example.com)", `unknown tool "WebFech" (did you mean "WebFetch"?)`},
		{"Globb", `unknown tool "Globb" (did you mean "Glob"?)`},
		{"TodoWirte", `unknown tool "TodoWirte" (did you mean "TodoWrite"?)`},
	} {
		got := ""
		if err := checkToolName(tt.rule); err != nil {
			got = err.Error()
		}
		if got != tt.want {
			t.Errorf("checkToolName(%q) = %q, want %q", tt.rule, got, tt.want)
		}
	}
}

// TestToolNameTypoEverywhere: a misspelt tool is refused by every reader
// and writer of rules: Parse (each list, at the rule's FILE:LINE:COL),
// the "always" writer of the local file, and the Claude Code importer,
// which leaves the rule out and says why.
func TestToolNameTypoEverywhere(t *testing.T) {
	for _, list := range []string{"allow", "ask", "deny"} {
		data := fmt.Sprintf("permissions:\n  %s:\n    - Read\n    - Wirte\n", list)
		_, err := Parse("s.yaml", []byte(data), ScopeWorkspace, testWorkspace)
		want := fmt.Sprintf(`s.yaml:4:7: permissions.%s[1]: "Wirte" is not a permission rule: unknown tool "Wirte" (did you mean "Write"?)`, list)
		if err == nil || err.Error() != want {
			t.Errorf("Parse(%s: Wirte) = %v, want %s", list, err, want)
		}
	}
	ws := t.TempDir()
	if err := AddLocalAllow(ws, "Raed(x)"); err == nil || !strings.Contains(err.Error(), `did you mean "Read"?`) {
		t.Errorf("AddLocalAllow(Raed(x)) = %v, want the suggestion", err)
	}
	out, notes, err := ImportClaude([]byte(`{"permissions":{"allow":["Read","Raed(x)"],"deny":["Wirte"]}}`), ws)
	if err != nil {
		t.Fatalf("ImportClaude: %v", err)
	}
	if strings.Contains(string(out), "Raed") || strings.Contains(string(out), "Wirte") {
		t.Errorf("ImportClaude kept a misspelt rule:\n%s", out)
	}
	joined := strings.Join(notes, "\n")
	for _, w := range []string{`permissions.allow "Raed(x)": not converted (unknown tool "Raed" (did you mean "Read"?))`, `permissions.deny "Wirte": not converted (unknown tool "Wirte" (did you mean "Write"?))`} {
		if !strings.Contains(joined, w) {
			t.Errorf("ImportClaude notes lack %q:\n%s", w, joined)
		}
	}
}
