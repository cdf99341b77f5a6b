package audit

import (
	"context"
	"time"
)

// HashSize is the size of a chain hash.
const HashSize = 32

// Head is the newest link of the chain: its sequence number (0 for an
// empty log) and hash (all zero for an empty log).
type Head struct {
	Seq  int64
	Hash [HashSize]byte
}

// Row is one stored event: the indexed columns, the canonical body that was
// hashed, and the chain hash.
type Row struct {
	Seq      int64
	TimeNS   int64
	Type     string
	RunID    string
	Plugin   string
	Tool     string
	Decision string
	Body     []byte
	Hash     [HashSize]byte
}

// Filter selects events for [Log.Query]. Zero fields do not constrain.
type Filter struct {
	Plugin   string
	Tool     string
	Decision string
	Type     string
	RunID    string
	Since    time.Time
	// AfterSeq returns only events with a larger sequence number.
	AfterSeq int64
	// Limit caps the result; zero means 1000.
	Limit int
	// Newest returns the newest Limit matches instead of the oldest. The
	// result is in sequence order either way.
	Newest bool
}

// Backend stores the chain. Implementations must be safe for concurrent
// use; package store provides SQLite, [NewMemory] an in-memory one.
type Backend interface {
	// AppendAudit takes the log's write lock (across processes for a
	// shared database), calls link with the current head, appends the rows
	// link returns in one transaction and returns after that transaction
	// is durable. An error from link aborts the transaction.
	AppendAudit(ctx context.Context, link func(head Head) ([]Row, error)) error
	// ScanAudit calls fn for every row with afterSeq < Seq <= lastSeq
	// (lastSeq <= 0: no upper bound) in sequence order. Row.Body is only
	// valid during the call. Several scans may run at once.
	ScanAudit(ctx context.Context, afterSeq, lastSeq int64, fn func(Row) error) error
	// QueryAudit returns the rows that match f, in sequence order.
	QueryAudit(ctx context.Context, f Filter) ([]Row, error)
	// AddAuditCheckpoint takes the log's write lock, calls sign with the
	// current head and the stored checkpoint of origin (the signing key's
	// log name, see [KeyOrigin]) of the largest size (nil when origin has
	// none), and stores the checkpoint sign returns (nil: none) in the
	// same transaction. sign may read the log (ScanAudit). Checkpoints are
	// keyed by origin and size: several state directories sharing one
	// store each sign their own.
	AddAuditCheckpoint(ctx context.Context, origin string, sign func(head Head, latest *StoredCheckpoint) (*StoredCheckpoint, error)) error
	// AuditCheckpoints returns the stored checkpoints of every origin,
	// smallest size first.
	AuditCheckpoints(ctx context.Context) ([]StoredCheckpoint, error)
}

// Follower is implemented by a backend that announces appends
// (PostgreSQL's LISTEN/NOTIFY), so that a tail or the team server's
// metrics read new events when there are some instead of polling hard:
// the channel receives the head's sequence number after each append by
// any process commits, and is closed when ctx ends or the backend stops
// announcing. Announcements may be missed or merged under load, so a
// follower reads every event after the last one it read (QueryAudit with
// AfterSeq) and keeps a slow poll as well.
type Follower interface {
	FollowAudit(ctx context.Context) (<-chan int64, error)
}
