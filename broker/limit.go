package broker

import (
	"net"
	"sync"
	"time"
)

// bucket is a token-bucket rate limiter. A nil bucket admits everything.
type bucket struct {
	mu     sync.Mutex
	rate   float64 // tokens per second
	burst  float64
	tokens float64
	last   time.Time
	now    func() time.Time
}

func newBucket(rate float64, burst int, now func() time.Time) *bucket {
	if rate <= 0 {
		return nil
	}
	b := &bucket{rate: rate, burst: float64(max(burst, 1)), now: now}
	b.tokens, b.last = b.burst, now()
	return b
}

func (b *bucket) allow() bool {
	if b == nil {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	t := b.now()
	b.tokens = min(b.burst, b.tokens+t.Sub(b.last).Seconds()*b.rate)
	b.last = t
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// limitListener admits at most cap(sem) open connections; extra ones are
// handed to reject (which must close them) without being served.
type limitListener struct {
	net.Listener
	sem    chan struct{}
	reject func(net.Conn)
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		select {
		case l.sem <- struct{}{}:
			return &limitConn{Conn: c, release: func() { <-l.sem }}, nil
		default:
			go l.reject(c)
		}
	}
}

type limitConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

// oneConnListener serves exactly one connection, then reports closed once
// that connection is closed, so http.Server.Serve returns.
type oneConnListener struct {
	conn net.Conn
	done chan struct{}
	once sync.Once
	used bool
	mu   sync.Mutex
}

func newOneConnListener(c net.Conn) *oneConnListener {
	l := &oneConnListener{done: make(chan struct{})}
	l.conn = &notifyConn{Conn: c, onClose: l.finish}
	return l
}

func (l *oneConnListener) finish() { l.once.Do(func() { close(l.done) }) }

func (l *oneConnListener) Accept() (net.Conn, error) {
	l.mu.Lock()
	if !l.used {
		l.used = true
		l.mu.Unlock()
		return l.conn, nil
	}
	l.mu.Unlock()
	<-l.done
	return nil, net.ErrClosed
}

func (l *oneConnListener) Close() error   { return nil }
func (l *oneConnListener) Addr() net.Addr { return l.conn.LocalAddr() }

type notifyConn struct {
	net.Conn
	once    sync.Once
	onClose func()
}

func (c *notifyConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.onClose)
	return err
}

// prefixConn replays bytes the HTTP server had already buffered before a
// CONNECT was hijacked (a pipelined TLS ClientHello).
type prefixConn struct {
	net.Conn
	prefix []byte
}

func (c *prefixConn) Read(p []byte) (int, error) {
	if len(c.prefix) > 0 {
		n := copy(p, c.prefix)
		c.prefix = c.prefix[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}
