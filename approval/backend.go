package approval

import (
	"context"
	"time"
)

// ListFilter selects approvals. Zero fields do not constrain.
type ListFilter struct {
	State      State
	RunID      string
	ActionHash string
	// Limit caps the result; zero means 100. Newest first.
	Limit int
}

// Backend stores approvals and their uses. Implementations must be safe for
// concurrent use and for use by several processes on one database; every
// method returns only after its writes are durable. Package store
// implements it on SQLite, [NewMemoryBackend] in memory.
type Backend interface {
	// CreateApproval stores a new record; an existing id is an error.
	CreateApproval(ctx context.Context, r Record) error
	// GetApproval returns the record, or an error wrapping [ErrNotFound].
	GetApproval(ctx context.Context, id string) (Record, error)
	// ListApprovals returns matching records, newest first.
	ListApprovals(ctx context.Context, f ListFilter) ([]Record, error)
	// UpdateApproval runs fn on the current record inside one transaction
	// that excludes every other writer, stores the record fn leaves and, when
	// fn returns a non-nil Use, inserts it in the same transaction. An error
	// from fn rolls everything back and is returned unchanged.
	UpdateApproval(ctx context.Context, id string, fn func(r *Record) (*Use, error)) (Record, error)
	// FinishUse marks the use with this idempotency key finished.
	FinishUse(ctx context.Context, key string, at time.Time) error
	// UnfinishedUses returns the consumed, unfinished uses of a run.
	UnfinishedUses(ctx context.Context, runID string) ([]Use, error)
}
