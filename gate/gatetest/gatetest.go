// Package gatetest provides test doubles for package gate: an in-memory
// audit sink and in-memory approvers ([approval.Authorizer]s). Production code must not import it
// (internal/deptest enforces this).
package gatetest

import (
	"context"
	"slices"
	"strconv"
	"sync"

	"github.com/norma-run/norma/approval"
	"github.com/norma-run/norma/audit"
	"github.com/norma-run/norma/capability"
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

// MemoryApprover is an in-memory [approval.Authorizer] for tests: it
// grants the action hashes it was told to grant (or everything, when
// GrantAll) and denies the rest. It records every request. Safe for
// concurrent use.
type MemoryApprover struct {
	mu       sync.Mutex
	grantAll bool
	granted  map[string]bool
	requests []approval.Request
	n        int
}

// NewMemoryApprover returns a MemoryApprover that grants all requests when
// grantAll is true and none otherwise.
func NewMemoryApprover(grantAll bool) *MemoryApprover {
	return &MemoryApprover{grantAll: grantAll, granted: map[string]bool{}}
}

// Grant pre-approves one action hash.
func (m *MemoryApprover) Grant(actionHash string) {
	m.mu.Lock()
	m.granted[actionHash] = true
	m.mu.Unlock()
}

// Requests returns a copy of the requests seen so far.
func (m *MemoryApprover) Requests() []approval.Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]approval.Request(nil), m.requests...)
}

// Authorize implements [approval.Authorizer].
func (m *MemoryApprover) Authorize(ctx context.Context, r approval.Request) (approval.Ticket, error) {
	if err := ctx.Err(); err != nil {
		return approval.Ticket{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.requests = append(m.requests, r)
	if !m.grantAll && !m.granted[r.ActionHash] {
		return approval.Ticket{}, &capability.Error{Decision: capability.Decision{Mode: capability.Deny, Reason: capability.ReasonApprovalDenied, Layer: "approval"}, Detail: "not approved"}
	}
	m.n++
	id := "mem_" + strconv.Itoa(m.n)
	return approval.Ticket{ApprovalID: id, ActionHash: r.ActionHash, Use: 1,
		IdempotencyKey: approval.IdempotencyKey(id, r.ActionHash, 1)}, nil
}

// AuthorizerFunc adapts a function to [approval.Authorizer], for tests.
type AuthorizerFunc func(ctx context.Context, r approval.Request) (approval.Ticket, error)

// Authorize calls f.
func (f AuthorizerFunc) Authorize(ctx context.Context, r approval.Request) (approval.Ticket, error) {
	return f(ctx, r)
}

var (
	_ approval.Authorizer = (*MemoryApprover)(nil)
	_ approval.Authorizer = AuthorizerFunc(nil)
)
