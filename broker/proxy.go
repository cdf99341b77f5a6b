package broker

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/norma-run/norma/approval"
	"github.com/norma-run/norma/audit"
	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/guard/netguard"
	"github.com/norma-run/norma/guard/netguard/weburl"
	"github.com/norma-run/norma/secret"
)

// denial is a refusal with the HTTP status it is answered with.
type denial struct {
	status int
	err    *capability.Error
	close  bool // the plugin's connection ends after this answer
}

func deny(status int, reason capability.Reason, req, detail string) *denial {
	return &denial{status: status, err: capability.Denied(reason, req, detail)}
}

// fromError turns an error into a denial, keeping a capability reason.
func fromError(status int, fallback capability.Reason, req string, err error) *denial {
	if ce, ok := errors.AsType[*capability.Error](err); ok {
		c := *ce
		if c.Decision.Request == "" {
			c.Decision.Request = req
		}
		return &denial{status: status, err: &c}
	}
	return deny(status, fallback, req, err.Error())
}

// exchange is the state of one proxied request, for audit and logs.
type exchange struct {
	start    time.Time
	method   string
	origin   string
	target   string // method + normalized URL, hashed into the audit event
	decision capability.Decision
	secrets  string // the names of the secrets injected, comma-separated
	approval string
	status   int
}

// serveProxy is the handler of the proxy listener.
func (b *Broker) serveProxy(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodConnect {
		b.connect(w, r)
		return
	}
	if !r.URL.IsAbs() || r.URL.Scheme != "http" && r.URL.Scheme != "https" {
		x := &exchange{start: b.now(), method: r.Method}
		b.refuse(w, r.Context(), x, deny(http.StatusBadRequest, capability.ReasonBrokerProtocol, r.Method+" "+r.URL.Path,
			"broker: not a proxy request (send absolute-form requests or CONNECT)"))
		return
	}
	b.forward(w, r, r.URL.String(), nil)
}

// connect answers CONNECT: it hijacks the connection, terminates TLS with
// a certificate for the CONNECT target (the SNI must match it) and serves
// HTTP/1.1 requests inside, each checked like any other.
func (b *Broker) connect(w http.ResponseWriter, r *http.Request) {
	x := &exchange{start: b.now(), method: http.MethodConnect}
	target := r.Host
	host, port, err := net.SplitHostPort(target)
	if err != nil || host == "" {
		b.refuse(w, r.Context(), x, deny(http.StatusBadRequest, capability.ReasonBrokerProtocol, "CONNECT "+target, "broker: CONNECT needs host:port"))
		return
	}
	origin, err := weburl.NormalizeOrigin("https://" + target)
	if err != nil {
		b.refuse(w, r.Context(), x, fromError(http.StatusForbidden, capability.ReasonNetworkInvalidURL, "CONNECT "+target, err))
		return
	}
	x.origin = origin
	nu, _ := weburl.Normalize(origin + "/")
	hj, ok := w.(http.Hijacker)
	if !ok {
		b.refuse(w, r.Context(), x, deny(http.StatusBadRequest, capability.ReasonBrokerProtocol, "CONNECT "+origin, "broker: cannot hijack"))
		return
	}
	conn, brw, err := hj.Hijack()
	if err != nil {
		return
	}
	if !b.track(conn, true) {
		conn.Close()
		return
	}
	defer b.track(conn, false)
	if _, err := conn.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n")); err != nil {
		conn.Close()
		return
	}
	var raw net.Conn = conn
	if n := brw.Reader.Buffered(); n > 0 {
		pre, _ := brw.Reader.Peek(n)
		raw = &prefixConn{Conn: conn, prefix: bytes.Clone(pre)}
	}
	var sniErr *denial
	cfg := &tls.Config{
		MinVersion: tls.VersionTLS12,
		NextProtos: []string{"http/1.1"},
		GetCertificate: func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
			if d := checkSNI(hello.ServerName, nu.Host, port, origin); d != nil {
				sniErr = d
				return nil, d.err
			}
			return b.ca.leaf(nu.Host)
		},
	}
	tc := tls.Server(raw, cfg)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), b.lim.TLSHandshakeTimeout)
	err = tc.HandshakeContext(ctx)
	cancel()
	if err != nil {
		tc.Close()
		d := sniErr
		if d == nil {
			d = deny(http.StatusBadRequest, capability.ReasonBrokerProtocol, "CONNECT "+origin, "broker: TLS handshake with the plugin failed (tunnels must speak TLS)")
		}
		b.record(context.WithoutCancel(r.Context()), x, d)
		return
	}
	// Close ends tunnels by closing their conns; the tunnel's context ends
	// with an upstream timeout (see tunnel) or when the tunnel is over.
	tctx, end := context.WithCancelCause(context.WithoutCancel(r.Context()))
	defer end(nil)
	tun := &tunnel{origin: origin, cancel: end}
	tun.srv = b.newServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.forward(w, r, "https://"+target+r.URL.RequestURI(), tun)
		tun.done()
	}))
	tun.srv.BaseContext = func(net.Listener) context.Context { return tctx }
	_ = tun.srv.Serve(newOneConnListener(tc))
	tun.stop()
}

// checkSNI requires the SNI to name the CONNECT target; an IP target may
// come without SNI (clients send none for IP literals).
func checkSNI(sni, host, port, origin string) *denial {
	if sni == "" {
		if _, err := netip.ParseAddr(host); err == nil {
			return nil
		}
		return deny(http.StatusForbidden, capability.ReasonBrokerTargetMismatch, "CONNECT "+origin, "broker: TLS ClientHello without SNI")
	}
	got, err := weburl.NormalizeOrigin("https://" + net.JoinHostPort(sni, port))
	if err != nil || got != origin {
		return deny(http.StatusForbidden, capability.ReasonBrokerTargetMismatch, "CONNECT "+origin, "broker: TLS SNI does not name the CONNECT target")
	}
	return nil
}

// isHop reports whether the canonical field name k is hop-by-hop: one
// that is never forwarded in either direction (RFC 9110, 7.6.1), or one the
// Connection field of the same message names (named, canonicalized).
func isHop(k string, named []string) bool {
	switch k {
	case "Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization",
		"Te", "Trailer", "Transfer-Encoding", "Upgrade":
		return true
	}
	for _, n := range named {
		if n == k {
			return true
		}
	}
	return false
}

// connectionNamed returns the canonical field names that h's Connection
// fields list; nil (no allocation) when there is no Connection field.
func connectionNamed(h http.Header) []string {
	var named []string
	for _, f := range h["Connection"] {
		for k := range strings.SplitSeq(f, ",") {
			if k = textproto.TrimString(k); k != "" {
				named = append(named, textproto.CanonicalMIMEHeaderKey(k))
			}
		}
	}
	return named
}

// copyEndToEnd adds the end-to-end fields of src to dst: hop-by-hop fields
// (isHop) and the fields named in drop are left out, and each value goes
// through f when f is not nil. It is one copy, with one backing array for
// every value, instead of a clone followed by deletions.
func copyEndToEnd(dst, src http.Header, f func(string) string, drop ...string) {
	named := connectionNamed(src)
	n := 0
	for _, vs := range src {
		n += len(vs)
	}
	all := make([]string, 0, n)
keys:
	for k, vs := range src {
		k = textproto.CanonicalMIMEHeaderKey(k) // as Header.Add and Del; no copy when canonical
		if isHop(k, named) {
			continue
		}
		for _, d := range drop {
			if k == d {
				continue keys
			}
		}
		start := len(all)
		for _, v := range vs {
			if f != nil {
				v = f(v)
			}
			all = append(all, v)
		}
		vals := all[start:len(all):len(all)]
		if old := dst[k]; len(old) > 0 {
			vals = append(old, vals...)
		}
		dst[k] = vals
	}
}

// forward runs the per-request pipeline. raw is the absolute URL as the
// plugin sent it; tun is the CONNECT tunnel (nil for plain proxying).
func (b *Broker) forward(w http.ResponseWriter, r *http.Request, raw string, tun *tunnel) {
	x := &exchange{start: b.now(), method: r.Method}
	if tun != nil {
		x.origin = tun.origin
	}
	ctx := r.Context()
	if d := b.prepare(w, r, raw, tun, x); d != nil {
		b.refuse(w, ctx, x, d)
		return
	}
}

// prepare checks, authorizes and sends the request; it returns a denial
// when nothing was (or can be) sent.
func (b *Broker) prepare(w http.ResponseWriter, r *http.Request, raw string, tun *tunnel, x *exchange) *denial {
	ctx := r.Context()
	if !b.rate.allow() {
		return deny(http.StatusTooManyRequests, capability.ReasonBrokerRateLimited, r.Method+" "+x.origin, "broker: request rate limit exceeded")
	}
	// netguard's normalization, which its Transport then need not repeat.
	checked, err := netguard.Check(raw)
	if err != nil {
		return fromError(http.StatusForbidden, capability.ReasonNetworkInvalidURL, r.Method, err)
	}
	u := checked.URL()
	us := u.String()
	x.origin = u.Origin
	x.target = r.Method + " " + us
	// creq.String() names the request in denials; it is made only for them.
	creq := capability.Request{Kind: capability.NetRequest, Method: r.Method, Origin: u.Origin, Path: u.Path}
	if tun != nil && u.Origin != tun.origin {
		return deny(http.StatusForbidden, capability.ReasonBrokerTargetMismatch, creq.String(), "broker: request target does not name the CONNECT target")
	}
	if r.Host != "" && !isAuthorityOf(r.Host, raw, u.Scheme) {
		h, err := weburl.NormalizeOrigin(u.Scheme + "://" + r.Host)
		if err != nil || h != u.Origin {
			return deny(http.StatusForbidden, capability.ReasonBrokerTargetMismatch, creq.String(), "broker: Host header does not name the request's origin")
		}
	}
	if r.Header.Get("Upgrade") != "" {
		return deny(http.StatusForbidden, capability.ReasonBrokerProtocol, creq.String(), "broker: protocol upgrades (WebSocket, h2c) are not proxied")
	}
	if r.ContentLength > b.lim.MaxRequestBytes {
		return deny(http.StatusRequestEntityTooLarge, capability.ReasonNetworkRequestTooLarge, creq.String(), "broker: request body exceeds "+strconv.FormatInt(b.lim.MaxRequestBytes, 10)+" bytes")
	}
	var body []byte
	if r.Body != http.NoBody { // the server's body of a request without one
		body, err = io.ReadAll(http.MaxBytesReader(w, r.Body, b.lim.MaxRequestBytes))
		if err != nil {
			if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
				return deny(http.StatusRequestEntityTooLarge, capability.ReasonNetworkRequestTooLarge, creq.String(), "broker: request body exceeds "+strconv.FormatInt(b.lim.MaxRequestBytes, 10)+" bytes")
			}
			return deny(http.StatusBadRequest, capability.ReasonBrokerProtocol, creq.String(), "broker: reading the request body failed")
		}
	}
	// The body is already read; the server answered 100 itself.
	hdr := make(http.Header, len(r.Header))
	copyEndToEnd(hdr, r.Header, nil, "Expect")

	// Placeholders: only in headers, only toward their purpose.
	inHeaders, d := b.scanPlaceholders(raw, us, u.Origin, body, hdr, creq)
	if d != nil {
		return d
	}

	dec := b.policy.Decide(ctx, creq)
	x.decision = dec
	if dec.Mode == capability.Deny {
		if dec.Reason == "" || dec.Reason == capability.ReasonAllowed {
			dec.Reason = capability.ReasonNetworkDestinationDenied
		}
		return &denial{status: http.StatusForbidden, err: &capability.Error{Decision: requestNamed(dec, creq), Detail: "broker: request refused by policy"}}
	}
	// What the request carries: a credential or identifier in its URL,
	// headers or body (the detector engine) is refused, or asked.
	if ed, ok := b.egress(raw, hdr, body, u.Origin); ok {
		x.decision = ed
		if ed.Mode == capability.Deny {
			return &denial{status: http.StatusForbidden, err: &capability.Error{Decision: requestNamed(ed, creq), Detail: "broker: the request carries " + ed.Rule + "; nothing was sent"}}
		}
		dec = ed
	}

	// Credentials for this origin: each use is a secret.use decision.
	var injectBuf [4]*binding // a plugin has few secrets per origin
	inject := injectBuf[:0]
	for _, bd := range b.bindings {
		if bd.h.Purpose() != u.Origin {
			continue
		}
		sreq := capability.Request{Kind: capability.SecretUse, Secret: bd.h.Name(), Origin: u.Origin}
		sd := b.policy.Decide(ctx, sreq)
		if sd.Mode != capability.Allow {
			sd.Mode = capability.Deny
			if sd.Reason == capability.ReasonAllowed || sd.Reason == "" {
				sd.Reason = capability.ReasonSecretUndeclared
			}
			return &denial{status: http.StatusForbidden, err: &capability.Error{Decision: requestNamed(sd, sreq), Detail: "broker: secret " + bd.h.Name() + " may not be used here"}}
		}
		inject = append(inject, bd)
	}
	for name := range inHeaders {
		if !containsBinding(inject, name) {
			// scanPlaceholders already refused other origins; fail closed.
			return deny(http.StatusForbidden, capability.ReasonSecretOriginMismatch, creq.String(), "broker: placeholder for "+name+" toward another origin")
		}
	}
	var valuesBuf [len(injectBuf)]secret.Value
	values := valuesBuf[:0]
	for i, bd := range inject {
		v, err := b.value(ctx, bd)
		if err != nil {
			return fromError(http.StatusForbidden, capability.ReasonSecretUnavailable, "secret.use "+bd.h.Name()+" "+u.Origin, err)
		}
		values = append(values, v)
		if i > 0 {
			x.secrets += ","
		}
		x.secrets += bd.h.Name()
	}

	var ticket approval.Ticket
	if dec.Mode == capability.ApprovalRequired {
		if b.approver == nil {
			return &denial{status: http.StatusForbidden, err: &capability.Error{Decision: requestNamed(dec, creq), Detail: "broker: this request needs approval and no approver is configured"}}
		}
		sum := sha256.Sum256(body)
		hash, err := ActionHash(b.id, r.Method, us, "sha256:"+hex.EncodeToString(sum[:]))
		if err != nil {
			return deny(http.StatusForbidden, capability.ReasonApprovalRequired, creq.String(), "broker: cannot bind an approval: "+err.Error())
		}
		// The body is what the request sends: the preview shows it whole
		// (redacted, bounded with approval's explicit marker).
		areq := approval.Request{
			RunID: b.id.RunID, Plugin: b.id.Plugin, PluginVersion: b.id.Version, ManifestDigest: b.id.ManifestDigest,
			Tool: ToolNetRequest, Effect: "net.request", Target: r.Method + " " + u.Origin + u.Path,
			Preview: approval.BoundPreview(b.red.Redact(string(body))), ActionHash: hash,
		}
		actx, cancel := context.WithTimeout(ctx, b.lim.ApprovalTimeout)
		ticket, err = b.approver.Authorize(actx, areq)
		cancel()
		if err != nil {
			return fromError(http.StatusForbidden, capability.ReasonApprovalDenied, creq.String(), err)
		}
		if ticket.ApprovalID == "" || (ticket.ActionHash != "" && ticket.ActionHash != hash) {
			return deny(http.StatusForbidden, capability.ReasonApprovalMismatch, creq.String(), "broker: the approver returned no ticket for this request")
		}
		x.approval = ticket.ApprovalID
	}

	// Inject the credentials; the request is otherwise the one checked.
	for i, bd := range inject {
		injectHeader(hdr, bd, values[i])
	}
	if ticket.IdempotencyKey != "" {
		hdr.Set("Idempotency-Key", ticket.IdempotencyKey)
	}

	if dec.Mode == capability.ApprovalRequired {
		dec.Reason = capability.ReasonAllowed // approved: x.approval names the approval
	}
	dec.Mode = capability.Allow
	x.decision = dec

	// The request for netguard's Transport: NewRequest builds the wire URL
	// from netguard's own normalization (Check), refusing a request-URI
	// that is not the checked path, and the Host header from it (prepare
	// checked the plugin's); the Transport sends only if what it checked
	// is creq.
	// One deadline bounds the upstream exchange, body included; it ends
	// early when the plugin goes away (ctx is the plugin's request). In a
	// tunnel it is the tunnel's reused timer (see tunnel), armed once the
	// decision is recorded.
	uctx := ctx
	if tun == nil {
		var cancel context.CancelFunc
		uctx, cancel = context.WithTimeout(ctx, b.lim.UpstreamTimeout)
		defer cancel()
	}
	out, err := netguard.NewRequest(withDecision(uctx, creq, dec), r.Method, checked, hdr, body)
	if err != nil {
		return fromError(http.StatusForbidden, capability.ReasonNetworkInvalidURL, creq.String(), err)
	}

	// The decision is durable before a byte leaves.
	if err := b.record(ctx, x, nil); err != nil {
		return deny(http.StatusForbidden, capability.ReasonAuditUnavailable, creq.String(), "broker: the decision could not be audited")
	}
	if f, ok := b.approver.(approval.Finisher); ok && ticket.ApprovalID != "" {
		// Told once the upstream exchange is over, so a crash in between
		// can be told apart from a completed call.
		defer func() {
			if err := f.Finish(context.WithoutCancel(ctx), ticket); err != nil {
				b.log.LogAttrs(ctx, slog.LevelError, "broker: approval finish failed", slog.String("approval", ticket.ApprovalID), slog.String("err", err.Error()))
			}
		}()
	}
	if tun != nil {
		tun.arm(b.lim.UpstreamTimeout)
		defer tun.disarm()
	}
	resp, err := b.transport.RoundTrip(out)
	if err != nil {
		d := b.upstreamDenial(creq.String(), uctx, err)
		b.refuse(w, ctx, x, d)
		return nil
	}
	defer resp.Body.Close()
	b.relay(w, ctx, x, resp)
	return nil
}

// isAuthorityOf reports whether host is, byte for byte, the authority of
// the URL raw, whose scheme Normalize found to be scheme: then raw's
// normalized origin is host's, with nothing more to check. It is the
// common case (a tunnelled request's URL is built from its CONNECT target,
// which the Host header repeats); anything else is normalized and compared.
func isAuthorityOf(host, raw, scheme string) bool {
	if strings.ContainsAny(host, "/?#@\\") {
		return false
	}
	rest, ok := strings.CutPrefix(raw, scheme+"://")
	rest, ok2 := strings.CutPrefix(rest, host)
	return ok && ok2 && rest != "" && rest[0] == '/'
}

// requestNamed returns dec naming req when the decider left it unnamed.
func requestNamed(dec capability.Decision, req capability.Request) capability.Decision {
	if dec.Request == "" {
		dec.Request = req.String()
	}
	return dec
}

func containsBinding(bs []*binding, name string) bool {
	for _, b := range bs {
		if b.h.Name() == name {
			return true
		}
	}
	return false
}

// injectHeader replaces the binding's placeholder in every header value
// by the value, then makes sure the declared header carries it.
func injectHeader(h http.Header, bd *binding, v secret.Value) {
	tok := bd.ph.Token()
	var raw string // made only when a header needs it
	reveal := func() string {
		if raw == "" {
			raw = string(v.Reveal())
		}
		return raw
	}
	for _, vs := range h {
		for i, s := range vs {
			if strings.Contains(s, tok) {
				s = strings.ReplaceAll(s, bd.phs, reveal())
				vs[i] = strings.ReplaceAll(s, tok, reveal())
			}
		}
	}
	if cur := h.Values(bd.h.Header()); len(cur) == 1 && strings.Contains(cur[0], reveal()) {
		return // the plugin placed it itself (e.g. "token <placeholder>")
	}
	h.Set(bd.h.Header(), bd.h.HeaderValue(v))
}

// scanPlaceholders refuses a placeholder in the URL or body, or in a
// header toward another origin than its purpose; it returns the names
// whose placeholder appears in headers toward their purpose.
func (b *Broker) scanPlaceholders(raw, us, origin string, body []byte, hdr http.Header, creq capability.Request) (map[string]bool, *denial) {
	mismatch := func(name, where string) *denial {
		return deny(http.StatusForbidden, capability.ReasonSecretOriginMismatch, creq.String(),
			"broker: the placeholder of secret "+name+" appears in the "+where+"; it is only replaced in headers toward "+b.purposeOf(name))
	}
	undeclared := func(where string) *denial {
		return deny(http.StatusForbidden, capability.ReasonSecretUndeclared, creq.String(),
			"broker: a placeholder that this broker did not issue appears in the "+where)
	}
	unq, _ := url.QueryUnescape(raw)
	for _, s := range [...]string{raw, us, unq} {
		if name := b.tokenIn(s); name != "" {
			return nil, mismatch(name, "URL")
		}
		if hasPlaceholder(s) {
			return nil, undeclared("URL")
		}
	}
	if name := b.tokenInBytes(body); name != "" {
		return nil, mismatch(name, "body")
	}
	if len(secret.ScanPlaceholders(body)) > 0 {
		return nil, undeclared("body")
	}
	var found map[string]bool
	for k, vs := range hdr {
		if name := b.tokenInName(k); name != "" {
			return nil, mismatch(name, "header name "+k)
		}
		for _, s := range vs {
			for _, bd := range b.bindings {
				if !strings.Contains(s, bd.ph.Token()) {
					continue
				}
				if bd.h.Purpose() != origin {
					return nil, mismatch(bd.h.Name(), "header "+k+" toward "+origin)
				}
				if found == nil {
					found = map[string]bool{}
				}
				found[bd.h.Name()] = true
			}
			if !strings.Contains(s, secret.PlaceholderPrefix) {
				continue // what ScanPlaceholders would find starts with it
			}
			for _, m := range secret.ScanPlaceholders([]byte(s)) {
				if !b.issued(m.Placeholder) {
					return nil, undeclared("header " + k)
				}
			}
		}
	}
	return found, nil
}

// hasPlaceholder reports whether s holds a well-formed placeholder (any
// broker's), without copying s when it cannot.
func hasPlaceholder(s string) bool {
	return strings.Contains(s, secret.PlaceholderPrefix) && len(secret.ScanPlaceholders([]byte(s))) > 0
}

// tokenInName is tokenIn for a header field name, which the server has
// canonicalized ("X-Norma-Abc..."): tokens are lower-case hex, so the
// name is compared in ASCII lower case (field names are ASCII tokens).
func (b *Broker) tokenInName(k string) string {
	if len(b.bindings) == 0 {
		return ""
	}
	var buf [128]byte
	lower := buf[:0]
	if len(k) > len(buf) {
		lower = make([]byte, 0, len(k))
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		lower = append(lower, c)
	}
	return b.tokenInBytes(lower)
}

func (b *Broker) purposeOf(name string) string {
	for _, bd := range b.bindings {
		if bd.h.Name() == name {
			return bd.h.Purpose()
		}
	}
	return "(none)"
}

func (b *Broker) issued(p secret.Placeholder) bool {
	for _, bd := range b.bindings {
		if bd.ph == p {
			return true
		}
	}
	return false
}

func (b *Broker) tokenIn(s string) string {
	for _, bd := range b.bindings {
		if strings.Contains(s, bd.ph.Token()) {
			return bd.h.Name()
		}
	}
	return ""
}

func (b *Broker) tokenInBytes(p []byte) string {
	for _, bd := range b.bindings {
		if bytes.Contains(p, []byte(bd.ph.Token())) {
			return bd.h.Name()
		}
	}
	return ""
}

func (b *Broker) upstreamDenial(reqStr string, ctx context.Context, err error) *denial {
	if ce, ok := errors.AsType[*capability.Error](err); ok {
		c := *ce
		status := http.StatusForbidden
		switch c.Decision.Reason {
		case capability.ReasonNetworkResolveFailed, capability.ReasonNetworkResponseTooLarge:
			status = http.StatusBadGateway
		}
		return &denial{status: status, err: &c}
	}
	if context.Cause(ctx) == errUpstreamTimeout {
		d := deny(http.StatusGatewayTimeout, capability.ReasonTimeout, reqStr, "broker: upstream timed out")
		d.close = true // the tunnel's context is over (see tunnel)
		return d
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return deny(http.StatusGatewayTimeout, capability.ReasonTimeout, reqStr, "broker: upstream timed out")
	}
	return deny(http.StatusBadGateway, capability.ReasonNetworkUpstreamFailed, reqStr, "broker: upstream request failed: "+err.Error())
}

// relay copies the upstream response to the plugin: hop-by-hop headers
// dropped, secret values masked in headers and body. The body cap is the
// Transport's (MaxResponseBytes): a larger declared length never gets
// here, and reading past the cap fails with NETWORK_RESPONSE_TOO_LARGE.
func (b *Broker) relay(w http.ResponseWriter, ctx context.Context, x *exchange, resp *http.Response) {
	copyEndToEnd(w.Header(), resp.Header, b.red.Redact)
	x.status = resp.StatusCode
	w.WriteHeader(resp.StatusCode)
	var out io.Writer = w
	if resp.ContentLength < 0 {
		out = flushWriter{w: w, rc: http.NewResponseController(w)}
	}
	n, err := io.Copy(out, b.red.MaskReader(resp.Body))
	switch {
	case err == nil:
	case capability.ReasonOf(err) == capability.ReasonNetworkResponseTooLarge:
		_ = b.record(context.WithoutCancel(ctx), x, fromError(http.StatusBadGateway, capability.ReasonNetworkResponseTooLarge, x.target, err))
		panic(http.ErrAbortHandler) // the plugin sees a broken body, never a silently short one
	default:
		b.log.LogAttrs(ctx, slog.LevelWarn, "broker: response body failed", slog.String("origin", x.origin), slog.Int64("bytes", n))
		panic(http.ErrAbortHandler)
	}
	b.logLine(ctx, slog.LevelInfo, "broker: relayed", x, nil)
}

type flushWriter struct {
	w  io.Writer
	rc *http.ResponseController
}

func (f flushWriter) Write(p []byte) (int, error) {
	n, err := f.w.Write(p)
	if err == nil {
		_ = f.rc.Flush()
	}
	return n, err
}

// refuse records and answers a denial.
func (b *Broker) refuse(w http.ResponseWriter, ctx context.Context, x *exchange, d *denial) {
	_ = b.record(context.WithoutCancel(ctx), x, d) // already refusing: nothing more to fail closed on
	body, _ := json.Marshal(struct {
		Reason  capability.Reason `json:"reason"`
		Message string            `json:"message"`
		Layer   capability.Layer  `json:"layer,omitempty"`
		Rule    string            `json:"rule,omitempty"`
		Request string            `json:"request,omitempty"`
	}{d.err.Decision.Reason, b.red.Redact(d.err.Error()), d.err.Decision.Layer, d.err.Decision.Rule, b.red.Redact(d.err.Decision.Request)})
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Norma-Reason", string(d.err.Decision.Reason))
	h.Set("Cache-Control", "no-store")
	if d.close {
		h.Set("Connection", "close")
	}
	h.Set("Content-Length", strconv.Itoa(len(body)+1))
	w.WriteHeader(d.status)
	w.Write(append(body, '\n'))
}

// record writes the audit event of x (a denial when d is set) and, for a
// denial, a log line; an allowed request has its one log line when it was
// relayed (relay), with the status. Its error matters only before an
// allowed request is sent.
func (b *Broker) record(ctx context.Context, x *exchange, d *denial) error {
	dec := x.decision
	if d != nil {
		dec = d.err.Decision
		dec.Mode = capability.Deny
	}
	ev := audit.Event{
		Type:             audit.TypeCapabilityDecision,
		Time:             b.now(),
		RunID:            b.id.RunID,
		Principal:        b.principal,
		Plugin:           b.id.Plugin,
		PluginVersion:    b.id.Version,
		Tool:             ToolNetRequest,
		CapabilityKind:   capability.NetRequest.String(),
		Decision:         dec.Mode.String(),
		Reason:           string(dec.Reason),
		Layer:            string(dec.Layer),
		Rule:             dec.Rule,
		ManifestDigest:   b.id.ManifestDigest,
		PolicyGeneration: dec.PolicyGeneration,
		ApprovalID:       x.approval,
		TargetHash:       audit.HashTarget(x.target),
		DurationMS:       b.now().Sub(x.start).Milliseconds(),
		IsError:          d != nil,
		Detail:           map[string]string{"method": x.method, "origin": x.origin, "process": b.id.Process},
	}
	if ev.ManifestDigest == "" {
		ev.ManifestDigest = dec.ManifestDigest
	}
	if x.secrets != "" {
		ev.Detail["secrets"] = x.secrets
	}
	if dec.Declared != "" {
		// The manifest entry the request matched, for `norma plugin usage`.
		ev.Detail["declared"] = dec.Declared
	}
	if d != nil {
		ev.Detail["status"] = strconv.Itoa(d.status)
	}
	err := b.sink.Record(ctx, ev)
	if d != nil {
		b.logLine(ctx, slog.LevelWarn, "broker: decision", x, d)
	}
	if err != nil {
		b.log.LogAttrs(ctx, slog.LevelError, "broker: audit failed", slog.String("error", b.red.Redact(err.Error())))
	}
	return err
}

// logLine logs the one line of x (a denial when d is set): method,
// origin, reason, status and the secrets used, never a value; the plugin
// and process are on every line of b.log (New). The record goes straight
// to the handler without a source position (Logger.LogAttrs walks the
// stack for one on every call, and the broker's loggers report none), its
// attributes inside the record; nothing is built when the level is
// disabled.
func (b *Broker) logLine(ctx context.Context, level slog.Level, msg string, x *exchange, d *denial) {
	h := b.log.Handler()
	if !h.Enabled(ctx, level) {
		return
	}
	r := slog.NewRecord(time.Now(), level, msg, 0)
	r.AddAttrs(slog.String("method", x.method), slog.String("origin", x.origin))
	if d != nil {
		r.AddAttrs(slog.String("reason", string(d.err.Decision.Reason)), slog.Int("status", d.status))
	} else {
		r.AddAttrs(slog.String("reason", string(x.decision.Reason)))
		if x.status != 0 {
			r.AddAttrs(slog.Int("status", x.status))
		}
	}
	if x.secrets != "" {
		r.AddAttrs(slog.String("secrets", x.secrets))
	}
	_ = h.Handle(ctx, r)
}

// rejectConn answers a connection over the limit and closes it.
func (b *Broker) rejectConn(ctx context.Context, c net.Conn) {
	defer c.Close()
	x := &exchange{start: b.now(), method: "CONNECT"}
	d := deny(http.StatusTooManyRequests, capability.ReasonBrokerConnectionLimit, "connection from "+c.RemoteAddr().String(), "broker: too many concurrent connections")
	_ = b.record(ctx, x, d)
	body, _ := json.Marshal(map[string]string{"reason": string(d.err.Decision.Reason), "message": d.err.Error()})
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	_, _ = io.WriteString(c, "HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/json\r\nConnection: close\r\nX-Norma-Reason: "+
		string(d.err.Decision.Reason)+"\r\nContent-Length: "+strconv.Itoa(len(body))+"\r\n\r\n"+string(body))
}
