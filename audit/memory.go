package audit

import (
	"cmp"
	"context"
	"slices"
	"sync"
)

// MemoryBackend is an in-memory [Backend] for tests. It is safe for
// concurrent use.
type MemoryBackend struct {
	wmu         sync.Mutex // the write lock: held across a write, not by readers
	mu          sync.Mutex
	rows        []Row
	checkpoints []StoredCheckpoint
}

// NewMemoryBackend returns an empty MemoryBackend.
func NewMemoryBackend() *MemoryBackend { return &MemoryBackend{} }

// AppendAudit implements [Backend].
func (m *MemoryBackend) AppendAudit(ctx context.Context, link func(Head) ([]Row, error)) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.wmu.Lock()
	defer m.wmu.Unlock()
	m.mu.Lock()
	defer m.mu.Unlock()
	var h Head
	if n := len(m.rows); n > 0 {
		h = Head{Seq: m.rows[n-1].Seq, Hash: m.rows[n-1].Hash}
	}
	rows, err := link(h)
	if err != nil {
		return err
	}
	for _, r := range rows {
		r.Body = slices.Clone(r.Body)
		m.rows = append(m.rows, r)
	}
	return nil
}

// ScanAudit implements [Backend].
func (m *MemoryBackend) ScanAudit(ctx context.Context, afterSeq, lastSeq int64, fn func(Row) error) error {
	m.mu.Lock()
	rows := slices.Clone(m.rows)
	m.mu.Unlock()
	for _, r := range rows {
		if r.Seq <= afterSeq || (lastSeq > 0 && r.Seq > lastSeq) {
			continue
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := fn(r); err != nil {
			return err
		}
	}
	return nil
}

// AddAuditCheckpoint implements [Backend].
func (m *MemoryBackend) AddAuditCheckpoint(ctx context.Context, origin string, sign func(Head, *StoredCheckpoint) (*StoredCheckpoint, error)) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.wmu.Lock()
	defer m.wmu.Unlock()
	m.mu.Lock()
	var h Head
	if n := len(m.rows); n > 0 {
		h = Head{Seq: m.rows[n-1].Seq, Hash: m.rows[n-1].Hash}
	}
	var latest *StoredCheckpoint
	for i := len(m.checkpoints) - 1; i >= 0; i-- {
		if c := m.checkpoints[i]; c.Origin == origin {
			c.Note = slices.Clone(c.Note)
			latest = &c
			break
		}
	}
	m.mu.Unlock()
	c, err := sign(h, latest)
	if err != nil || c == nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	c.Note = slices.Clone(c.Note)
	c.Origin = origin
	m.checkpoints = append(m.checkpoints, *c)
	slices.SortFunc(m.checkpoints, func(a, b StoredCheckpoint) int { return cmp.Compare(a.Size, b.Size) })
	return nil
}

// AuditCheckpoints implements [Backend].
func (m *MemoryBackend) AuditCheckpoints(ctx context.Context) ([]StoredCheckpoint, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.checkpoints), nil
}

// QueryAudit implements [Backend]; it filters on the indexed columns only.
func (m *MemoryBackend) QueryAudit(ctx context.Context, f Filter) ([]Row, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Row
	for _, r := range m.rows {
		if r.Seq <= f.AfterSeq ||
			(f.Plugin != "" && r.Plugin != f.Plugin) ||
			(f.Tool != "" && r.Tool != f.Tool) ||
			(f.Decision != "" && r.Decision != f.Decision) ||
			(f.Type != "" && r.Type != f.Type) ||
			(f.RunID != "" && r.RunID != f.RunID) ||
			(!f.Since.IsZero() && r.TimeNS < f.Since.UnixNano()) {
			continue
		}
		out = append(out, r)
	}
	if f.Limit > 0 && len(out) > f.Limit {
		if f.Newest {
			out = out[len(out)-f.Limit:]
		} else {
			out = out[:f.Limit]
		}
	}
	return slices.Clone(out), nil
}

// Tamper replaces the body of event seq, for tests of Verify.
func (m *MemoryBackend) Tamper(seq int64, body []byte) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := range m.rows {
		if m.rows[i].Seq == seq {
			m.rows[i].Body = slices.Clone(body)
			return true
		}
	}
	return false
}

// Drop deletes event seq, for tests of Verify.
func (m *MemoryBackend) Drop(seq int64) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := range m.rows {
		if m.rows[i].Seq == seq {
			m.rows = slices.Delete(m.rows, i, i+1)
			return true
		}
	}
	return false
}
