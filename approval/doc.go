// Package approval binds human approvals to one exact action and makes them
// durable.
//
// A [Request] names the action by its canonical hash ([HashAction]: sha256
// over the RFC 8785 JSON of plugin, version, manifest digest, tool, input,
// run id and the workspace's identity, [WorkspaceID]: an approval given in
// one workspace never matches the same call of the same run resumed in
// another, nor in the workspace moved, copied or recreated). [Service.Authorize] stores the request (committed before it
// returns or asks anyone), asks an [Approver], records the decision, and
// consumes the approval for exactly this execution, returning a [Ticket]
// whose idempotency key is derived from the approval id, the action hash
// and the use number, so a retry after a crash repeats the same key and the
// remote side sees one write, not two.
//
// Two interfaces, two roles. [Authorizer] (Authorize → Ticket, with the
// optional [Finisher]) is the one approver interface of Norma: the gate
// asks it about a tool call and the egress broker about a brokered
// request, and *Service implements it. [Approver] (Approve → Verdict) is
// who a Service asks to decide a stored, pending [Record]: a person at a
// terminal, --yes ([Auto]), or another process ([Waiter]).
//
// Everything fails closed with a reason code from package capability, in an
// *capability.Error: APPROVAL_STORE_UNAVAILABLE, APPROVAL_EXPIRED,
// APPROVAL_OTHER_RUN, APPROVAL_MISMATCH, APPROVAL_CONSUMED,
// APPROVAL_DENIED, and APPROVAL_REQUIRED when no approver can answer.
//
// Scopes: an approval with scope "once" is consumed by one execution; "run"
// and "session" let a later action with the same hash (which binds the run
// id and the workspace, so: in the same run and workspace) reuse it until
// it expires. Every state change is
// written to an audit [audit.Sink].
//
// Crash recovery: consuming an approval records a [Use] (approval id, use
// number, idempotency key) in the same transaction. The gate calls
// [Service.Finish] after the result is recorded. After a crash,
// [Service.Unfinished] returns the tickets whose execution may or may not
// have happened. Nothing re-runs them: the gate's [Ledger] answers such a
// tool_use TOOL_INTERRUPTED on resume; a remote side that saw the request
// deduplicates a retry on the ticket's idempotency key. A new Authorize
// for a consumed "once" approval asks again; it never re-uses the old one.
//
// Executions: a [Ledger] records each tool_use of a run (run id, tool_use
// id) as started before its handler is called and as finished after, with
// the result's digest; the gate claims every call there, so a tool_use
// runs at most once across resumes, crashes and processes, approved or
// not.
//
// Storage is a [Backend] and a [Ledger]; package store implements both on
// SQLite, [NewMemoryBackend] and [NewMemoryLedger] in memory.
package approval
