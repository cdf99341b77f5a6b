package bench

// Egress proxy comparison (issue 8): the added latency of one HTTPS GET
// through Norma's broker and through stripe/smokescreen v0.1.0, against the
// same loopback TLS server, in one run. Run ./compare_broker.sh (or the go
// test command in it) from this directory; docs/benchmarks/smokescreen.md
// has the figures.
//
// Setup shared by the three benchmarks:
//
//   - One TLS server on 127.0.0.1 with a certificate for
//     api.example.invalid (from a private test CA) answering a small JSON
//     document; every client asks for
//     https://api.example.invalid:PORT/repos/acme/issues with keep-alive.
//   - A fake resolver maps api.example.invalid to 127.0.0.1 for the direct
//     client's dialer, the broker (netguard) and smokescreen alike.
//   - The allow-list is the same destination on both proxies: smokescreen's
//     ACL v1 allows exactly api.example.invalid for the client's role
//     (action: enforce) and 127.0.0.1/32 as an allow-range (loopback is
//     refused by default); Norma's manifest allows GET on that origin and
//     the path template /repos/{owner}/issues, and a workspace layer admits
//     127.0.0.1/32 (allow_private).
//   - Both proxies log every request as JSON, to io.Discard.
//
// What each proxy does per request differs, and that is the point of the
// comparison: smokescreen decides once per CONNECT (host and role) and then
// copies bytes through the tunnel, so over a kept-alive tunnel a GET costs
// it only the copy; the client's TLS session ends at the server. Norma
// terminates the client's TLS (leaf minted by its per-install CA), decides
// every request on origin, method and path, decides the secret use, injects
// the credential (Authorization: Bearer from an encrypted file vault),
// records an audit event, and sends the request over its own verified,
// pooled TLS connection to the server, masking secret values in the
// response.
//
// Approximation in smokescreen's favour: the role comes from a constant
// RoleFromRequest (in production it is read from the client's TLS
// certificate or a header), and smokescreen's proxy listener is plain HTTP,
// like Norma's.

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"io"
	"log/slog"
	mathbig "math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/norma-run/norma/audit"
	"github.com/norma-run/norma/broker"
	"github.com/norma-run/norma/manifest"
	"github.com/norma-run/norma/policy"
	"github.com/norma-run/norma/secret"
	"github.com/sirupsen/logrus"
	"github.com/stripe/smokescreen/pkg/smokescreen"
	acl "github.com/stripe/smokescreen/pkg/smokescreen/acl/v1"
)

const (
	apiHost    = "api.example.invalid"
	apiPath    = "/repos/acme/issues"
	smokeRole  = "norma-bench"
	benchToken = "bench-token-4f1c9a"
)

// upstreamServer is the loopback TLS server every benchmark talks to.
type upstreamServer struct {
	srv    *httptest.Server
	port   int
	origin string // https://api.example.invalid:PORT
	roots  *x509.CertPool

	mu       sync.Mutex
	lastAuth string
}

func (u *upstreamServer) auth() string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.lastAuth
}

func newUpstream(tb testing.TB) *upstreamServer {
	tb.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caT := &x509.Certificate{SerialNumber: mathbig.NewInt(1), Subject: pkix.Name{CommonName: "bench upstream CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caT, caT, &caKey.PublicKey, caKey)
	if err != nil {
		tb.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	leafT := &x509.Certificate{SerialNumber: mathbig.NewInt(2), Subject: pkix.Name{CommonName: apiHost}, DNSNames: []string{apiHost},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, KeyUsage: x509.KeyUsageDigitalSignature}
	leafDER, err := x509.CreateCertificate(rand.Reader, leafT, caCert, &key.PublicKey, caKey)
	if err != nil {
		tb.Fatal(err)
	}
	u := &upstreamServer{roots: x509.NewCertPool()}
	u.roots.AddCert(caCert)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if a := r.Header.Get("Authorization"); a != "" {
			u.mu.Lock()
			u.lastAuth = a
			u.mu.Unlock()
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `[{"number":42}]`)
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{leafDER}, PrivateKey: key}}}
	srv.Config.ErrorLog = slog.NewLogLogger(slog.DiscardHandler, slog.LevelError)
	srv.StartTLS()
	tb.Cleanup(srv.Close)
	u.srv = srv
	u.port = srv.Listener.Addr().(*net.TCPAddr).Port
	u.origin = fmt.Sprintf("https://%s:%d", apiHost, u.port)
	return u
}

// names is the fake DNS: api.example.invalid is loopback, nothing else
// resolves.
var names = map[string][]netip.Addr{apiHost: {netip.MustParseAddr("127.0.0.1")}}

// normaResolver is the netguard.Resolver the broker uses.
type normaResolver struct{}

func (normaResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := names[host]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// smokeResolver is smokescreen's Resolver over the same names.
type smokeResolver struct{}

func (smokeResolver) LookupPort(_ context.Context, _, service string) (int, error) {
	return strconv.Atoi(service)
}

func (smokeResolver) LookupIP(_ context.Context, _, host string) ([]net.IP, error) {
	a, ok := names[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	out := make([]net.IP, len(a))
	for i, ip := range a {
		out[i] = net.IP(ip.AsSlice())
	}
	return out, nil
}

// directClient dials the server itself, resolving through the fake names.
func directClient(u *upstreamServer) *http.Client {
	d := &net.Dialer{}
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: u.roots},
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			host, port, err := net.SplitHostPort(addr)
			if err != nil {
				return nil, err
			}
			a, ok := names[host]
			if !ok {
				return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
			}
			return d.DialContext(ctx, network, net.JoinHostPort(a[0].String(), port))
		},
	}}
}

const brokerManifest = `schema_version: 2
id: com.example.bench
version: 1.0.0
entrypoint: bin/bench
tools:
  - name: issues.list
    effects: {data: read, external_state: none}
    approval: never
permissions:
  network:
    requests:
      - origin: %[1]s
        methods: [GET]
        paths: ["/repos/{owner}/issues"]
  secrets:
    - name: api_token
      purpose: %[1]s
      scopes: [issues:read]
      inject_as: brokered_header
      env: API_TOKEN
`

const brokerWorkspace = `schema_version: 2
kind: workspace
permissions:
  network:
    allow_private: [127.0.0.1/32]
`

// startBroker runs a Norma broker for u and returns a plugin-side client
// (the broker as proxy, its CA as the only root).
func startBroker(tb testing.TB, u *upstreamServer) *http.Client {
	tb.Helper()
	m, err := manifest.Parse("manifest.yaml", fmt.Appendf(nil, brokerManifest, u.origin))
	if err != nil {
		tb.Fatal(err)
	}
	ws, err := manifest.ParseLayer("workspace.yaml", []byte(brokerWorkspace))
	if err != nil {
		tb.Fatal(err)
	}
	set, err := policy.Compile(policy.Inputs{Manifest: m, Workspace: ws, Host: policy.Host{Sandbox: true, OutOfProcess: true}})
	if err != nil {
		tb.Fatal(err)
	}
	handles, err := secret.Handles(m)
	if err != nil {
		tb.Fatal(err)
	}
	ctx := context.Background()
	vault, err := secret.OpenFileVault(ctx, tb.TempDir(), nil)
	if err != nil {
		tb.Fatal(err)
	}
	if err := vault.Set(ctx, "api_token", secret.NewValue([]byte(benchToken))); err != nil {
		tb.Fatal(err)
	}
	ca, err := broker.LoadOrCreateCA(tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	b, err := broker.New(ln, broker.Config{
		Identity:        broker.Identity{Plugin: m.ID, Version: m.Version, ManifestDigest: m.Digest(), RunID: "bench", Process: "p1"},
		Policy:          set,
		AllowPrivate:    set.AllowPrivate(),
		Resolver:        normaResolver{},
		CA:              ca,
		UpstreamRootCAs: u.roots,
		Secrets:         handles,
		Vault:           vault,
		Audit:           audit.NewMemory(),
		Logger:          slog.New(slog.NewJSONHandler(io.Discard, nil)),
		Limits:          broker.Limits{RequestsPerSecond: -1},
	})
	if err != nil {
		tb.Fatal(err)
	}
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- b.Serve(sctx) }()
	tr := &http.Transport{
		Proxy:           http.ProxyURL(&url.URL{Scheme: "http", Host: ln.Addr().String()}),
		TLSClientConfig: &tls.Config{RootCAs: ca.Pool()},
	}
	tb.Cleanup(func() {
		tr.CloseIdleConnections()
		cancel()
		if err := <-done; err != nil {
			tb.Errorf("broker Serve = %v", err)
		}
	})
	return &http.Client{Timeout: 30 * time.Second, Transport: tr}
}

// startSmokescreen runs smokescreen with an ACL allowing only
// api.example.invalid for the client's role and returns a client that
// tunnels through it (CONNECT) and trusts the server's CA directly.
func startSmokescreen(tb testing.TB, u *upstreamServer) *http.Client {
	tb.Helper()
	logger := logrus.New()
	logger.SetOutput(io.Discard)
	logger.SetFormatter(&logrus.JSONFormatter{TimestampFormat: time.RFC3339Nano})
	logger.SetLevel(logrus.InfoLevel)

	cfg := smokescreen.NewConfig()
	logrus.StandardLogger().SetOutput(io.Discard) // NewConfig's global formatter setup logs to stderr
	cfg.Log = logger
	if err := cfg.SetAllowRanges([]string{"127.0.0.1/32"}); err != nil {
		tb.Fatal(err)
	}
	cfg.Resolver = smokeResolver{}
	cfg.ConnectTimeout = 10 * time.Second
	cfg.ExitTimeout = 2 * time.Second
	cfg.RoleFromRequest = func(*http.Request) (string, error) { return smokeRole, nil }
	egress, err := acl.New(logger, &acl.YAMLConfig{
		Version: "v1",
		Services: []acl.YAMLRule{{
			Name:         smokeRole,
			Project:      "bench",
			Action:       "enforce",
			AllowedHosts: []string{apiHost},
		}},
	}, nil)
	if err != nil {
		tb.Fatal(err)
	}
	cfg.EgressACL = egress

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	cfg.Listener = ln
	cfg.Ip = "127.0.0.1"
	cfg.Port = uint16(ln.Addr().(*net.TCPAddr).Port)
	quit := make(chan interface{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		smokescreen.StartWithConfig(cfg, quit)
	}()
	tr := &http.Transport{
		Proxy:           http.ProxyURL(&url.URL{Scheme: "http", Host: ln.Addr().String()}),
		TLSClientConfig: &tls.Config{RootCAs: u.roots},
	}
	tb.Cleanup(func() {
		tr.CloseIdleConnections()
		close(quit)
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			tb.Error("smokescreen did not stop")
		}
	})
	return &http.Client{Timeout: 30 * time.Second, Transport: tr}
}

// get sends one GET and returns the status and body.
func get(c *http.Client, rawURL string) (int, string, error) {
	resp, err := c.Get(rawURL)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

// benchGET runs keep-alive GETs of the JSON document through c and reports
// requests per second.
func benchGET(b *testing.B, c *http.Client, rawURL string) {
	b.Helper()
	// One request outside the timer: connection (and tunnel) set up.
	if st, body, err := get(c, rawURL); err != nil || st != http.StatusOK {
		b.Fatalf("warm-up GET = %d %q %v", st, body, err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	start, cpu0 := time.Now(), cpuNow()
	n := 0
	for b.Loop() {
		resp, err := c.Get(rawURL)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("status %d", resp.StatusCode)
		}
		n++
	}
	b.ReportMetric(float64(n)/time.Since(start).Seconds(), "req/s")
	if n > 0 {
		b.ReportMetric(float64(cpuNow()-cpu0)/float64(n), "cpu-ns/op")
	}
}

// cpuNow is the process's CPU time (user + system, every thread: client,
// proxy and server all run in this process). On a shared machine wall
// ns/op swings with other load; cpu-ns/op is what the request costs.
func cpuNow() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkDirectGET is the baseline: an HTTPS GET straight to the server.
func BenchmarkDirectGET(b *testing.B) {
	u := newUpstream(b)
	benchGET(b, directClient(u), u.origin+apiPath)
}

// BenchmarkNormaBrokerGET is the same GET through Norma's broker.
func BenchmarkNormaBrokerGET(b *testing.B) {
	u := newUpstream(b)
	benchGET(b, startBroker(b, u), u.origin+apiPath)
}

// BenchmarkSmokescreenGET is the same GET tunnelled through smokescreen.
func BenchmarkSmokescreenGET(b *testing.B) {
	u := newUpstream(b)
	benchGET(b, startSmokescreen(b, u), u.origin+apiPath)
}

// The NewConn variants open a new client connection for every request
// (DisableKeepAlives): direct, a TCP connect and a TLS handshake with the
// server; smokescreen, a CONNECT (ACL decision, resolution, range check,
// dial) and the client's TLS handshake with the server through the tunnel;
// Norma, a CONNECT and a TLS handshake with the broker (cached leaf), while
// its upstream connection stays pooled. They do not match 'GET$'; run them
// with ./compare_broker.sh -bench 'GETNewConn$'.

func noKeepAlive(c *http.Client) *http.Client {
	c.Transport.(*http.Transport).DisableKeepAlives = true
	return c
}

func BenchmarkDirectGETNewConn(b *testing.B) {
	u := newUpstream(b)
	benchGET(b, noKeepAlive(directClient(u)), u.origin+apiPath)
}

func BenchmarkNormaBrokerGETNewConn(b *testing.B) {
	u := newUpstream(b)
	benchGET(b, noKeepAlive(startBroker(b, u)), u.origin+apiPath)
}

func BenchmarkSmokescreenGETNewConn(b *testing.B) {
	u := newUpstream(b)
	benchGET(b, noKeepAlive(startSmokescreen(b, u)), u.origin+apiPath)
}

// TestProxySetups checks that the three paths reach the server, that the
// allow-lists are what the benchmark claims (another host is refused by
// both proxies; another path only by Norma, which sees it), and that only
// the broker injects the credential.
func TestProxySetups(t *testing.T) {
	u := newUpstream(t)
	target := u.origin + apiPath
	other := fmt.Sprintf("https://other.example.invalid:%d%s", u.port, apiPath)

	if st, body, err := get(directClient(u), target); err != nil || st != http.StatusOK || body != `[{"number":42}]` {
		t.Fatalf("direct GET = %d %q %v", st, body, err)
	}
	if u.auth() != "" {
		t.Fatalf("direct GET carried Authorization %q", u.auth())
	}

	sm := startSmokescreen(t, u)
	if st, body, err := get(sm, target); err != nil || st != http.StatusOK || body != `[{"number":42}]` {
		t.Fatalf("smokescreen GET = %d %q %v", st, body, err)
	}
	if _, _, err := get(sm, other); err == nil {
		t.Error("smokescreen tunnelled to a host outside its ACL")
	}
	if st, _, err := get(sm, u.origin+"/admin"); err != nil || st != http.StatusOK {
		t.Errorf("smokescreen GET /admin = %d %v; a CONNECT proxy cannot see the path, want it through", st, err)
	}

	br := startBroker(t, u)
	if st, body, err := get(br, target); err != nil || st != http.StatusOK || body != `[{"number":42}]` {
		t.Fatalf("broker GET = %d %q %v", st, body, err)
	}
	if u.auth() != "Bearer "+benchToken {
		t.Errorf("server saw Authorization %q through the broker, want the injected token", u.auth())
	}
	if st, _, err := get(br, other); err != nil || st != http.StatusForbidden {
		t.Errorf("broker GET other host = %d %v, want 403", st, err)
	}
	if st, _, err := get(br, u.origin+"/admin"); err != nil || st != http.StatusForbidden {
		t.Errorf("broker GET /admin = %d %v, want 403", st, err)
	}
}
