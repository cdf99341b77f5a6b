// Package gate is the one door to every tool: [Gate.Execute] takes a tool
// call from the model and runs it through exactly these steps, in order, and
// nothing else in Norma can reach a handler (the gate holds the registry's
// only tool.Dispatcher):
//
//  1. lookup in the caller's registry view (run + principal chain); an
//     unknown, hidden or not-yet-unlocked name is TOOL_UNKNOWN;
//  2. strict decoding (one JSON value, UTF-8, no duplicate keys, bounded
//     size and depth) and JSON Schema 2020-12 validation with formats
//     asserted and the compiled schema cached per registry entry; failures
//     are SCHEMA_INVALID naming the keyword (e.g. /properties/path/pattern)
//     without repeating the value; raw-input tools parse first;
//  3. policy: the tool's own judgment, permission rules matched on names
//     and on the normalized arguments (paths resolved inside the workspace,
//     URLs normalized, shell commands parsed with mvdan.cc/sh into every
//     simple command and redirection, wrappers such as env, sudo, nice,
//     timeout, xargs, find -exec, eval and sh -c unwrapped), the permission
//     mode, and the capability decision of the plugin's policy (a
//     policy.Set) for every request. Tool hard-deny, requests that cannot be
//     normalized and deny rules win over everything, bypass included; plan
//     denies mutating calls; capability denials and a plugin's own per-action
//     approvals stand in every mode; a command whose effect cannot be known
//     is never allowed; dontAsk turns every ask into MODE_DENIED;
//  4. approval, bound to approval.HashAction of the exact action (plugin,
//     version, manifest digest, tool, canonical input, run id, workspace
//     identity); any error, a missing approver or a ticket for another
//     action denies;
//  5. PreToolUse hooks: the first block wins (HOOK_BLOCKED), a failing,
//     panicking or hanging hook denies (HOOK_FAILED), and a rewrite goes back
//     through steps 2–4; the stricter decision stands and a rewrite that
//     would reach a request the original did not make is
//     HOOK_REWRITE_WIDENED;
//  6. the call, after the ledger (Options.Ledger) claimed the tool_use for
//     this one execution (else TOOL_INTERRUPTED or TOOL_ALREADY_RAN, and
//     STATE_UNAVAILABLE when it fails) and a tool_call_started audit event
//     that must be durable (else AUDIT_UNAVAILABLE), on its own goroutine with a deadline, panic
//     recovery (TOOL_PANIC), cancellation (CANCELED) and timeout (TIMEOUT;
//     a handler that ignores its context is abandoned, not waited for);
//  7. output capture: secrets redacted (Options.Redactor: the run's vault
//     values and provider key, and known token formats; one
//     output_redacted audit event says what was masked), marker-like text
//     escaped, a head cap (30,000 characters by default), the full output
//     spilled to a file named by its sha256 with a sidecar record, and
//     retention by age and size. The output streams of the processes a
//     call runs or starts (through its Env.Exec) are redacted as they
//     arrive, so a secret split across reads is caught too;
//  8. PostToolUse or PostToolUseFailure hooks;
//  9. one final audit event: tool_call_finished, or capability_decision for
//     a call that was refused before it ran.
//
// Every path ends in exactly one [Result] for the tool_use id.
// [Gate.ExecuteBatch] runs the calls of one turn: consecutive read-only,
// concurrency-safe calls in parallel (bounded), every other call alone, in
// order. [Gate.ExecuteExtra] is the deferred-tool path: it unlocks a
// deferred tool for the run, then calls Execute.
//
// [Gate.Explain] runs steps 1 to 3 of the same pipeline (and step 5, the
// PreToolUse hooks, for a call that needs no approval) and stops before
// approval, the call or an audit event: it is how `norma
// policy explain` (and every door that asks "what would a run do?")
// answers, so the answer cannot drift from what Execute does. The steps
// live one function each: lookup, check (schema, then decide: declare,
// capability, harness), approve, preHooks, started, call, output,
// postHooks and finish. Permission rules are policy.RuleSet and shell
// command analysis is internal/shellcmd; the gate calls them.
//
// What the gate does not do: it does not confine a handler that runs code
// in-process beyond the capabilities in its Env (the OS sandbox does); it
// cannot stop a handler goroutine that ignores its context; the Bash rules
// see what a command line says, not what a script file it runs will do.
package gate
