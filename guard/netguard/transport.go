package netguard

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/guard/netguard/weburl"
)

// DefaultMaxResponseBytes is the response body cap used when
// Transport.MaxResponseBytes is zero.
const DefaultMaxResponseBytes = 10 << 20

// DefaultMaxRedirects is the redirect cap used by [NewClient] when
// Transport.MaxRedirects is zero.
const DefaultMaxRedirects = 10

// Transport is an http.RoundTripper that sends a request only after the
// capability policy allowed it, and only to an address the [Dialer] admits.
// It is Norma's one way onto the network for HTTP: the built-in web tools
// and the plugins' egress broker both send through it.
//
// For every request, redirect hops included, RoundTrip does, in this order:
//
//  1. [weburl.Normalize] on the request URL (userinfo and malformed URLs
//     are refused), and refuses a Host header that names another origin;
//     a request [NewRequest] made from a [Check]ed URL, and whose URL is
//     still the one it built, carries that normalization instead;
//  2. builds the URL the request will carry on the wire from the
//     normalized one and refuses the request unless its request-URI is
//     exactly the normalized path and query (what is checked is what is
//     sent);
//  3. asks Policy about capability.Request{Kind: NetRequest, Method, Origin,
//     Path}; anything but Allow refuses the request;
//  4. calls Authorize, when set, for approval or audit (it may add headers
//     to the request, e.g. a credential); an error refuses;
//  5. sends a clone of the request with that URL and dials through Dialer: one DNS lookup, every address checked, the
//     checked address dialed and re-checked at connect time;
//  6. verifies TLS against the original host name (RootCAs, or the system
//     roots when nil);
//  7. caps the response body at MaxResponseBytes.
//
// A refused request sends nothing: no DNS query, no connection. Refusals
// are returned as an error wrapping a *capability.Error (use
// capability.ReasonOf), and the request body is closed. Environment proxy
// settings are never consulted.
//
// The zero Transport refuses every request (it has no Policy). Set the
// fields before first use and do not change them afterwards; a Transport is
// then safe for concurrent use. Transport does not follow redirects; use
// [NewClient] for an http.Client with a safe redirect policy, or return
// redirects to a caller whose next hop is a new request through the same
// Transport (as the broker does).
type Transport struct {
	// Policy decides every request. nil refuses everything.
	Policy capability.Decider
	// Dialer dials the connections; nil means a zero Dialer (system
	// resolver, no private addresses).
	Dialer *Dialer
	// RootCAs verifies server certificates; nil means the system roots.
	RootCAs *x509.CertPool
	// Authorize, when non-nil, runs after the policy allowed the request and
	// before anything is sent (see the order above); a non-nil error
	// refuses the request and is returned wrapped.
	Authorize func(ctx context.Context, req *http.Request, u weburl.URL) error
	// MaxResponseBytes caps each response body: 0 means
	// DefaultMaxResponseBytes, a negative value means no cap. A larger
	// declared Content-Length fails RoundTrip, and reading past the cap
	// fails the read; both with NETWORK_RESPONSE_TOO_LARGE.
	MaxResponseBytes int64
	// CredentialHeaders are extra request headers (e.g. "X-Api-Key") that
	// NewClient strips on a cross-origin redirect, in addition to
	// Authorization, Proxy-Authorization, Cookie and WWW-Authenticate.
	CredentialHeaders []string
	// MaxRedirects caps the hops NewClient follows: 0 means
	// DefaultMaxRedirects, a negative value means redirects are refused.
	MaxRedirects int
	// TLSHandshakeTimeout and ResponseHeaderTimeout: zero means 10s and no
	// limit respectively.
	TLSHandshakeTimeout   time.Duration
	ResponseHeaderTimeout time.Duration
	// DisableCompression, when true, neither asks for gzip nor decodes it,
	// so the response is relayed as the server sent it (a proxy wants
	// this); false means net/http's transparent gzip.
	DisableCompression bool
	// MaxResponseHeaderBytes caps the response header block; zero means
	// net/http's default (1 MiB).
	MaxResponseHeaderBytes int64
	// MaxIdleConnsPerHost keeps that many idle connections per host for
	// reuse; zero means net/http's default (2).
	MaxIdleConnsPerHost int
	// HTTP1Only, when true, never negotiates HTTP/2: each request has a
	// kept-alive HTTP/1.1 connection of the per-origin pool to itself. A
	// relay of HTTP/1.1 requests (the broker) wants this: one request per
	// stream costs Go's HTTP/2 client and the server more per request
	// (framing, flow control, a writer goroutine) than it saves.
	HTTP1Only bool

	once sync.Once
	rt   *http.Transport
}

var _ http.RoundTripper = (*Transport)(nil)

func (t *Transport) transport() *http.Transport {
	t.once.Do(func() {
		d := t.Dialer
		if d == nil {
			d = &Dialer{}
		}
		hs := t.TLSHandshakeTimeout
		if hs <= 0 {
			hs = 10 * time.Second
		}
		t.rt = &http.Transport{
			Proxy:       nil, // never environment proxies
			DialContext: d.DialContext,
			TLSClientConfig: &tls.Config{
				RootCAs:    t.RootCAs,
				MinVersion: tls.VersionTLS12,
			},
			ForceAttemptHTTP2:      !t.HTTP1Only,
			TLSHandshakeTimeout:    hs,
			ResponseHeaderTimeout:  t.ResponseHeaderTimeout,
			DisableCompression:     t.DisableCompression,
			MaxResponseHeaderBytes: t.MaxResponseHeaderBytes,
			MaxIdleConns:           100,
			MaxIdleConnsPerHost:    t.MaxIdleConnsPerHost,
			IdleConnTimeout:        90 * time.Second,
			ExpectContinueTimeout:  time.Second,
		}
	})
	return t.rt
}

// CloseIdleConnections closes idle pooled connections.
func (t *Transport) CloseIdleConnections() { t.transport().CloseIdleConnections() }

// RoundTrip implements http.RoundTripper; see [Transport] for the checks.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	out, err := t.prepare(req)
	if err != nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, err
	}
	resp, err := t.transport().RoundTrip(out)
	if err != nil {
		return nil, err
	}
	resp.Request = req
	max := t.MaxResponseBytes
	if max == 0 {
		max = DefaultMaxResponseBytes
	}
	if max > 0 {
		if resp.ContentLength > max {
			resp.Body.Close()
			return nil, tooLarge(req, max)
		}
		resp.Body = &capBody{rc: resp.Body, left: max, req: req, max: max}
	}
	return resp, nil
}

// prepare runs steps 1-4 and returns the normalized outgoing request.
func (t *Transport) prepare(req *http.Request) (*http.Request, error) {
	if req == nil || req.URL == nil {
		return nil, capability.Denied(capability.ReasonNetworkInvalidURL, "", "netguard: nil request or URL")
	}
	u, pre := checked(req) // NewRequest's: normalized by Check, not again
	if !pre {
		var err error
		if u, err = weburl.Normalize(req.URL.String()); err != nil {
			return nil, fmt.Errorf("netguard: %w", err)
		}
	}
	method := req.Method
	if method == "" {
		method = http.MethodGet
	}
	creq := capability.Request{Kind: capability.NetRequest, Method: method, Origin: u.Origin, Path: u.Path}
	if !validMethod(method) {
		return nil, capability.Denied(capability.ReasonNetworkInvalidURL, creq.String(), "netguard: invalid method")
	}
	if req.Host != "" {
		h, err := weburl.NormalizeOrigin(u.Scheme + "://" + req.Host)
		if err != nil || h != u.Origin {
			return nil, capability.Denied(capability.ReasonNetworkDestinationDenied, creq.String(),
				"netguard: Host header does not name the request's origin")
		}
	}
	wire := req.URL // NewRequest built it with wireURL(u)
	if !pre {
		var err error
		if wire, err = wireURL(u); err != nil {
			return nil, capability.Denied(capability.ReasonNetworkInvalidURL, creq.String(), err.Error())
		}
	}
	ctx := req.Context()
	if t.Policy == nil {
		return nil, capability.Denied(capability.ReasonNetworkDestinationDenied, creq.String(), "netguard: no policy checker configured")
	}
	dec := t.Policy.Decide(ctx, creq)
	if dec.Mode != capability.Allow {
		if dec.Reason == "" || dec.Reason == capability.ReasonAllowed {
			dec.Reason = capability.ReasonNetworkDestinationDenied
		}
		if dec.Request == "" {
			dec.Request = creq.String()
		}
		dec.Mode = min(dec.Mode, capability.ApprovalRequired)
		return nil, fmt.Errorf("netguard: %s: %w", creq, &capability.Error{Decision: dec, Detail: "request refused by policy (" + dec.Mode.String() + ")"})
	}
	if t.Authorize != nil {
		if err := t.Authorize(ctx, req, u); err != nil {
			return nil, fmt.Errorf("netguard: %s: authorize: %w", creq, err)
		}
	}
	// Copied only now: Authorize may add headers (credentials) to req. A
	// shallow copy: the caller's request keeps its URL, Host and Method,
	// and shares the headers, which neither this Transport nor net/http's
	// changes (a RoundTripper must not modify its request).
	out := new(http.Request)
	*out = *req
	out.URL, out.Host, out.Method = wire, "", method
	return out, nil
}

// wireURL is the one place a normalized URL becomes the URL of a request
// on the wire. Its request-URI is checked to be exactly u.RequestURI(), and
// its host carries the port only when it is not the scheme's default (the
// Host header is taken from it).
func wireURL(u weburl.URL) (*url.URL, error) {
	path, err := url.PathUnescape(u.Path)
	if err != nil {
		return nil, errors.New("netguard: path does not unescape")
	}
	host := u.HostPort()
	if u.Port == 443 && u.Scheme == "https" || u.Port == 80 && u.Scheme == "http" {
		host = u.Host
		if isIPv6(host) {
			host = "[" + host + "]"
		}
	}
	w := &url.URL{Scheme: u.Scheme, Host: host, Path: path, RawPath: u.Path, RawQuery: u.RawQuery}
	if got, want := w.RequestURI(), u.RequestURI(); got != want {
		// What goes on the wire must be exactly what was checked.
		return nil, errors.New("netguard: request URI " + strconv.Quote(got) + " differs from the checked " + strconv.Quote(want))
	}
	return w, nil
}

func isIPv6(h string) bool {
	for i := 0; i < len(h); i++ {
		if h[i] == ':' {
			return true
		}
	}
	return false
}

// validMethod reports whether m is an RFC 9110 token.
func validMethod(m string) bool {
	if m == "" {
		return false
	}
	for i := 0; i < len(m); i++ {
		c := m[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '!', c == '#', c == '$', c == '%', c == '&', c == '\'', c == '*', c == '+', c == '-', c == '.', c == '^', c == '_', c == '`', c == '|', c == '~':
		default:
			return false
		}
	}
	return true
}

func tooLarge(req *http.Request, max int64) error {
	return &capability.Error{
		Decision: capability.Decision{Mode: capability.Deny, Reason: capability.ReasonNetworkResponseTooLarge, Layer: "guard", Request: req.Method + " " + req.URL.Scheme + "://" + req.URL.Host + req.URL.EscapedPath()},
		Detail:   "response body exceeds " + strconv.FormatInt(max, 10) + " bytes",
	}
}

// capBody fails reads once more than max bytes were returned.
type capBody struct {
	rc   io.ReadCloser
	left int64
	max  int64
	req  *http.Request
}

func (b *capBody) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, tooLarge(b.req, b.max)
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.rc.Read(p)
	if int64(n) > b.left {
		n = int(b.left)
		b.left = -1
		return n, tooLarge(b.req, b.max)
	}
	b.left -= int64(n)
	return n, err
}

func (b *capBody) Close() error { return b.rc.Close() }

// NewClient returns an http.Client that sends every request through t and
// whose redirect policy, run on every hop before it is sent:
//
//   - refuses more than t.MaxRedirects hops (NETWORK_REDIRECT_DENIED);
//   - refuses a downgrade: an http hop after any https request in the chain
//     (NETWORK_REDIRECT_DENIED);
//   - strips Authorization, Proxy-Authorization, Cookie, WWW-Authenticate and
//     t.CredentialHeaders once the chain has left the original origin
//     (scheme, host and port), and keeps them stripped for the rest of it;
//   - leaves the policy check of the new URL to t.RoundTrip, which checks
//     each hop as a new request before anything is sent.
//
// The client has no cookie jar and no timeout (use the request context).
func NewClient(t *Transport) *http.Client {
	return &http.Client{Transport: t, CheckRedirect: t.checkRedirect}
}

func (t *Transport) checkRedirect(req *http.Request, via []*http.Request) error {
	max := t.MaxRedirects
	if max == 0 {
		max = DefaultMaxRedirects
	}
	target := ""
	if req.URL != nil {
		target = weburl.Redact(req.URL.String())
	}
	if max < 0 || len(via) > max {
		return capability.Denied(capability.ReasonNetworkRedirectDenied, target, "netguard: too many redirects")
	}
	u, err := weburl.Normalize(req.URL.String())
	if err != nil {
		return err
	}
	first, err := weburl.Normalize(via[0].URL.String())
	if err != nil {
		return err
	}
	crossed := u.Origin != first.Origin
	for _, v := range via {
		if v.URL.Scheme == "https" && u.Scheme == "http" {
			return capability.Denied(capability.ReasonNetworkRedirectDenied, u.Origin+u.Path, "netguard: redirect from https to http")
		}
		if vu, err := weburl.Normalize(v.URL.String()); err != nil || vu.Origin != first.Origin {
			crossed = true
		}
	}
	if crossed {
		for _, h := range [...]string{"Authorization", "Proxy-Authorization", "Cookie", "Cookie2", "WWW-Authenticate"} {
			req.Header.Del(h)
		}
		for _, h := range t.CredentialHeaders {
			req.Header.Del(h)
		}
	}
	return nil
}
