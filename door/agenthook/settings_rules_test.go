package agenthook

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/norma-run/norma/settings"
)

// TestClaudeToolsAreRuleNames: a permission rule naming any of Claude
// Code's tools the hook knows (mapped, inert and launching) parses:
// settings refuses a tool name that looks like a misspelling of a known
// one, and none of these may be taken for one. (Gemini CLI's mapped tools
// are decided by their Norma names: a rule "glob" is refused with "did
// you mean Glob", which is the rule that applies to them.)
func TestClaudeToolsAreRuleNames(t *testing.T) {
	var names []string
	names = slices.AppendSeq(names, maps.Keys(claudeTools))
	names = slices.AppendSeq(names, maps.Keys(claudeInert))
	names = slices.AppendSeq(names, maps.Keys(claudeLaunches))
	slices.Sort(names)
	if len(names) < 20 {
		t.Fatalf("only %d tool names", len(names))
	}
	for _, n := range names {
		data := fmt.Sprintf("permissions:\n  allow: [%q]\n  deny: [%q]\n", n, n)
		if _, err := settings.Parse("s.yaml", []byte(data), settings.ScopeUser, "/ws"); err != nil {
			t.Errorf("a rule naming %s: %v", n, err)
		}
	}
}
