package capability

// Reason codes of the tool contract, the registry, hooks and the execution
// gate (packages tool, hook and gate). They follow the rules of the codes in
// capability.go: stable, never renamed.
const (
	// ReasonToolDenied: the tool's own CheckPermissions refused the call (a
	// hard deny); it wins over every rule and mode, bypass included.
	ReasonToolDenied Reason = "TOOL_DENIED"
	// ReasonToolError: the tool ran and reported a failure.
	ReasonToolError Reason = "TOOL_ERROR"
	// ReasonCommandUnparseable: a shell command could not be parsed, or uses
	// a construct whose effect cannot be known before it runs (eval, a
	// computed command name); it is never allowed by a rule.
	ReasonCommandUnparseable Reason = "COMMAND_UNPARSEABLE"
	// ReasonRewriteWidened: a PreToolUse hook rewrote the input so that the
	// call would reach a resource the original input did not.
	ReasonRewriteWidened Reason = "HOOK_REWRITE_WIDENED"
	// ReasonHookUntrusted: a command hook from the workspace is not trusted,
	// or its content changed since it was trusted.
	ReasonHookUntrusted Reason = "HOOK_UNTRUSTED"
	// ReasonAuditUnavailable: the audit sink refused the event that must be
	// durable before a tool runs; the call is refused.
	ReasonAuditUnavailable Reason = "AUDIT_UNAVAILABLE"
	// ReasonOutputSpillFailed: the full output of a call could not be
	// written to the spill directory; the result carries the head only.
	ReasonOutputSpillFailed Reason = "OUTPUT_SPILL_FAILED"
)

// Reason codes of the agent-file floor (package agentfiles, applied by the
// gate to every file write it decides).
const (
	// ReasonAgentFileProtected: the call writes a file that an agent or a
	// tool loads as code (.claude/settings*.json, .claude/agents/**,
	// .git/config, .codex/**, ...), by the name given or by the name its
	// symbolic links resolve to; no rule, grant or mode allows it.
	ReasonAgentFileProtected Reason = "AGENT_FILE_PROTECTED"
	// ReasonInstructionFile: the call writes an instruction file that
	// steers every later session (CLAUDE.md, AGENTS.md, GEMINI.md); it
	// needs approval in every mode.
	ReasonInstructionFile Reason = "INSTRUCTION_FILE_WRITE"
)
