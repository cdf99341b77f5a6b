package capability

// Reason codes of `norma audit verify` (package audit): why the audit log
// does not verify. They follow the rules of the codes in capability.go:
// stable, never renamed.
const (
	// ReasonAuditChainBroken: an event's link does not match
	// sha256(previous hash || event), or a sequence number is missing in
	// the middle of the chain.
	ReasonAuditChainBroken Reason = "AUDIT_CHAIN_BROKEN"
	// ReasonAuditEventsMissing: a signed checkpoint covers more events than
	// the log holds: the newest events were deleted (or an older copy of
	// the database was put back).
	ReasonAuditEventsMissing Reason = "AUDIT_EVENTS_MISSING"
	// ReasonAuditCheckpointMismatch: the chain hash at a checkpoint's size
	// differs from the signed one: events it covers were rewritten and the
	// chain recomputed.
	ReasonAuditCheckpointMismatch Reason = "AUDIT_CHECKPOINT_MISMATCH"
	// ReasonAuditCheckpointInvalid: a checkpoint is malformed, names
	// another log, or is not signed by the state directory's audit key.
	ReasonAuditCheckpointInvalid Reason = "AUDIT_CHECKPOINT_INVALID"
	// ReasonAuditCheckpointMissing: the audit key exists, so checkpoints
	// were written, but none is stored: they were deleted.
	ReasonAuditCheckpointMissing Reason = "AUDIT_CHECKPOINT_MISSING"
)
