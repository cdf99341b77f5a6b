package broker

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/norma-run/norma/internal/syncbuf"

	"github.com/norma-run/norma/approval"
	"github.com/norma-run/norma/audit"
	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/manifest"
	"github.com/norma-run/norma/policy"
	"github.com/norma-run/norma/secret"
)

// canary is the secret value; it must never reach the plugin, a log line
// or an audit event.
const canary = "CANARY-tok-9b1f2e7d4c3a"

// The policy Set is the broker's policy.
var _ capability.Decider = (*policy.Set)(nil)

// The secret Redactor is the audit log's Redactor.
var _ audit.Redactor = (*secret.Redactor)(nil)

// fakeResolver maps names to fixed answers and counts lookups.
type fakeResolver struct {
	m       map[string][]netip.Addr
	lookups atomic.Int64
}

func (f *fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	f.lookups.Add(1)
	if a, ok := f.m[host]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// upstream is a TLS test server that records what reaches it.
type upstream struct {
	name    string
	ln      net.Listener
	srv     *http.Server
	port    int
	origin  string
	mu      sync.Mutex
	reqs    []seenRequest
	bytesIn atomic.Int64
	conns   atomic.Int64
	handler http.HandlerFunc
}

type seenRequest struct {
	Method, Path, Query string
	// RequestURI is the request-target exactly as it arrived, Host the
	// Host header.
	RequestURI, Host string
	Header           http.Header
	Body             []byte
}

func (u *upstream) count() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.reqs)
}

func (u *upstream) last() seenRequest {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.reqs[len(u.reqs)-1]
}

// countConn counts every byte a server receives, TLS handshakes included;
// countListener also counts accepted connections.
type countConn struct {
	net.Conn
	n *atomic.Int64
}

func (c countConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.n.Add(int64(n))
	return n, err
}

type countListener struct {
	net.Listener
	n     *atomic.Int64
	conns *atomic.Int64
}

func (l countListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.conns.Add(1)
	return countConn{c, l.n}, nil
}

// testPKI is a CA for the upstream servers (not the broker's CA).
type testPKI struct {
	pool *x509.CertPool
	cert tls.Certificate
}

func newTestPKI(t testing.TB, names ...string) *testPKI {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caT := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "upstream test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caT, caT, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	lt := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: names[0]}, DNSNames: names,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, KeyUsage: x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, lt, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(caCert)
	return &testPKI{pool: pool, cert: tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}}
}

func startUpstream(t testing.TB, name, ip string, pki *testPKI, h http.HandlerFunc) *upstream {
	t.Helper()
	ln, err := net.Listen("tcp", ip+":0")
	if err != nil {
		t.Fatalf("listen on %s: %v", ip, err)
	}
	u := &upstream{name: name, handler: h}
	u.ln = ln
	u.port = ln.Addr().(*net.TCPAddr).Port
	u.origin = fmt.Sprintf("https://%s:%d", name, u.port)
	u.srv = &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			u.mu.Lock()
			u.reqs = append(u.reqs, seenRequest{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery,
				RequestURI: r.RequestURI, Host: r.Host, Header: r.Header.Clone(), Body: body})
			u.mu.Unlock()
			u.handler(w, r)
		}),
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{pki.cert}},
		ErrorLog:  slog.NewLogLogger(slog.DiscardHandler, slog.LevelError),
	}
	go u.srv.ServeTLS(countListener{ln, &u.bytesIn, &u.conns}, "", "")
	t.Cleanup(func() { u.srv.Close() })
	return u
}

// recSink records audit events; fail makes Record fail.
type recSink struct {
	mu     sync.Mutex
	events []audit.Event
	fail   atomic.Bool
}

func (s *recSink) Record(_ context.Context, e audit.Event) error {
	if s.fail.Load() {
		return fmt.Errorf("audit: store is down")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, e)
	return nil
}

func (s *recSink) all() []audit.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]audit.Event(nil), s.events...)
}

func (s *recSink) reasons() []string {
	var out []string
	for _, e := range s.all() {
		out = append(out, e.Decision+":"+e.Reason)
	}
	return out
}

// env is one end-to-end setup: two upstreams, a policy, a vault, a broker
// and a plugin-side client.
type env struct {
	t    testing.TB
	api  *upstream
	evil *upstream
	// other is live on an admitted address but its origin is in no rule;
	// loop3's origin has a rule but its address (127.0.0.3) is not
	// admitted. Neither may ever receive a byte through the broker.
	other    *upstream
	loop3    *upstream
	resolver *fakeResolver
	broker   *Broker
	sink     *recSink
	logs     *syncbuf.Buffer
	client   *http.Client
	proxyURL *url.URL
	ca       *CA
	red      *secret.Redactor
	seen     *syncbuf.Buffer // every response the plugin saw
}

type envOptions struct {
	limits   Limits
	approver approval.Authorizer
	noValue  bool
	// upstreamRoots replaces the upstream test CA as the broker's roots.
	upstreamRoots *x509.CertPool
	// egress is Config.Egress.
	egress *secret.EgressRules
}

const manifestTmpl = `schema_version: 2
id: com.example.issue-helper
version: 1.4.0
entrypoint: bin/issue-helper
tools:
  - name: issues.summarize
    effects: {data: read, external_state: none}
    approval: never
permissions:
  network:
    requests:
      - origin: %[1]s
        methods: [GET]
        paths: ["/repos/{owner}/issues", "/repos/{owner}/issues/{number}", "/redirect/{kind}", "/big/{kind}", /echo, /slow]
      - origin: %[1]s
        methods: [POST]
        paths: ["/repos/{owner}/issues/{number}/comments"]
        approval: per_action
      - origin: %[1]s
        methods: [PUT]
        paths: [/upload]
      - origin: %[2]s
        methods: [GET, POST]
        paths: ["/public/{x}"]
      - origin: %[3]s
        methods: [GET]
        paths: [/x]
      - origin: %[4]s
        methods: [GET]
        paths: [/x]
  secrets:
    - name: issue_api_token
      purpose: %[1]s
      scopes: [issues:read]
      inject_as: brokered_header
      env: ISSUE_TOKEN
`

const workspaceYAML = `schema_version: 2
kind: workspace
permissions:
  network:
    allow_private: [127.0.0.1/32, 127.0.0.2/32]
`

func newEnv(t testing.TB, o envOptions) *env {
	t.Helper()
	pki := newTestPKI(t, "api.example.invalid", "evil.example.invalid", "internal.example.invalid", "other.example.invalid", "loop3.example.invalid")
	e := &env{t: t, sink: &recSink{}, logs: &syncbuf.Buffer{}, seen: &syncbuf.Buffer{}, red: secret.NewRedactor()}
	e.red.SetEgress(o.egress)
	e.api = startUpstream(t, "api.example.invalid", "127.0.0.1", pki, e.apiHandler)
	e.evil = startUpstream(t, "evil.example.invalid", "127.0.0.2", pki, func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "evil landing")
	})
	landing := func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "landing") }
	e.other = startUpstream(t, "other.example.invalid", "127.0.0.2", pki, landing)
	e.loop3 = startUpstream(t, "loop3.example.invalid", "127.0.0.3", pki, landing)
	internal := fmt.Sprintf("https://internal.example.invalid:%d", e.evil.port)
	e.resolver = &fakeResolver{m: map[string][]netip.Addr{
		"api.example.invalid":      {netip.MustParseAddr("127.0.0.1")},
		"evil.example.invalid":     {netip.MustParseAddr("127.0.0.2")},
		"internal.example.invalid": {netip.MustParseAddr("10.0.0.7")},
		"mixed.example.invalid":    {netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("169.254.169.254")},
		"other.example.invalid":    {netip.MustParseAddr("127.0.0.2")},
		"loop3.example.invalid":    {netip.MustParseAddr("127.0.0.3")},
	}}
	m, err := manifest.Parse("manifest.yaml", fmt.Appendf(nil, manifestTmpl, e.api.origin, e.evil.origin, internal, e.loop3.origin))
	if err != nil {
		t.Fatal(err)
	}
	ws, err := manifest.ParseLayer("workspace.yaml", []byte(workspaceYAML))
	if err != nil {
		t.Fatal(err)
	}
	set, err := policy.Compile(policy.Inputs{Manifest: m, Workspace: ws, Host: policy.Host{Sandbox: true, OutOfProcess: true}})
	if err != nil {
		t.Fatal(err)
	}
	handles, err := secret.Handles(m)
	if err != nil {
		t.Fatal(err)
	}
	vault, err := secret.OpenFileVault(t.Context(), t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !o.noValue {
		if err := vault.Set(t.Context(), "issue_api_token", secret.NewValue([]byte(canary))); err != nil {
			t.Fatal(err)
		}
	}
	e.ca, err = LoadOrCreateCA(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	roots := pki.pool
	if o.upstreamRoots != nil {
		roots = o.upstreamRoots
	}
	e.broker, err = New(ln, Config{
		Identity:        Identity{Plugin: m.ID, Version: m.Version, ManifestDigest: m.Digest(), RunID: "run-1", Process: "p1"},
		Policy:          set,
		AllowPrivate:    set.AllowPrivate(),
		Resolver:        e.resolver,
		CA:              e.ca,
		UpstreamRootCAs: roots,
		Secrets:         handles,
		Vault:           vault,
		Redactor:        e.red,
		Approver:        o.approver,
		Audit:           e.sink,
		Logger:          slog.New(slog.NewJSONHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Limits:          o.limits,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	done := make(chan error, 1)
	go func() { done <- e.broker.Serve(ctx) }()
	e.proxyURL = &url.URL{Scheme: "http", Host: ln.Addr().String()}
	e.client = e.newClient(true)
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve = %v", err)
		}
		e.checkNoCanary()
	})
	return e
}

// newClient is what a plugin uses: the broker as proxy, its CA as the only
// root. follow=false returns redirects to the caller.
func (e *env) newClient(follow bool) *http.Client {
	c := &http.Client{
		Transport: &http.Transport{
			Proxy:             http.ProxyURL(e.proxyURL),
			TLSClientConfig:   &tls.Config{RootCAs: e.ca.Pool()},
			DisableKeepAlives: false,
		},
		Timeout: 30 * time.Second,
	}
	if !follow {
		c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	}
	return c
}

func (e *env) apiHandler(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == "/echo":
		// A hostile or careless server reflecting the credential.
		w.Header().Set("X-Echo-Auth", r.Header.Get("Authorization"))
		w.Header().Set("Content-Type", "text/plain")
		r.Header.Write(w)
	case strings.HasPrefix(r.URL.Path, "/redirect/"):
		target := map[string]string{
			"evil":        e.evil.origin + "/public/landing",
			"evil-denied": e.evil.origin + "/private/landing",
			"same":        e.api.origin + "/repos/acme/issues",
			"other":       e.other.origin + "/x",
			"loop3":       e.loop3.origin + "/x",
		}[strings.TrimPrefix(r.URL.Path, "/redirect/")]
		http.Redirect(w, r, target, http.StatusFound)
	case strings.HasPrefix(r.URL.Path, "/big/"):
		const size = 100 << 20
		if r.URL.Path == "/big/length" {
			w.Header().Set("Content-Length", fmt.Sprint(size))
		}
		chunk := make([]byte, 64<<10)
		for n := 0; n < size; n += len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	case r.URL.Path == "/slow":
		if r.URL.Query().Has("body") { // headers and a first part at once, the rest late
			w.Header().Set("Content-Length", "8")
			io.WriteString(w, "part")
			w.(http.Flusher).Flush()
		}
		time.Sleep(2 * time.Second)
	case r.Method == http.MethodPost:
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{"id":1}`)
	default:
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `[{"number":42}]`)
	}
}

// response is what the plugin saw.
type response struct {
	status int
	header http.Header
	body   []byte
	err    error
	close  bool // the server ends the connection (Connection: close)
}

func (r response) reason() capability.Reason {
	var d struct {
		Reason capability.Reason `json:"reason"`
	}
	json.Unmarshal(r.body, &d)
	return d.Reason
}

// do sends req through c and records what came back for the canary scan.
func (e *env) do(c *http.Client, req *http.Request) response {
	e.t.Helper()
	resp, err := c.Do(req)
	if err != nil {
		fmt.Fprintf(e.seen, "ERROR %v\n", err)
		return response{err: err}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	resp.Header.Write(e.seen)
	e.seen.Write(body)
	return response{status: resp.StatusCode, header: resp.Header, body: body, err: err, close: resp.Close}
}

func (e *env) get(c *http.Client, rawURL string, hdr ...string) response {
	e.t.Helper()
	req, err := http.NewRequestWithContext(e.t.Context(), http.MethodGet, rawURL, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	return e.do(c, req)
}

func (e *env) placeholder() string {
	p, ok := e.broker.Placeholder("issue_api_token")
	if !ok {
		e.t.Fatal("no placeholder")
	}
	return p.String()
}

// checkNoCanary scans everything the plugin, the logs and the audit log
// saw for the secret value.
func (e *env) checkNoCanary() {
	e.t.Helper()
	evs, _ := json.Marshal(e.sink.all())
	for name, s := range map[string]string{"responses": e.seen.String(), "logs": e.logs.String(), "audit": string(evs)} {
		if strings.Contains(s, canary) {
			e.t.Errorf("the canary secret leaked into %s", name)
		}
	}
}

// lastEvent returns the last audit event.
func (e *env) lastEvent() audit.Event {
	evs := e.sink.all()
	if len(evs) == 0 {
		e.t.Fatal("no audit event")
	}
	return evs[len(evs)-1]
}
