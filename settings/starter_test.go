package settings

import (
	"slices"
	"strings"
	"testing"

	"github.com/norma-run/norma/policy"
)

// TestStarter: the starter parses as a workspace file (and in every other
// scope), holds the rules its documentation promises, compiles for the
// gate, and says what each block is for.
func TestStarter(t *testing.T) {
	data := Starter()
	for _, scope := range []Scope{ScopeUser, ScopeWorkspace, ScopeLocal, ScopeFlag, ScopeManaged} {
		if _, err := Parse(WorkspaceFile, data, scope, testWorkspace); err != nil {
			t.Fatalf("Parse(starter, %s): %v", scope, err)
		}
	}
	f, err := Parse(WorkspaceFile, data, ScopeWorkspace, testWorkspace)
	if err != nil {
		t.Fatal(err)
	}
	st := Merge([]*File{f})
	rules := st.PolicyRules()
	if _, err := policy.CompileRules(rules); err != nil {
		t.Fatalf("CompileRules(starter): %v", err)
	}
	for _, r := range []string{"Read", "Grep", "Glob", "LS", "Bash(git status:*)", "Bash(git diff:*)", "Bash(git log:*)", "Bash(git show:*)", "Bash(ls:*)", "Bash(cat:*)", "Bash(pwd)"} {
		if !slices.Contains(rules.Allow, r) {
			t.Errorf("the starter does not allow %s", r)
		}
	}
	for _, r := range []string{"Write", "Edit", "MultiEdit"} {
		if !slices.Contains(rules.Ask, r) {
			t.Errorf("the starter does not ask for %s", r)
		}
	}
	// Nothing that changes files or reaches out is allowed, and no
	// broad Bash rule that would take the place of every command's own.
	for _, r := range rules.Allow {
		if strings.HasPrefix(r, "Write") || strings.HasPrefix(r, "Edit") || strings.HasPrefix(r, "WebFetch") || r == "Bash" || strings.HasPrefix(r, "mcp__") {
			t.Errorf("the starter allows %s", r)
		}
	}
	if st.DefaultMode != "default" || len(st.Hooks) != 0 || st.Network != nil || len(st.Env) != 0 {
		t.Errorf("the starter sets more than rules and the mode: %+v", st)
	}
	// Each block says what it is for.
	text := string(data)
	for _, w := range []string{"norma settings init", "# Without asking", "# Always ask", "# Never", "asks first", "defaultMode: default"} {
		if !strings.Contains(text, w) {
			t.Errorf("the starter lacks %q", w)
		}
	}
	if !slices.Equal(Starter(), data) {
		t.Error("Starter() differs between calls")
	}
	Starter()[0] = 'x'
	if Starter()[0] != '#' {
		t.Error("Starter() returns the embedded bytes themselves")
	}
}
