package capability

// Reason codes of the agent session loop (package agent) and `norma run`.
// They follow the rules of the codes in capability.go: stable, never
// renamed.
const (
	// ReasonRunIDInvalid: a run id is not of the form the state directory
	// accepts (letters, digits, '-' and '_', 1 to 64 characters, starting
	// with a letter or digit); nothing is read or written for it.
	ReasonRunIDInvalid Reason = "RUN_ID_INVALID"
	// ReasonStateUnavailable: the run's state file could not be read or
	// written; the session stops rather than continue without persistence.
	ReasonStateUnavailable Reason = "STATE_UNAVAILABLE"
	// ReasonStateCorrupt: the run's state file does not decode, belongs to
	// another run or has an unknown version.
	ReasonStateCorrupt Reason = "STATE_CORRUPT"
	// ReasonSessionMaxTurns: the session reached its limit of model turns.
	ReasonSessionMaxTurns Reason = "SESSION_MAX_TURNS"
	// ReasonSessionMaxTokens: the session reached its token limit.
	ReasonSessionMaxTokens Reason = "SESSION_MAX_TOKENS"
	// ReasonSessionTimeLimit: the session reached its wall-time limit.
	ReasonSessionTimeLimit Reason = "SESSION_TIME_LIMIT"
	// ReasonSessionBudget: the session reached its cost budget.
	ReasonSessionBudget Reason = "SESSION_BUDGET_EXCEEDED"
	// ReasonSessionHalted: a hook stopped the session (continue:false) or
	// blocked the user prompt.
	ReasonSessionHalted Reason = "SESSION_HALTED"
	// ReasonProviderFailed: the model provider failed a turn.
	ReasonProviderFailed Reason = "PROVIDER_FAILED"
	// ReasonToolResultUnpaired: a tool_use did not get exactly one
	// tool_result; the session stops (a broken invariant, never expected).
	ReasonToolResultUnpaired Reason = "TOOL_RESULT_UNPAIRED"
	// ReasonToolInterrupted: the run stopped (a crash) after a tool call was
	// handed to the gate and before its result was recorded; on resume the
	// call is answered with this error, never run a second time.
	ReasonToolInterrupted Reason = "TOOL_INTERRUPTED"
	// ReasonToolAlreadyRan: the run's ledger records that this tool_use
	// already ran to the end (a resume, or another process, reached it
	// again); it is answered with this error, never run a second time. The
	// ledger keeps the outcome and the digest of the result, not the
	// output.
	ReasonToolAlreadyRan Reason = "TOOL_ALREADY_RAN"
	// ReasonRunLocked: another live process holds the run (`norma run` or
	// `norma run --resume` of the same run id); nothing of the run is read
	// or written. The error names the holder (host, pid, since when).
	ReasonRunLocked Reason = "RUN_LOCKED"
	// ReasonApprovalPending: a call waits for a human decision recorded
	// out of band (`norma approvals approve ID`); the run stops and
	// `norma run --resume RUN` runs the call once it is decided.
	ReasonApprovalPending Reason = "APPROVAL_PENDING"
	// ReasonSubagentWidened: a Task call asked for a tool its caller cannot
	// use; a subagent is never wider than its parent.
	ReasonSubagentWidened Reason = "SUBAGENT_WIDENED"
	// ReasonSubagentDepth: a Task call would nest subagents deeper than the
	// session allows.
	ReasonSubagentDepth Reason = "SUBAGENT_DEPTH"
)
