// Package agent is Norma's session loop and its embedding API: a
// conversation with a model whose every tool call goes through one
// execution gate.
//
// # Embedding
//
// [NewSession] takes functional options — provider ([WithProvider]), tools
// ([WithTools], [WithDeferredTools]), plugins ([WithPlugins]), policy
// layers ([WithPolicy], [WithRules], [WithMode]), hooks ([WithHooks]),
// approvals ([WithApprover], [WithApprovalService]), audit ([WithAudit]),
// persistence ([WithStateDir], [WithResume]) and limits ([WithLimits]).
// Functional options rather than an options struct (STYLE.md prefers
// structs) because the API is public and grows: each option validates its
// own argument and new ones do not break callers. The API lives in package
// agent, not in a root package, so that the import graph stays
// cmd → agent → gate and nothing imports the module root.
//
// Nothing here reaches a tool handler except through the gate: tools are
// registered into a registry the session creates, whose only dispatcher the
// gate claims, and the session has no method that calls a tool.
//
// # One turn
//
// The system prompt is the base prompt, a fixed notice that tool results
// are data, and the prompts of the tools the model can call now; tool output
// never enters it. The user prompt passes the UserPromptSubmit hooks (a block
// or continue:false ends the run as halted). Each model turn's tool_use
// blocks go to [gate.Gate.ExecuteBatch] — parallel where the gate allows —
// and the session checks that it got exactly one result per tool_use, in
// order, with its id (else TOOL_RESULT_UNPAIRED). Results go back as
// tool_result blocks framed by "[norma:tool-output ...]" and
// "[norma:end-tool-output]" lines; the gate escapes "[norma:" in tool output,
// so a tool cannot forge the frame. Nothing in this package reads tool
// output for instructions: the permission mode, the unlock set and
// approvals change only through the embedding program's calls
// ([Session.SetMode], [Session.Unlock], the approver).
//
// The loop ends when the model answers without tool calls (then Stop hooks
// run; a block makes the model go on, at most MaxStopContinuations times;
// continue:false halts), or at a limit: turns, tokens, wall time, cost
// (SESSION_MAX_TURNS, SESSION_MAX_TOKENS, SESSION_TIME_LIMIT,
// SESSION_BUDGET_EXCEEDED). SessionStart and SessionEnd hooks fire around
// the run, SessionEnd also on cancellation and error.
//
// # Persistence and resume
//
// With a state directory, the run's [State] — conversation, usage, the
// registry view state (unlocked tools, subagent views), approval references,
// the todo list and any turn whose calls are not all answered — is written
// atomically to <dir>/runs/<run id>/state.json after every turn, and the
// assistant turn is durable before any of its calls runs. Run ids are
// validated ([ValidRunID]), so an id cannot name a path outside the runs
// directory. [WithResume] restores the run: a call that waited for an
// approval runs now (the gate redeems the approval granted meanwhile); a
// call that was running when the process died is answered with
// TOOL_INTERRUPTED and not run again, since it may have had its effect.
// Two things make this hold across processes, not only in the state file:
// the run's lock, which the process takes with its services
// (runtime.ServicesOptions.Run: a second process on the same store fails
// with RUN_LOCKED before it reads the state), and [WithLedger] has the gate claim each tool_use in the store
// before its handler runs, so a call that a killed process started — even
// one the state file still lists as waiting for approval — is answered
// TOOL_INTERRUPTED, and one that finished TOOL_ALREADY_RAN, never run
// again. An approval is bound to the workspace the call runs in
// ([WithWorkspace], approval.WorkspaceID): resuming in another directory
// asks again.
//
// # Subagents
//
// [WithSubagents] registers the Task tool. A subagent's registry view is
// derived from its caller's (user → agent → subagent:ID), narrowed to the
// tools the call names; naming a tool the caller cannot use is
// SUBAGENT_WIDENED, nesting deeper than allowed is SUBAGENT_DEPTH. Every
// call a subagent makes carries the whole principal chain to the gate,
// which looks the tool up in the chain's view (a tool hidden from any
// ancestor is TOOL_UNKNOWN), decides it with the tool's plugin policy (a
// plugin's grant binds whoever calls it: no confused deputy) and audits the
// chain as the event's principal. Subagents share the session's token,
// cost and time budget.
//
// What this package does not do: it does not confine tool handlers (the
// gate, the guards and the OS sandbox do); it cannot make a model obey; and
// a subagent's own conversation is not persisted (a crash during a Task
// call answers that call with TOOL_INTERRUPTED on resume).
package agent
