package broker

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"github.com/norma-run/norma/approval"
	"github.com/norma-run/norma/audit"
	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/guard/netguard"
	"github.com/norma-run/norma/secret"
)

// Identity names the one plugin process a [Broker] serves; every decision
// and audit event carries it.
type Identity struct {
	Plugin         string
	Version        string
	ManifestDigest string
	RunID          string
	// Workspace is the approval.WorkspaceID of the workspace the plugin
	// serves (empty: none); it is part of every action hash.
	Workspace string
	// Process identifies this process of the plugin (a pid or an instance
	// id); required.
	Process string
}

func (id Identity) principal() string { return "plugin:" + id.Plugin + "#" + id.Process }

// Limits bound what one plugin process can make the broker do. Zero fields
// mean the documented defaults; a negative rate means no rate limit.
type Limits struct {
	// MaxRequestBytes caps a request body (default 10 MiB); larger bodies
	// are refused with 413 NETWORK_REQUEST_TOO_LARGE before anything is sent.
	MaxRequestBytes int64
	// MaxResponseBytes caps a response body (default 10 MiB): a larger
	// declared length is refused with 502 NETWORK_RESPONSE_TOO_LARGE, an
	// undeclared one is cut off and the connection to the plugin aborted.
	MaxResponseBytes int64
	// MaxHeaderBytes caps the request header block (default 64 KiB).
	MaxHeaderBytes int
	// RequestsPerSecond and Burst rate-limit requests (default 50/s, burst
	// 100); over the limit is 429 BROKER_RATE_LIMITED.
	RequestsPerSecond float64
	Burst             int
	// MaxConns caps concurrent plugin connections (default 64); the extra
	// connection gets 429 BROKER_CONNECTION_LIMIT and is closed.
	MaxConns int
	// ReadHeaderTimeout (default 10s), IdleTimeout (default 90s) and
	// TLSHandshakeTimeout (default 10s) apply to plugin connections.
	ReadHeaderTimeout   time.Duration
	IdleTimeout         time.Duration
	TLSHandshakeTimeout time.Duration
	// UpstreamTimeout bounds one upstream exchange, body included
	// (default 2 minutes): 504 TIMEOUT, or a broken body once it has
	// begun; inside a CONNECT tunnel the plugin's connection is closed
	// after that answer. ApprovalTimeout bounds the wait for an approver
	// (default 10 minutes).
	UpstreamTimeout time.Duration
	ApprovalTimeout time.Duration
}

func (l Limits) withDefaults() Limits {
	def := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	if l.MaxRequestBytes <= 0 {
		l.MaxRequestBytes = 10 << 20
	}
	if l.MaxResponseBytes <= 0 {
		l.MaxResponseBytes = 10 << 20
	}
	if l.MaxHeaderBytes <= 0 {
		l.MaxHeaderBytes = 64 << 10
	}
	if l.RequestsPerSecond == 0 {
		l.RequestsPerSecond, l.Burst = 50, 100
	}
	if l.Burst <= 0 {
		l.Burst = max(1, int(l.RequestsPerSecond))
	}
	if l.MaxConns <= 0 {
		l.MaxConns = 64
	}
	def(&l.ReadHeaderTimeout, 10*time.Second)
	def(&l.IdleTimeout, 90*time.Second)
	def(&l.TLSHandshakeTimeout, 10*time.Second)
	def(&l.UpstreamTimeout, 2*time.Minute)
	def(&l.ApprovalTimeout, 10*time.Minute)
	return l
}

// Config configures a [Broker].
type Config struct {
	// Identity of the plugin process; Plugin and Process are required.
	Identity Identity
	// Policy decides every request and every secret use. Required.
	Policy capability.Decider
	// AllowPrivate admits otherwise refused address ranges upstream
	// (pass the policy Set's AllowPrivate()).
	AllowPrivate []netip.Prefix
	// Resolver resolves upstream names; nil means the system resolver.
	Resolver netguard.Resolver
	// CA terminates the plugin's TLS. Required.
	CA *CA
	// UpstreamRootCAs verifies upstream servers; nil means the system roots.
	UpstreamRootCAs *x509.CertPool
	// Secrets are the plugin's secret handles (secret.Handles of its
	// manifest); Vault resolves them and is required when there are any.
	Secrets []secret.Handle
	Vault   secret.Vault
	// Redactor learns every placeholder this broker issues and every value
	// it resolves; share it with the other output channels of the host.
	// Nil means a private one. Its detector engine checks what every
	// request carries, with its egress rules (see egress.go).
	Redactor *secret.Redactor
	// Approver answers approval_required decisions: it is asked for a
	// ticket for exactly the request's [ActionHash] (tool [ToolNetRequest]),
	// and the request is refused on any error, on a ticket without an
	// approval id and on a ticket for another action hash. The ticket's
	// idempotency key is sent upstream as Idempotency-Key; when the
	// approver is also an approval.Finisher it is told when the upstream
	// exchange is over. *approval.Service is the durable one. Nil refuses
	// such requests (APPROVAL_REQUIRED).
	Approver approval.Authorizer
	// Audit receives one decision event per request. Required: a request
	// whose decision cannot be recorded is refused (AUDIT_UNAVAILABLE).
	Audit audit.Sink
	// Logger gets one line per request (never headers, bodies or values);
	// nil discards.
	Logger *slog.Logger
	// Limits; zero fields are defaults.
	Limits Limits
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// binding is one secret handle with its placeholder and lazily loaded value.
type binding struct {
	h   secret.Handle
	ph  secret.Placeholder
	phs string // ph.String()

	mu     sync.Mutex
	val    secret.Value
	loaded bool
}

// Broker is the egress proxy of one plugin process: an HTTP forward proxy
// (absolute-form requests and CONNECT) on one listener, which checks every
// request against the policy, asks for approval when a rule says
// per_action, injects credentials only toward their purpose origin, sends
// upstream through the network guard's [netguard.Transport] and
// [netguard.Dialer] (the request rebuilt from the normalized URL, its
// request-URI checked to be the checked path, one lookup, every address
// checked, the checked address dialed) with full TLS verification, never
// follows redirects, and writes one audit event per decision.
//
// CONNECT tunnels are always TLS-terminated with the per-install [CA]: the
// SNI must name the CONNECT target (an IP target may omit it), and every
// request inside must carry a Host naming it too. Tunnels that do not
// speak TLS, Upgrade requests (WebSocket, h2c) and requests that are not
// in proxy form are refused (BROKER_PROTOCOL).
//
// Denials are JSON {"reason", "message", "layer", "rule", "request"} with
// status 403 (policy, secrets, targets, approval, audit), 413 (request too
// large), 429 (rate and connection limits), 502 (upstream failure,
// response too large), 504 (timeout) or 400 (not a proxy request).
//
// What it does not protect against: a permitted origin that forwards
// what it receives, data the plugin is allowed to send to a permitted
// origin, a secret value echoed back in an encoded or compressed form (the
// response filter masks the raw, query-escaped and base64 forms), and
// traffic that does not go through the broker (the sandbox's job). Secret
// values are loaded on first use and kept for the life of the broker, so a
// rotated secret takes effect for the next plugin process.
//
// A Broker is safe for concurrent use.
type Broker struct {
	cfg      Config
	lim      Limits
	id       Identity
	policy   capability.Decider
	ca       *CA
	vault    secret.Vault
	red      *secret.Redactor
	approver approval.Authorizer
	sink     audit.Sink
	log      *slog.Logger // with the plugin and process
	now      func() time.Time

	principal string // b.id.principal(), in every audit event

	ln        *limitListener
	addr      net.Addr
	srv       *http.Server
	transport *netguard.Transport
	rate      *bucket
	bindings  []*binding

	mu      sync.Mutex
	tunnels map[net.Conn]struct{}
	closed  bool
}

// New returns a Broker that will serve ln (a loopback TCP listener or a
// unix socket) once [Broker.Serve] is called. It issues a fresh
// placeholder for every secret handle. It fails on a missing required
// field, an invalid handle, or two secrets that would fill the same header
// of the same origin.
func New(ln net.Listener, cfg Config) (*Broker, error) {
	switch {
	case ln == nil:
		return nil, errors.New("broker: nil listener")
	case cfg.Policy == nil:
		return nil, errors.New("broker: a policy is required")
	case cfg.Audit == nil:
		return nil, errors.New("broker: an audit sink is required")
	case cfg.CA == nil:
		return nil, errors.New("broker: a CA is required")
	case cfg.Identity.Plugin == "" || cfg.Identity.Process == "":
		return nil, errors.New("broker: identity needs a plugin and a process")
	case len(cfg.Secrets) > 0 && cfg.Vault == nil:
		return nil, errors.New("broker: secrets declared but no vault")
	}
	b := &Broker{
		cfg: cfg, lim: cfg.Limits.withDefaults(), id: cfg.Identity, policy: cfg.Policy, ca: cfg.CA,
		vault: cfg.Vault, red: cfg.Redactor, approver: cfg.Approver, sink: cfg.Audit, log: cfg.Logger,
		now: cfg.Now, tunnels: map[net.Conn]struct{}{},
	}
	if b.red == nil {
		b.red = secret.NewRedactor()
	}
	if b.log == nil {
		b.log = slog.New(slog.DiscardHandler)
	}
	// Every line names the plugin process; a handler formats these once.
	b.log = b.log.With(slog.String("plugin", b.id.Plugin), slog.String("process", b.id.Process))
	b.principal = b.id.principal()
	if b.now == nil {
		b.now = time.Now
	}
	seen := map[string]string{}
	for _, h := range cfg.Secrets {
		if !h.Valid() {
			return nil, errors.New("broker: invalid secret handle")
		}
		key := h.Purpose() + " " + h.Header()
		if other, ok := seen[key]; ok {
			return nil, fmt.Errorf("broker: secrets %s and %s both fill %s toward %s", other, h.Name(), h.Header(), h.Purpose())
		}
		seen[key] = h.Name()
		ph, err := secret.NewPlaceholder(h.Name())
		if err != nil {
			return nil, err
		}
		b.red.AddPlaceholder(ph)
		b.bindings = append(b.bindings, &binding{h: h, ph: ph, phs: ph.String()})
	}
	if b.lim.RequestsPerSecond > 0 {
		b.rate = newBucket(b.lim.RequestsPerSecond, b.lim.Burst, b.now)
	}
	// Every upstream request goes through netguard's Transport, the one
	// egress path of Norma: it rebuilds the request from the normalized URL,
	// refuses a request-URI that is not the checked path, sends only the
	// request this broker decided (decidedPolicy) and dials through the
	// Dialer (one lookup, every address checked, the checked address
	// dialed). It never follows a redirect: the plugin's next hop is a new
	// request through the whole pipeline.
	b.transport = &netguard.Transport{
		Policy:                 decidedPolicy{},
		Dialer:                 &netguard.Dialer{Resolver: cfg.Resolver, AllowPrivate: cfg.AllowPrivate, Timeout: 30 * time.Second},
		RootCAs:                cfg.UpstreamRootCAs,
		MaxResponseBytes:       b.lim.MaxResponseBytes,
		MaxRedirects:           -1,
		TLSHandshakeTimeout:    b.lim.TLSHandshakeTimeout,
		ResponseHeaderTimeout:  b.lim.UpstreamTimeout,
		DisableCompression:     true, // relay exactly what the plugin asked for
		MaxResponseHeaderBytes: 1 << 20,
		MaxIdleConnsPerHost:    16,
		HTTP1Only:              true, // the plugin's side is HTTP/1.1 too (see connect)
	}
	b.addr = ln.Addr()
	b.ln = &limitListener{Listener: ln, sem: make(chan struct{}, b.lim.MaxConns)}
	b.srv = b.newServer(http.HandlerFunc(b.serveProxy))
	return b, nil
}

func (b *Broker) newServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: b.lim.ReadHeaderTimeout,
		IdleTimeout:       b.lim.IdleTimeout,
		MaxHeaderBytes:    b.lim.MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(b.log.Handler(), slog.LevelDebug),
		// HTTP/1.1 only toward the plugin: no h2 over the tunnel.
		TLSNextProto: map[string]func(*http.Server, *tls.Conn, http.Handler){},
	}
}

// Serve accepts plugin connections until ctx is done or Close is called,
// and then returns nil. Request contexts derive from ctx. Call it once.
func (b *Broker) Serve(ctx context.Context) error {
	b.ln.reject = func(c net.Conn) { b.rejectConn(ctx, c) }
	b.srv.BaseContext = func(net.Listener) context.Context { return ctx }
	stop := context.AfterFunc(ctx, func() { b.Close() })
	defer stop()
	err := b.srv.Serve(b.ln)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Close stops the listener, closes every plugin connection (tunnels
// included) and idle upstream connections.
func (b *Broker) Close() error {
	b.mu.Lock()
	b.closed = true
	for c := range b.tunnels {
		c.Close()
	}
	b.mu.Unlock()
	err := b.srv.Close()
	b.transport.CloseIdleConnections()
	return err
}

// Addr returns the listener's address.
func (b *Broker) Addr() net.Addr { return b.addr }

// Placeholder returns the placeholder this broker issued for the secret
// name.
func (b *Broker) Placeholder(name string) (secret.Placeholder, bool) {
	for _, bd := range b.bindings {
		if bd.h.Name() == name {
			return bd.ph, true
		}
	}
	return secret.Placeholder{}, false
}

// Env returns the environment entries a plugin process needs to use the
// broker: the proxy variables (upper and lower case, NO_PROXY empty so
// nothing bypasses it) for a TCP listener, or NORMA_BROKER_SOCKET for a
// unix socket (the sandbox relays it); the CA certificate path in
// SSL_CERT_FILE, NODE_EXTRA_CA_CERTS, REQUESTS_CA_BUNDLE, CURL_CA_BUNDLE
// and GIT_SSL_CAINFO; and, for every secret whose manifest entry names an
// env variable, that variable set to the placeholder. It holds no secret
// value and never the CA key.
func (b *Broker) Env() []string {
	var env []string
	switch a := b.addr.(type) {
	case *net.UnixAddr:
		env = append(env, "NORMA_BROKER_SOCKET="+a.Name)
	default:
		proxy := "http://" + b.addr.String()
		for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"} {
			env = append(env, k+"="+proxy)
		}
		env = append(env, "NO_PROXY=", "no_proxy=")
	}
	for _, k := range []string{"SSL_CERT_FILE", "NODE_EXTRA_CA_CERTS", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "GIT_SSL_CAINFO"} {
		env = append(env, k+"="+b.ca.CertPath())
	}
	for _, bd := range b.bindings {
		if e := bd.h.Env(); e != "" {
			env = append(env, e+"="+bd.ph.String())
		}
	}
	return env
}

// value returns the secret value of bd, loading it on first use.
func (b *Broker) value(ctx context.Context, bd *binding) (secret.Value, error) {
	bd.mu.Lock()
	defer bd.mu.Unlock()
	if bd.loaded {
		return bd.val, nil
	}
	v, err := b.vault.Get(ctx, bd.h.Name())
	if err != nil {
		return secret.Value{}, err
	}
	if err := b.red.AddValue(bd.h.Name(), v); err != nil {
		return secret.Value{}, err
	}
	bd.val, bd.loaded = v, true
	return v, nil
}

func (b *Broker) track(c net.Conn, add bool) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if add {
		if b.closed {
			return false
		}
		b.tunnels[c] = struct{}{}
	} else {
		delete(b.tunnels, c)
	}
	return true
}
