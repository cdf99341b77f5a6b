package broker

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"
)

// errUpstreamTimeout is the cause of a tunnel's context when an upstream
// exchange outlived Limits.UpstreamTimeout.
var errUpstreamTimeout = errors.New("broker: upstream timed out")

// tunnel is one TLS-terminated CONNECT tunnel. Its requests come one at a
// time (HTTP/1.1 on one connection: newServer never negotiates HTTP/2,
// which would serve them concurrently), so one timer, armed for each upstream
// exchange and reused, bounds them all: a request's context is the
// server's (canceled when the plugin goes away), a child of the tunnel's
// context, which the timer cancels. A per-request context.WithTimeout
// costs a context, a timer and their registration for every request.
//
// A timed-out exchange ends the tunnel: the plugin gets its 504 (or, in
// the middle of a body, a broken connection) and the connection is closed
// after that response, since every later request's context would be
// canceled too.
type tunnel struct {
	origin string // the CONNECT target, normalized
	srv    *http.Server
	cancel context.CancelCauseFunc // of the tunnel's context

	mu      sync.Mutex
	timer   *time.Timer
	armed   bool
	expired bool
}

// arm starts the deadline of one upstream exchange.
func (t *tunnel) arm(d time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.armed = true
	if t.timer == nil {
		t.timer = time.AfterFunc(d, t.expire)
		return
	}
	t.timer.Reset(d)
}

// disarm ends the exchange's deadline; once it returns, expire cancels
// nothing.
func (t *tunnel) disarm() {
	t.mu.Lock()
	t.armed = false
	t.mu.Unlock()
	t.timer.Stop()
}

func (t *tunnel) expire() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.armed {
		return // disarmed while the timer fired
	}
	t.expired = true
	t.cancel(errUpstreamTimeout)
}

// done ends the tunnel after the current response when its deadline
// expired.
func (t *tunnel) done() {
	t.mu.Lock()
	expired := t.expired
	t.mu.Unlock()
	if expired {
		t.srv.SetKeepAlivesEnabled(false)
	}
}

// stop releases the timer once the tunnel is over.
func (t *tunnel) stop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.armed = false
	if t.timer != nil {
		t.timer.Stop()
	}
}
