package shell

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// ring is a bounded output buffer: it keeps the last len(buf) bytes of
// everything written and the total count, so a reader holding an offset
// learns how much it missed. Writes never block and never fail. It wakes
// every waiter on each write and on close.
type ring struct {
	mu     sync.Mutex
	buf    []byte
	total  int64 // bytes ever written
	closed bool
	wake   chan struct{} // closed and replaced on every write
}

func newRing(size int) *ring {
	return &ring{buf: make([]byte, size), wake: make(chan struct{})}
}

// Write appends p, dropping the oldest bytes beyond the capacity.
func (r *ring) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := len(p)
	size := len(r.buf)
	if len(p) > size {
		r.total += int64(len(p) - size)
		p = p[len(p)-size:]
	}
	for len(p) > 0 {
		at := int(r.total % int64(size))
		c := copy(r.buf[at:], p)
		r.total += int64(c)
		p = p[c:]
	}
	close(r.wake)
	r.wake = make(chan struct{})
	return n, nil
}

// closeWrites marks the end of output and wakes waiters.
func (r *ring) closeWrites() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.closed {
		r.closed = true
		close(r.wake)
		r.wake = make(chan struct{})
	}
}

// readFrom returns at most max bytes written at or after off, the offset
// after them, and how many bytes before them were dropped (off fell behind
// the capacity).
func (r *ring) readFrom(off int64, max int) (data []byte, next, dropped int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.readLocked(off, max)
}

func (r *ring) readLocked(off int64, max int) (data []byte, next, dropped int64) {
	size := int64(len(r.buf))
	oldest := max64(0, r.total-size)
	if off < oldest {
		dropped = oldest - off
		off = oldest
	}
	n := min(r.total-off, int64(max))
	data = make([]byte, 0, n)
	for i := int64(0); i < n; {
		at := (off + i) % size
		end := min(size, at+(n-i))
		data = append(data, r.buf[at:end]...)
		i += end - at
	}
	return data, off + n, dropped
}

// wait blocks until more than off bytes were written, the ring is closed,
// or ctx is done. It reports whether new data (or the close) arrived.
func (r *ring) wait(ctx context.Context, off int64) bool {
	for {
		r.mu.Lock()
		if r.total > off || r.closed {
			r.mu.Unlock()
			return true
		}
		w := r.wake
		r.mu.Unlock()
		select {
		case <-w:
		case <-ctx.Done():
			return false
		}
	}
}

// state returns the total and whether writes ended, with a channel closed
// at the next write or close.
func (r *ring) state() (total int64, closed bool, wake <-chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.total, r.closed, r.wake
}

func max64(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}

// headTail keeps the first head and the last tail bytes written to it and
// counts the rest: the bounded output of a foreground command.
type headTail struct {
	mu    sync.Mutex
	head  []byte
	limit int
	tail  *ring
	total int64
}

func newHeadTail(head, tail int) *headTail {
	return &headTail{limit: head, tail: newRing(tail)}
}

func (h *headTail) Write(p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := len(p)
	h.total += int64(n)
	if room := h.limit - len(h.head); room > 0 {
		c := min(room, len(p))
		h.head = append(h.head, p[:c]...)
		p = p[c:]
	}
	if len(p) > 0 {
		h.tail.Write(p)
	}
	return n, nil
}

// String returns the output, with a marker where bytes were omitted, as
// valid UTF-8.
func (h *headTail) String() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	tail, _, dropped := h.tail.readFrom(0, len(h.tail.buf))
	var b strings.Builder
	b.Write(h.head)
	if dropped > 0 {
		b.WriteString("\n[… ")
		b.WriteString(strconv.FormatInt(dropped, 10))
		b.WriteString(" bytes of output omitted …]\n")
	}
	b.Write(tail)
	return text(b.String())
}

// text makes output safe to hand to the model: valid UTF-8, no NUL.
func text(s string) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	return strings.ReplaceAll(s, "\x00", "\uFFFD")
}
