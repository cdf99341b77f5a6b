package capability

// Reason codes of the definitions an agent starts by name: Claude Code's
// subagents (the Agent tool, formerly Task), skills (the Skill tool) and
// slash commands (the SlashCommand tool), decided by where the
// definition comes from (package agenthook, definitions.go). They follow
// the rules of the codes in capability.go: stable, never renamed.
const (
	// ReasonDefinitionUntrusted: the call starts a definition that a file
	// of the workspace (or of a project directory above it) holds —
	// .claude/agents/NAME.md, .claude/skills/NAME/, .claude/commands/NAME.md
	// — whose content the user has not accepted by digest (`norma hooks
	// trust`), or that changed since; what its frontmatter names (hooks,
	// MCP servers, !`command` lines) would run on the host. Denied.
	ReasonDefinitionUntrusted Reason = "DEFINITION_UNTRUSTED"
	// ReasonDefinitionUnknown: the call names a subagent, skill or command
	// that is neither built into the agent nor defined where Norma looks
	// (the workspace, the user's and the managed configuration, installed
	// plugins); Norma cannot see what it would run, so it is denied.
	ReasonDefinitionUnknown Reason = "DEFINITION_UNKNOWN"
)
