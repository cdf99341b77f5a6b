package gate

import (
	"context"
	"slices"
	"sync"

	"github.com/norma-run/norma/audit"
)

// MemorySink is an in-memory audit.Sink for tests and benchmarks. It keeps
// every event; Fail makes it refuse events. Safe for concurrent use.
type MemorySink struct {
	// Max bounds the events kept (the oldest are kept); zero keeps all.
	// Count still counts every event.
	Max int

	mu     sync.Mutex
	events []audit.Event
	count  int
	fail   error
}

var _ audit.Sink = (*MemorySink)(nil)

// Record implements audit.Sink.
func (m *MemorySink) Record(ctx context.Context, e audit.Event) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail != nil {
		return m.fail
	}
	m.count++
	if m.Max == 0 || len(m.events) < m.Max {
		m.events = append(m.events, e)
	}
	return nil
}

// Count returns the number of events recorded.
func (m *MemorySink) Count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.count
}

// Fail makes every later Record return err (nil restores success).
func (m *MemorySink) Fail(err error) {
	m.mu.Lock()
	m.fail = err
	m.mu.Unlock()
}

// Events returns a copy of the recorded events.
func (m *MemorySink) Events() []audit.Event {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.events)
}

// Reset forgets the recorded events.
func (m *MemorySink) Reset() {
	m.mu.Lock()
	m.events, m.count = m.events[:0], 0
	m.mu.Unlock()
}
