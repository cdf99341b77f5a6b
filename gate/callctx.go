package gate

import (
	"context"
	"sync"
	"time"
)

// callCtx is the context a handler runs with: its parent's values, the
// earlier of the parent's deadline and the call's, and a Done channel the
// gate closes when the call ends, times out or the parent is canceled.
// Unlike context.WithTimeout it does not register with the parent nor start
// a timer of its own: the gate's select watches the parent and a pooled
// timer, which keeps the per-call cost low. Its Done channel is made the
// first time it is asked for: most handlers never ask.
type callCtx struct {
	parent   context.Context
	deadline time.Time
	// parentFirst: the parent's deadline comes first, so reaching it is
	// the caller's cancellation, not the call's timeout.
	parentFirst bool

	mu   sync.Mutex
	done chan struct{} // nil until Done or end
	err  error
}

func newCallCtx(parent context.Context, deadline time.Time) *callCtx {
	c := &callCtx{parent: parent, deadline: deadline}
	if d, ok := parent.Deadline(); ok && !d.After(deadline) {
		c.deadline, c.parentFirst = d, true
	}
	return c
}

func (c *callCtx) Deadline() (time.Time, bool) { return c.deadline, true }
func (c *callCtx) Value(key any) any           { return c.parent.Value(key) }

func (c *callCtx) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done == nil {
		c.done = make(chan struct{})
		if c.err != nil {
			close(c.done)
		}
	}
	return c.done
}

func (c *callCtx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// end closes Done with err; later calls do nothing.
func (c *callCtx) end(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		c.err = err
		if c.done != nil {
			close(c.done)
		}
	}
}

var timerPool = sync.Pool{New: func() any {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return t
}}

func getTimer(d time.Duration) *time.Timer {
	t := timerPool.Get().(*time.Timer)
	t.Reset(d)
	return t
}

// putTimer stops t and returns it to the pool. Since Go 1.23 a stopped
// timer's channel holds no stale value, so Reset after Get is safe.
func putTimer(t *time.Timer) {
	t.Stop()
	timerPool.Put(t)
}
