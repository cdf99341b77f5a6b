// Package audit is Norma's tamper-evident decision log.
//
// Every event (a capability decision, an approval state change, a tool call,
// a plugin lifecycle change) is redacted, encoded as RFC 8785 canonical JSON
// and appended to a hash chain: event n carries
//
//	hash_n = sha256(hash_{n-1} || canonical_json(event_n))
//
// with hash_0 = 32 zero bytes, and a sequence number that has no gaps.
// [Log.Verify] recomputes the chain and reports the first broken link.
//
// A [Log] group-commits: many goroutines call [Log.Record] at once, one
// goroutine writes whatever is waiting in a single transaction, and every
// caller returns only after the transaction holding its event is durable.
// The chain head is read inside that transaction, so several processes
// (a run and `norma approvals approve`) can append to one database.
//
// The chain alone does not stop a writer with access to the database
// file from deleting the newest events or rewriting the chain from some
// point on and recomputing it: it has no key. Signed checkpoints do
// (checkpoint.go): a [Checkpointer] signs "n events, chain hash hash_n"
// with an ed25519 key kept outside the database, as a signed note in the
// transparency-log checkpoint format, whenever a Log with one is closed;
// [VerifyWith] fails when events a checkpoint covers are missing
// ([capability.ReasonAuditEventsMissing]) or differ
// ([capability.ReasonAuditCheckpointMismatch]). A checkpoint is only
// signed over a head that extends the newest one.
//
// Never in the log: secret values, Authorization or Cookie headers, signed
// URLs, file contents, message bodies. Callers put a hash of a target that
// could hold personal data in [Event.TargetHash] (see [HashTarget]); every
// string is passed through the configured [Redactor] and bounded in length
// before it is encoded.
//
// Storage is a [Backend]; the SQLite implementation lives in package store,
// and [NewMemory] returns a Log over an in-memory backend for tests.
package audit
