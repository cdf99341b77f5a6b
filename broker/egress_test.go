package broker

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/norma-run/norma/capability"
)

// rawRequest writes one HTTP/1.1 request with a request-target exactly
// as given (no client library normalizes it) and returns the answer.
// via "tunnel" sends it inside a CONNECT tunnel to the api origin (TLS
// terminated by the broker); via "proxy" sends it in absolute form to the
// proxy listener itself, so target must then be an absolute URL.
func (e *env) rawRequest(t *testing.T, via, target string) *http.Response {
	t.Helper()
	apiHost := strings.TrimPrefix(e.api.origin, "https://")
	var c net.Conn
	switch via {
	case "tunnel":
		tc := tls.Client(rawTunnel(t, e, apiHost), &tls.Config{RootCAs: e.ca.Pool(), ServerName: "api.example.invalid"})
		if err := tc.HandshakeContext(t.Context()); err != nil {
			t.Fatalf("TLS through the tunnel: %v", err)
		}
		c = tc
	case "proxy":
		var err error
		if c, err = net.Dial("tcp", e.proxyURL.Host); err != nil {
			t.Fatal(err)
		}
	default:
		t.Fatalf("via %q", via)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(20 * time.Second))
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\nAuthorization: token %s\r\nConnection: close\r\n\r\n", target, apiHost, e.placeholder())
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("reading the answer to GET %s: %v", target, err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body = io.NopCloser(strings.NewReader(string(body)))
	fmt.Fprintf(e.seen, "%s\n%s\n", resp.Header, body)
	return resp
}

// TestRawRequestTargets tries path tricks for real, written byte for byte
// on the request line, through a CONNECT tunnel and through the plain
// proxy, against live upstreams. A trick that normalizes to a path no rule
// permits is refused and the upstream receives no byte at all — not even a
// TLS handshake, so these rows run on a fresh broker that never connected
// to it. A spelling that normalizes to a permitted path is sent in its
// normal form: the upstream reads exactly the checked request-URI (the
// rows marked sent), which is what the netguard Transport enforces on
// every request.
func TestRawRequestTargets(t *testing.T) {
	e := newEnv(t, envOptions{})
	api := e.api.origin
	evilHost := strings.TrimPrefix(e.evil.origin, "https://")
	refused := []struct {
		name, via, target string
		status            int
		reason            capability.Reason
	}{
		{"dot segments climb out of the template", "tunnel", "/repos/acme/issues/../../admin", 403, capability.ReasonNetworkPathDenied},
		{"encoded dot segments", "tunnel", "/repos/acme/issues/%2e%2e/%2E%2E/admin", 403, capability.ReasonNetworkPathDenied},
		{"encoded slash smuggles a traversal into {owner}", "tunnel", "/repos/..%2F..%2Fadmin/issues", 403, capability.ReasonNetworkPathDenied},
		{"lower-case encoded slash", "tunnel", "/repos/acme%2fissues/42", 403, capability.ReasonNetworkPathDenied},
		{"encoded backslash", "tunnel", "/repos/..%5C..%5Cadmin/issues", 403, capability.ReasonNetworkPathDenied},
		{"encoded NUL", "tunnel", "/repos/acme%00/issues", 403, capability.ReasonNetworkPathDenied},
		{"path parameters", "tunnel", "/repos/acme/issues/..;/..;/admin", 403, capability.ReasonNetworkPathDenied},
		{"empty segment for {owner}", "tunnel", "/repos//issues", 403, capability.ReasonNetworkPathDenied},
		{"double slash names another host", "tunnel", "//" + evilHost + "/public/x", 403, capability.ReasonNetworkPathDenied},
		{"absolute form inside the tunnel names another host", "tunnel", e.evil.origin + "/public/x", 403, capability.ReasonBrokerTargetMismatch},
		{"encoded traversal in absolute form", "proxy", api + "/repos/acme/issues/%2e%2e%2f%2e%2e%2fadmin", 403, capability.ReasonNetworkPathDenied},
		{"dot segments above the root", "proxy", api + "/../../repos/acme/issues/../../../etc/passwd", 403, capability.ReasonNetworkPathDenied},
		{"double slash after the authority", "proxy", api + "//" + evilHost + "/public/x", 403, capability.ReasonNetworkPathDenied},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			resp := e.rawRequest(t, tt.via, tt.target)
			if resp.StatusCode != tt.status || capability.Reason(resp.Header.Get("X-Norma-Reason")) != tt.reason {
				body, _ := io.ReadAll(resp.Body)
				t.Errorf("GET %s = %d %s, want %d %s", tt.target, resp.StatusCode, body, tt.status, tt.reason)
			}
			if ev := e.lastEvent(); ev.Decision != "deny" || capability.Reason(ev.Reason) != tt.reason {
				t.Errorf("audit %s:%s, want deny:%s", ev.Decision, ev.Reason, tt.reason)
			}
			for _, u := range []*upstream{e.api, e.evil} {
				if n, c := u.bytesIn.Load(), u.conns.Load(); n != 0 || c != 0 {
					t.Fatalf("%s received %d bytes on %d connections", u.name, n, c)
				}
			}
		})
	}

	sent := []struct {
		name, via, target string
		wire              string // the request-URI the upstream must read
	}{
		{"dot segments that land on a permitted path", "tunnel", "/repos/acme/x/../issues", "/repos/acme/issues"},
		{"needless percent-encoding", "tunnel", "/repos/%61cme/issues/%34%32", "/repos/acme/issues/42"},
		{"encoded dot segment that lands on a permitted path", "tunnel", "/repos/acme/issues/42/%2E%2e/7", "/repos/acme/issues/7"},
		{"query kept verbatim", "tunnel", "/repos/acme/issues?q=%2F..%2F&x", "/repos/acme/issues?q=%2F..%2F&x"},
		{"upper-case host and a dot segment in absolute form", "proxy", strings.ToUpper(api) + "/repos/acme/./issues", "/repos/acme/issues"},
	}
	apiHost := strings.TrimPrefix(api, "https://")
	for _, tt := range sent {
		t.Run(tt.name, func(t *testing.T) {
			before := e.api.count()
			resp := e.rawRequest(t, tt.via, tt.target)
			if resp.StatusCode != http.StatusOK {
				body, _ := io.ReadAll(resp.Body)
				t.Fatalf("GET %s = %d %s, want 200", tt.target, resp.StatusCode, body)
			}
			if e.api.count() != before+1 {
				t.Fatalf("the upstream got %d requests, want 1", e.api.count()-before)
			}
			got := e.api.last()
			if got.RequestURI != tt.wire || got.Host != apiHost {
				t.Errorf("upstream read %q Host %q, want %q Host %q", got.RequestURI, got.Host, tt.wire, apiHost)
			}
			if !strings.Contains(got.Header.Get("Authorization"), canary) {
				t.Error("the credential was not injected")
			}
			if ae := got.Header.Get("Accept-Encoding"); ae != "" {
				t.Errorf("the broker asked for Accept-Encoding %q; it relays what the plugin asked for", ae)
			}
		})
	}
}

// TestRedirectToDeniedDestination: a live upstream answers with a
// redirect to a live server the plugin may not reach; the plugin's client
// follows it, the broker refuses the hop, and that server accepts no
// connection. The last rows show the same servers do answer a direct
// request, so it is the broker that kept them untouched.
func TestRedirectToDeniedDestination(t *testing.T) {
	e := newEnv(t, envOptions{})
	tests := []struct {
		name   string
		kind   string
		target *upstream
		reason capability.Reason
	}{
		{"origin in no rule", "other", e.other, capability.ReasonNetworkDestinationDenied},
		{"permitted origin whose address is not admitted", "loop3", e.loop3, capability.ReasonNetworkPrivateAddress},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := e.api.count()
			r := e.get(e.client, e.api.origin+"/redirect/"+tt.kind)
			if r.status != http.StatusForbidden || r.reason() != tt.reason {
				t.Errorf("GET (following) = %d %s, want 403 %s at the hop", r.status, r.body, tt.reason)
			}
			if e.api.count() != before+1 {
				t.Errorf("the first hop reached the api %d times, want 1", e.api.count()-before)
			}
			evs := e.sink.all()
			if len(evs) < 2 || evs[len(evs)-2].Decision != "allow" || evs[len(evs)-1].Decision != "deny" || capability.Reason(evs[len(evs)-1].Reason) != tt.reason {
				t.Errorf("audit ends %v, want allow (first hop) then deny:%s (the hop)", e.sink.reasons(), tt.reason)
			}
			if n, c := tt.target.bytesIn.Load(), tt.target.conns.Load(); n != 0 || c != 0 {
				t.Errorf("%s received %d bytes on %d connections", tt.target.name, n, c)
			}
			// Without following, the plugin sees the redirect itself.
			r = e.get(e.newClient(false), e.api.origin+"/redirect/"+tt.kind)
			if r.status != http.StatusFound || r.header.Get("Location") != tt.target.origin+"/x" {
				t.Errorf("GET (not following) = %d Location %q", r.status, r.header.Get("Location"))
			}
		})
	}
	for _, tt := range tests {
		t.Run("control: "+tt.name+" is live", func(t *testing.T) {
			addr := net.JoinHostPort(tt.target.ln.Addr().(*net.TCPAddr).IP.String(), fmt.Sprint(tt.target.port))
			c := &http.Client{Transport: &http.Transport{
				TLSClientConfig: &tls.Config{RootCAs: e.broker.cfg.UpstreamRootCAs},
				DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
					return (&net.Dialer{}).DialContext(ctx, network, addr)
				},
			}}
			resp, err := c.Get(tt.target.origin + "/x")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || tt.target.conns.Load() == 0 {
				t.Errorf("direct GET = %d, %d connections", resp.StatusCode, tt.target.conns.Load())
			}
		})
	}
}

// TestTransportSendsOnlyTheDecidedRequest drives the broker's netguard
// Transport directly against the live api server: a request that carries
// no decision, or the decision of another request, is refused before any
// byte is sent; a different spelling of the decided request is the same
// request and goes through (the control).
func TestTransportSendsOnlyTheDecidedRequest(t *testing.T) {
	e := newEnv(t, envOptions{})
	allowed := capability.Decision{Mode: capability.Allow, Reason: capability.ReasonAllowed}
	decidedReq := capability.Request{Kind: capability.NetRequest, Method: "GET", Origin: e.api.origin, Path: "/repos/acme/issues"}
	tests := []struct {
		name string
		ctx  func(context.Context) context.Context
		url  string
		ok   bool
	}{
		{"no decision", func(ctx context.Context) context.Context { return ctx }, e.api.origin + "/repos/acme/issues", false},
		{"decision of another path", func(ctx context.Context) context.Context { return withDecision(ctx, decidedReq, allowed) }, e.api.origin + "/repos/acme/issues/42", false},
		{"decision of another method", func(ctx context.Context) context.Context {
			r := decidedReq
			r.Method = "HEAD"
			return withDecision(ctx, r, allowed)
		}, e.api.origin + "/repos/acme/issues", false},
		{"a denial is a denial", func(ctx context.Context) context.Context {
			return withDecision(ctx, decidedReq, capability.Decision{Mode: capability.Deny, Reason: capability.ReasonNetworkPathDenied})
		}, e.api.origin + "/repos/acme/issues", false},
		{"control: another spelling of the decided request", func(ctx context.Context) context.Context { return withDecision(ctx, decidedReq, allowed) },
			strings.ToUpper(e.api.origin) + "/repos/acme/x/../%69ssues", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequestWithContext(tt.ctx(t.Context()), http.MethodGet, tt.url, nil)
			if err != nil {
				t.Fatal(err)
			}
			before := e.api.bytesIn.Load()
			resp, err := e.broker.transport.RoundTrip(req)
			if tt.ok {
				if err != nil {
					t.Fatalf("RoundTrip = %v", err)
				}
				resp.Body.Close()
				if got := e.api.last().RequestURI; got != "/repos/acme/issues" {
					t.Errorf("upstream read %q", got)
				}
				return
			}
			if err == nil {
				resp.Body.Close()
				t.Fatal("RoundTrip sent a request that was not decided")
			}
			if capability.ReasonOf(err) == "" {
				t.Errorf("RoundTrip = %v, want a capability refusal", err)
			}
			if e.api.bytesIn.Load() != before {
				t.Error("bytes reached the upstream")
			}
		})
	}
}
