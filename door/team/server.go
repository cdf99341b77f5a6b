package team

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/norma-run/norma/approval"
	"github.com/norma-run/norma/audit"
	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/internal/httpserve"
	"github.com/norma-run/norma/internal/loopback"
	"github.com/norma-run/norma/internal/snakejson"
)

// MaxBody is the largest request body the API reads: a filed request
// carries a preview of at most [approval.MaxPreview] bytes, JSON-escaped.
const MaxBody = 1 << 20

// DefaultMaxWait bounds a long poll (?wait=) when Options.MaxWait is 0.
const DefaultMaxWait = 60 * time.Second

// Options configure a [Server].
type Options struct {
	// Tokens authenticate every API request; required.
	Tokens *Tokens
	// Approvals answers the approval routes; required. It must have no
	// Approver: a request filed here is stored pending, for a person.
	Approvals *approval.Service
	// Audit is the store's audit log, for queries, runs and checkpoints;
	// required.
	Audit audit.Backend
	// Verify recomputes the chain and checks the checkpoints, as `norma
	// audit verify` does (nil: the chain alone, [audit.VerifyBackend]).
	Verify func(ctx context.Context) (audit.VerifyResult, error)
	// Plugins lists the installed plugins (nil: none).
	Plugins func(ctx context.Context) ([]Plugin, error)
	// Watch, when the store offers it (PostgreSQL's LISTEN/NOTIFY), wakes
	// the long polls on a change made by any process: the server holds
	// one watch for all of them while it serves. Without it (or while the
	// watch is down) a long poll wakes at once on a decision made through
	// this server and polls the store every Poll for the others.
	Watch approval.Watcher
	// Poll is the polling interval of a long poll (0: 250ms).
	Poll time.Duration
	// MaxWait bounds ?wait= (0: DefaultMaxWait).
	MaxWait time.Duration
	// Log receives one line per refused or failed request (nil: none).
	// Lines name the route, the status, the code and the principal,
	// never a token or a body.
	Log func(line string)
}

// Server is the team server: the JSON API under /api/v1/, and the routes
// other packages mount on it ([Server.Handle], [Server.HandleFor]). It
// is safe for concurrent use.
type Server struct {
	opts Options
	mux  *http.ServeMux

	changed *broadcast
	// watching is true while the store's watch is live: long polls then
	// poll only as a safety net.
	watching  atomic.Bool
	watchOnce sync.Once
	stop      context.CancelFunc
	stopped   context.Context

	servers httpserve.Group
}

// New returns a server with the API routes.
func New(opts Options) (*Server, error) {
	if opts.Tokens == nil || opts.Approvals == nil || opts.Audit == nil {
		return nil, errors.New("team: tokens, approvals and an audit backend are required")
	}
	if opts.Poll <= 0 {
		opts.Poll = 250 * time.Millisecond
	}
	if opts.MaxWait <= 0 {
		opts.MaxWait = DefaultMaxWait
	}
	s := &Server{opts: opts, mux: http.NewServeMux(), changed: newBroadcast()}
	s.stopped, s.stop = context.WithCancel(context.Background())
	s.routes()
	return s, nil
}

// Handle adds a route that authenticates on its own (the inbox's pages,
// with a session cookie), with the patterns of [http.ServeMux].
func (s *Server) Handle(pattern string, h http.Handler) { s.mux.Handle(pattern, h) }

// HandleFor adds a route that needs a bearer token whose role may do
// act: it answers 401 (TEAM_UNAUTHENTICATED) or 403 (TEAM_FORBIDDEN)
// before h runs, and h finds the [Principal] with [PrincipalFrom].
func (s *Server) HandleFor(pattern string, act Action, h http.Handler) {
	s.mux.Handle(pattern, s.require(act, h))
}

// Tokens returns the server's token file, for routes that authenticate
// on their own ([Tokens.Lookup]).
func (s *Server) Tokens() *Tokens { return s.opts.Tokens }

// Approvals returns the server's approval service: the one that decides
// ([approval.Service.Decide]) for every route.
func (s *Server) Approvals() *approval.Service { return s.opts.Approvals }

// Changed tells the server's long polls that approval id changed, so a
// route that decides outside the API (the inbox) wakes them at once.
func (s *Server) Changed(id string) { s.changed.notify(id) }

// ServeHTTP routes r.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

func (s *Server) require(act Action, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, err := s.opts.Tokens.Authenticate(r)
		if err == nil {
			err = Authorize(p, act)
		}
		if err != nil {
			s.fail(w, r, p, err)
			return
		}
		h.ServeHTTP(w, r.WithContext(WithPrincipal(r.Context(), p)))
	})
}

// Serve answers the connections of ln until ln fails or [Server.Shutdown],
// then returns nil. On a loopback listener (see [Listen]) a Host header
// that does not name a loopback host is refused (421): a DNS rebinding
// page reaches 127.0.0.1 under its own name.
func (s *Server) Serve(ln net.Listener) error {
	var h http.Handler = s.mux
	if isLoopback(ln.Addr()) {
		h = loopbackOnly(h)
	}
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      s.opts.MaxWait + 30*time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
	}
	if s.opts.Log != nil {
		// net/http's own complaints (a TLS handshake that failed) go to
		// the server's log, escaped there like every line.
		srv.ErrorLog = log.New(logWriter(s.opts.Log), "team: ", 0)
	}
	return s.servers.Serve(ln, srv)
}

// Shutdown stops accepting, ends the long polls, lets the requests in
// flight finish until ctx ends, then closes what is left.
func (s *Server) Shutdown(ctx context.Context) error {
	s.stop()
	s.changed.close()
	return s.servers.Shutdown(ctx)
}

// startWatch starts relaying the store's change notifications, once,
// at the first long poll.
func (s *Server) startWatch() {
	s.watchOnce.Do(func() {
		if s.opts.Watch != nil {
			go s.watch()
		}
	})
}

// watch relays the store's change notifications to the long polls until
// Shutdown, watching again (after a second) when the watch ends: a lost
// connection costs the long polls their fast wake-up, never an answer.
func (s *Server) watch() {
	for s.stopped.Err() == nil {
		if ch, err := s.opts.Watch.WatchApprovals(s.stopped); err == nil {
			s.watching.Store(true)
			for id := range ch {
				s.changed.notify(id)
			}
			s.watching.Store(false)
		}
		select {
		case <-s.stopped.Done():
		case <-time.After(time.Second):
		}
	}
}

func isLoopback(a net.Addr) bool {
	ta, ok := a.(*net.TCPAddr)
	if !ok {
		return false
	}
	ip, ok := netip.AddrFromSlice(ta.IP)
	return ok && ip.Unmap().IsLoopback()
}

func loopbackOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !loopback.Host(r.Host) {
			writeError(w, http.StatusMisdirectedRequest, string(capability.ReasonTeamForbidden), "the Host header must name a loopback address")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// Listen listens for the team server on addr (host:port, port 0 for any
// free one). A loopback IP address may serve plain HTTP; any other
// address (":8443" is every interface) needs a certificate and key
// (certFile, keyFile, PEM) and serves TLS 1.2 or later only: bearer
// tokens must not cross a network in the clear. A host name is refused
// (it could resolve elsewhere). tls reports whether the listener is TLS.
func Listen(addr, certFile, keyFile string) (ln net.Listener, isTLS bool, err error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, false, fmt.Errorf("team: --team %q: want host:port, such as 127.0.0.1:8443", addr)
	}
	loop := false
	if host != "" {
		ip, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"))
		if err != nil {
			return nil, false, fmt.Errorf("team: --team %q: the host must be an IP address (or empty for every interface)", addr)
		}
		loop = ip.Unmap().IsLoopback()
	}
	if (certFile == "") != (keyFile == "") {
		return nil, false, errors.New("team: --tls-cert and --tls-key go together")
	}
	if !loop && certFile == "" {
		return nil, false, fmt.Errorf("team: --team %s is not a loopback address: give --tls-cert and --tls-key (bearer tokens are not sent in the clear)", addr)
	}
	var cfg *tls.Config
	if certFile != "" {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, false, fmt.Errorf("team: TLS certificate: %w", err)
		}
		cfg = &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}}
	}
	ln, err = net.Listen("tcp", net.JoinHostPort(host, port))
	if err != nil {
		return nil, false, fmt.Errorf("team: %w", err)
	}
	if cfg != nil {
		return tls.NewListener(ln, cfg), true, nil
	}
	return ln, false, nil
}

// logWriter writes each line of a log.Logger to log.
type logWriter func(line string)

func (w logWriter) Write(p []byte) (int, error) {
	w(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// apiError is the body of every error answer.
type apiError struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// writeJSON answers v with snake_case keys, as every JSON output of Norma
// (package snakejson): the library values it holds (approval records,
// audit events) have camelCase tags.
func writeJSON(w http.ResponseWriter, status int, v any) {
	tree, err := snakejson.Convert(v, nil)
	var b []byte
	if err == nil {
		b, err = json.Marshal(tree)
	}
	if err != nil {
		writeError(w, http.StatusInternalServerError, string(capability.ReasonTeamInternal), "encoding the answer failed")
		return
	}
	writeBody(w, status, b)
}

// writeBody sends b, a JSON document, with status: never cached, never
// sniffed as anything but JSON.
func writeBody(w http.ResponseWriter, status int, b []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	var e apiError
	e.Error.Code, e.Error.Message = code, msg
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="norma team"`)
	}
	b, _ := json.Marshal(e) // strings only
	writeBody(w, status, b)
}

// statusOf maps a reason code to the HTTP status it is answered with.
func statusOf(reason capability.Reason) int {
	switch reason {
	case capability.ReasonTeamUnauthenticated:
		return http.StatusUnauthorized
	case capability.ReasonTeamForbidden:
		return http.StatusForbidden
	case capability.ReasonTeamNotFound:
		return http.StatusNotFound
	case capability.ReasonTeamAlreadyDecided, capability.ReasonApprovalExpired, capability.ReasonApprovalConsumed:
		return http.StatusConflict
	case capability.ReasonTeamBodyTooLarge:
		return http.StatusRequestEntityTooLarge
	case capability.ReasonInvalidRequest, capability.ReasonApprovalMismatch, capability.ReasonApprovalOtherRun:
		return http.StatusBadRequest
	case capability.ReasonApprovalStoreUnavailable:
		return http.StatusServiceUnavailable
	case capability.ReasonApprovalDenied:
		return http.StatusForbidden
	}
	return http.StatusInternalServerError
}

// fail answers err: a *capability.Error with its code and public message
// (never its cause), anything else as TEAM_INTERNAL with a generic
// message. The log line names the principal, never a token.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, p Principal, err error) {
	code, msg := capability.ReasonTeamInternal, "the server failed to answer"
	if ce, ok := errors.AsType[*capability.Error](err); ok && ce.Decision.Reason != "" {
		code, msg = ce.Decision.Reason, ce.Detail
		if msg == "" {
			msg = string(code)
		}
	}
	status := statusOf(code)
	if s.opts.Log != nil {
		who := "-"
		if p.Name != "" {
			who = p.ID() + " (" + string(p.Role) + ")"
		}
		line := fmt.Sprintf("team: %s %s by %s: %d %s", r.Method, r.URL.Path, who, status, code)
		if status >= http.StatusInternalServerError {
			// For the operator: the cause a *capability.Error keeps out
			// of its public message (never a token; escaped by Log).
			line += ": " + err.Error()
			if ce, ok := errors.AsType[*capability.Error](err); ok && ce.Err != nil {
				line += ": " + ce.Err.Error()
			}
		}
		s.opts.Log(line)
	}
	writeError(w, status, string(code), msg)
}

// broadcast wakes the waiters on one approval when it changes. It keeps
// one channel per approval while someone waits on it: a waiter releases
// its channel when it stops waiting, so waits on ids that never change
// (an unknown id, a request nobody decides) leave nothing behind. Its
// zero value is not usable.
type broadcast struct {
	mu      sync.Mutex
	waiting map[string]*waiters
	closed  bool
}

// waiters is the channel of one approval and how many wait on it.
type waiters struct {
	ch chan struct{}
	n  int
}

func newBroadcast() *broadcast { return &broadcast{waiting: map[string]*waiters{}} }

// wait returns a channel closed at the next change of approval id (or
// when the server shuts down), and the release to call when the caller
// stops waiting on it.
func (b *broadcast) wait(id string) (<-chan struct{}, func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		ch := make(chan struct{})
		close(ch)
		return ch, func() {}
	}
	w := b.waiting[id]
	if w == nil {
		w = &waiters{ch: make(chan struct{})}
		b.waiting[id] = w
	}
	w.n++
	return w.ch, func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		if w.n--; w.n == 0 && b.waiting[id] == w {
			delete(b.waiting, id)
		}
	}
}

// notify wakes the waiters on approval id.
func (b *broadcast) notify(id string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if w := b.waiting[id]; w != nil {
		close(w.ch)
		delete(b.waiting, id)
	}
}

// close wakes every waiter, for good.
func (b *broadcast) close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	b.closed = true
	for id, w := range b.waiting {
		close(w.ch)
		delete(b.waiting, id)
	}
}

// size is the number of approvals waited on.
func (b *broadcast) size() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.waiting)
}

func (b *broadcast) isClosed() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.closed
}
