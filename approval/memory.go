package approval

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// MemoryBackend is an in-memory [Backend] for tests. It is safe for
// concurrent use.
type MemoryBackend struct {
	mu   sync.Mutex
	recs map[string]Record
	uses []Use
	// fail, when set, makes every call return it ([SetFailure]).
	fail error
}

// NewMemoryBackend returns an empty MemoryBackend.
func NewMemoryBackend() *MemoryBackend { return &MemoryBackend{recs: map[string]Record{}} }

// SetFailure makes every later call fail with err (nil restores), for
// tests of APPROVAL_STORE_UNAVAILABLE.
func (m *MemoryBackend) SetFailure(err error) {
	m.mu.Lock()
	m.fail = err
	m.mu.Unlock()
}

func clone(r Record) Record {
	r.Principals = slices.Clone(r.Principals)
	return r
}

// CreateApproval implements [Backend].
func (m *MemoryBackend) CreateApproval(ctx context.Context, r Record) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail != nil {
		return m.fail
	}
	if _, ok := m.recs[r.ID]; ok {
		return fmt.Errorf("approval: id %q exists", r.ID)
	}
	m.recs[r.ID] = clone(r)
	return nil
}

// GetApproval implements [Backend].
func (m *MemoryBackend) GetApproval(ctx context.Context, id string) (Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail != nil {
		return Record{}, m.fail
	}
	r, ok := m.recs[id]
	if !ok {
		return Record{}, fmt.Errorf("%w: %q", ErrNotFound, id)
	}
	return clone(r), nil
}

// ListApprovals implements [Backend].
func (m *MemoryBackend) ListApprovals(ctx context.Context, f ListFilter) ([]Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail != nil {
		return nil, m.fail
	}
	var out []Record
	for _, r := range m.recs {
		if (f.State == "" || r.State == f.State) && (f.RunID == "" || r.RunID == f.RunID) &&
			(f.ActionHash == "" || r.ActionHash == f.ActionHash) {
			out = append(out, clone(r))
		}
	}
	slices.SortFunc(out, func(a, b Record) int {
		if c := b.Created.Compare(a.Created); c != 0 {
			return c
		}
		return strings.Compare(b.ID, a.ID)
	})
	limit := f.Limit
	if limit <= 0 {
		limit = 100
	}
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// UpdateApproval implements [Backend].
func (m *MemoryBackend) UpdateApproval(ctx context.Context, id string, fn func(*Record) (*Use, error)) (Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail != nil {
		return Record{}, m.fail
	}
	cur, ok := m.recs[id]
	if !ok {
		return Record{}, fmt.Errorf("%w: %q", ErrNotFound, id)
	}
	r := clone(cur)
	u, err := fn(&r)
	if err != nil {
		return Record{}, err
	}
	if u != nil {
		for _, x := range m.uses {
			if x.IdempotencyKey == u.IdempotencyKey {
				return Record{}, fmt.Errorf("approval: duplicate use %q", u.IdempotencyKey)
			}
		}
		m.uses = append(m.uses, *u)
	}
	m.recs[id] = clone(r)
	return r, nil
}

// FinishUse implements [Backend].
func (m *MemoryBackend) FinishUse(ctx context.Context, key string, at time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail != nil {
		return m.fail
	}
	for i := range m.uses {
		if m.uses[i].IdempotencyKey == key {
			if m.uses[i].Finished.IsZero() {
				m.uses[i].Finished = at
			}
			return nil
		}
	}
	return fmt.Errorf("%w: use %q", ErrNotFound, key)
}

// UnfinishedUses implements [Backend].
func (m *MemoryBackend) UnfinishedUses(ctx context.Context, runID string) ([]Use, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail != nil {
		return nil, m.fail
	}
	var out []Use
	for _, u := range m.uses {
		if u.RunID == runID && u.Finished.IsZero() {
			out = append(out, u)
		}
	}
	return out, nil
}

// MemoryLedger is an in-memory [Ledger] for tests. It is safe for
// concurrent use.
type MemoryLedger struct {
	mu   sync.Mutex
	runs map[[2]string]Execution
}

// NewMemoryLedger returns an empty MemoryLedger.
func NewMemoryLedger() *MemoryLedger { return &MemoryLedger{runs: map[[2]string]Execution{}} }

// BeginExecution implements [Ledger].
func (l *MemoryLedger) BeginExecution(_ context.Context, e Execution) (Execution, bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := [2]string{e.RunID, e.ToolUseID}
	if p, ok := l.runs[k]; ok {
		return p, false, nil
	}
	l.runs[k] = e
	return Execution{}, true, nil
}

// FinishExecution implements [Ledger].
func (l *MemoryLedger) FinishExecution(_ context.Context, e Execution) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := [2]string{e.RunID, e.ToolUseID}
	if _, ok := l.runs[k]; !ok {
		return fmt.Errorf("%w: execution %s/%s", ErrNotFound, e.RunID, e.ToolUseID)
	}
	l.runs[k] = e
	return nil
}
