package capability

// Reason codes of the agent hook adapters (package agenthook: `norma hook`
// and the daemon answering Claude Code, Codex and Gemini CLI hooks). They
// follow the rules of the codes in capability.go: stable, never renamed.
const (
	// ReasonHookInputInvalid: an agent's hook input did not parse, or a
	// field the event needs is missing; the call is denied.
	ReasonHookInputInvalid Reason = "HOOK_INPUT_INVALID"
	// ReasonHookToolUnmapped: the agent's tool has no Norma counterpart and
	// no permission rule of the user's settings names it; it is denied
	// (fail closed) rather than allowed unseen.
	ReasonHookToolUnmapped Reason = "HOOK_TOOL_UNMAPPED"
	// ReasonHookDecideFailed: the decision could not be made (the
	// workspace's runtime did not open, the audit log refused the event,
	// the adapter panicked); the call is denied.
	ReasonHookDecideFailed Reason = "HOOK_DECIDE_FAILED"
	// ReasonHookSearchTooWide: an agent's search or listing (Grep, Glob,
	// LS) covers more files than Norma checks against the policy's denies
	// before the agent reads them; it is denied, and a narrower path
	// passes.
	ReasonHookSearchTooWide Reason = "HOOK_SEARCH_TOO_WIDE"
)
