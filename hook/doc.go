// Package hook runs user hooks at the points of an agent session: before and
// after a tool call, on a user prompt, at session start and end, when the
// agent stops and when a subagent starts or stops.
//
// Hooks are Go callbacks ([Func]) or command hooks ([Command]) that speak the
// protocol of Claude Code hooks, so existing hook scripts work: the event is
// JSON on stdin (session_id, hook_event_name, tool_name, tool_input,
// tool_use_id, tool_response, prompt, ...); exit status 0 is success and
// stdout may carry a JSON [Output] (decision, reason, continue, stopReason,
// hookSpecificOutput.permissionDecision / updatedInput / additionalContext);
// exit status 2 blocks, with stderr as the reason; any other status is a
// failure. Commands run with a scrubbed environment (only what the operator
// configured, plus PATH and LANG), in their own process group that is killed
// on timeout, and a hook file that comes from the workspace runs only when
// its sha256 is recorded in a [TrustStore]; a changed file is untrusted
// again. The verified bytes are copied to a private file and that copy is
// executed, so the file cannot be swapped between the check and the run.
//
// A [Registry] keeps hooks per event in registration order and is safe for
// concurrent use. [Registry.Dispatch] runs the matching hooks one after the
// other, each with its own timeout and panic recovery. For the gating events
// (PreToolUse, UserPromptSubmit, Stop) the first block wins and a hook that
// fails, panics or times out denies: the [Outcome] says Failed with
// HOOK_FAILED, distinct from a block (HOOK_BLOCKED). For the other events a
// failure is reported in Outcome.Errors and the remaining hooks still run.
//
// A hook can make a decision stricter, never looser: "permissionDecision":
// "allow" is ignored, "ask" raises the call to approval, "deny" blocks. A
// PreToolUse rewrite (updatedInput) is returned to the gate, which validates
// and decides it again; see package gate.
//
// [Registry.RunSession] fires SessionStart, runs the session, and fires
// SessionEnd on every way out: normal end, cancellation, error and panic.
package hook
