package settings

import (
	"fmt"
	"slices"
	"strings"

	"github.com/norma-run/norma/internal/suggest"
	"github.com/norma-run/norma/policy"
)

// toolNames are the tool names a permission rule may name, for "did you
// mean": Norma's built-in tools (the catalogue of package tool/builtin,
// which settings does not import: that would link the gate and the
// sandbox into every reader of a settings file; toolnames_test.go checks
// the list against it), then Claude Code's own tools, which `norma hook
// claude-code` decides by the rules of these files (door/agenthook's
// tables, checked by its tests). The path, command and domain rules'
// tools come first: of equally close names, the first is suggested.
var toolNames = []string{
	// Rules with an argument pattern (policy.CheckRule).
	"Read", "Write", "Edit", "Bash", "WebFetch",
	// Norma's other built-in tools.
	"MultiEdit", "LS", "Glob", "Grep", "WebSearch", "TodoWrite", "AskUser",
	"EnterPlanMode", "ExitPlanMode", "Memory", "Skill", "SearchExtraTools",
	"ExecuteExtraTool", "TaskList", "TaskOutput", "TaskStop", "Monitor",
	"PtyOpen", "PtySend", "PtyRead", "PtyResize", "PtyClose",
	// Claude Code's tools Norma has no built-in of the name, current and
	// former (a rule written for an older Claude Code still names one).
	"NotebookEdit", "NotebookRead", "AskUserQuestion", "BashOutput", "KillShell",
	"KillBash", "TaskCreate", "TaskGet", "TaskUpdate", "ListMcpResourcesTool",
	"ReadMcpResourceTool", "Agent", "Task", "SlashCommand", "LSP",
}

// checkToolName reports a rule whose tool name is a likely misspelling of
// a known tool's ("Raed(./x/**)", "Wirte", "bash"): such a rule matches no
// call, so a deny would protect nothing and an allow would never apply.
// Plugin tools (mcp__SERVER__TOOL) are never unknown; a name far from
// every known one is left alone (another agent's tool, a tool of a later
// Claude Code), as is a name policy.CheckRule refuses for its form.
func checkToolName(text string) error {
	name, _, _ := strings.Cut(text, "(")
	name = strings.TrimSpace(name)
	if name == "" || strings.HasPrefix(name, "mcp__") || slices.Contains(toolNames, name) {
		return nil
	}
	for _, r := range name {
		if !(r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return nil
		}
	}
	if s := suggest.Closest(name, toolNames); s != "" {
		return fmt.Errorf("unknown tool %q (did you mean %q?)", name, s)
	}
	return nil
}

// checkRule reports why text is not a permission rule: a misspelt tool
// name (checkToolName), else [policy.CheckRule]'s reason.
func checkRule(text string) error {
	if err := checkToolName(text); err != nil {
		return err
	}
	return policy.CheckRule(text)
}
