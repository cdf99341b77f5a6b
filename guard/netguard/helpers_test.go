package netguard

import (
	"context"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/norma-run/norma/capability"
)

// fakeResolver answers from a table and counts lookups. When seq is set for
// a host, the n-th lookup of that host gets seq[host][min(n, len-1)], which
// models a DNS server that changes its answer (rebinding).
type fakeResolver struct {
	mu      sync.Mutex
	answers map[string][]netip.Addr
	seq     map[string][][]netip.Addr
	lookups map[string]int
}

func newResolver(answers map[string][]string) *fakeResolver {
	r := &fakeResolver{answers: map[string][]netip.Addr{}, seq: map[string][][]netip.Addr{}, lookups: map[string]int{}}
	for h, as := range answers {
		r.answers[h] = mustAddrs(as...)
	}
	return r
}

func mustAddrs(ss ...string) []netip.Addr {
	out := make([]netip.Addr, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParseAddr(s)
	}
	return out
}

func (r *fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.lookups[host]
	r.lookups[host]++
	if s, ok := r.seq[host]; ok {
		return s[min(n, len(s)-1)], nil
	}
	if a, ok := r.answers[host]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

func (r *fakeResolver) count(host string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lookups[host]
}

// countingListener counts accepted connections, which is the proof that no
// byte reached a server: a refused request must not even connect.
type countingListener struct {
	net.Listener
	accepts atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.accepts.Add(1)
	}
	return c, err
}

// server is a loopback test server that counts connections and requests
// and records the last request's headers and request URI.
type server struct {
	*httptest.Server
	ln       *countingListener
	requests atomic.Int64
	mu       sync.Mutex
	last     http.Header
	lastURI  string
	lastHost string
}

func newServer(t *testing.T, tlsOn bool, h http.HandlerFunc) *server {
	t.Helper()
	s := &server{}
	hs := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		s.mu.Lock()
		s.last, s.lastURI, s.lastHost = r.Header.Clone(), r.RequestURI, r.Host
		s.mu.Unlock()
		if h != nil {
			h(w, r)
			return
		}
		w.Write([]byte("ok"))
	}))
	s.ln = &countingListener{Listener: hs.Listener}
	hs.Listener = s.ln
	if tlsOn {
		hs.StartTLS()
	} else {
		hs.Start()
	}
	s.Server = hs
	t.Cleanup(hs.Close)
	return s
}

func (s *server) port() string {
	return strconv.Itoa(s.ln.Addr().(*net.TCPAddr).Port)
}

func (s *server) pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(s.Certificate())
	return p
}

func (s *server) lastRequest() (http.Header, string, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last, s.lastURI, s.lastHost
}

// assertUntouched fails when the server saw any connection or request.
func (s *server) assertUntouched(t *testing.T) {
	t.Helper()
	if n := s.ln.accepts.Load(); n != 0 {
		t.Errorf("forbidden server accepted %d connection(s), want 0", n)
	}
	if n := s.requests.Load(); n != 0 {
		t.Errorf("forbidden server received %d request(s), want 0", n)
	}
}

// originChecker allows the listed "METHOD ORIGIN" pairs on any path and
// denies everything else, like a one-layer policy.
type originChecker struct {
	mu    sync.Mutex
	allow map[string]bool
	seen  []capability.Request
}

func allowOrigins(pairs ...string) *originChecker {
	c := &originChecker{allow: map[string]bool{}}
	for _, p := range pairs {
		c.allow[p] = true
	}
	return c
}

func (c *originChecker) Decide(_ context.Context, r capability.Request) capability.Decision {
	c.mu.Lock()
	c.seen = append(c.seen, r)
	c.mu.Unlock()
	if r.Kind == capability.NetRequest && c.allow[r.Method+" "+r.Origin] {
		return capability.Decision{Mode: capability.Allow, Reason: capability.ReasonAllowed, Request: r.String()}
	}
	return capability.Decision{Mode: capability.Deny, Reason: capability.ReasonNetworkDestinationDenied, Layer: "test", Request: r.String()}
}

func loopback() []netip.Prefix {
	return []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
}

func wantReason(t *testing.T, err error, want capability.Reason) {
	t.Helper()
	if err == nil {
		t.Fatalf("err = nil, want %s", want)
	}
	if got := capability.ReasonOf(err); got != want {
		t.Fatalf("reason = %q (err %v), want %s", got, err, want)
	}
	var ce *capability.Error
	if !errors.As(err, &ce) {
		t.Fatalf("err %v does not wrap *capability.Error", err)
	}
}
