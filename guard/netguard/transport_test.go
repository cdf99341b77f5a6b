package netguard

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"testing"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/capability/capabilitytest"
	"github.com/norma-run/norma/guard/netguard/weburl"
)

func get(t *testing.T, c *http.Client, rawURL string, mod func(*http.Request)) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, rawURL, nil)
	if err != nil {
		return nil, err
	}
	if mod != nil {
		mod(req)
	}
	resp, err := c.Do(req)
	if err == nil {
		t.Cleanup(func() { resp.Body.Close() })
	}
	return resp, err
}

// TestTransportSendsCheckedURL: the request that reaches the server is the
// normalized one, byte for byte.
func TestTransportSendsCheckedURL(t *testing.T) {
	srv := newServer(t, false, nil)
	origin := "http://api.example.invalid:" + srv.port()
	checker := allowOrigins("GET " + origin)
	tr := &Transport{
		Policy: checker,
		Dialer: &Dialer{Resolver: newResolver(map[string][]string{"api.example.invalid": {"127.0.0.1"}}), AllowPrivate: loopback()},
	}
	resp, err := get(t, NewClient(tr), "http://API.Example.invalid.:"+srv.port()+"/repos/a/%2e%2e/b%2fc/%7e?x=1&y=%20", nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		t.Fatalf("status = %d", resp.StatusCode)
	}
	_, uri, host := srv.lastRequest()
	if want := "/repos/b%2Fc/~?x=1&y=%20"; uri != want {
		t.Errorf("server saw request URI %q, want %q", uri, want)
	}
	if want := "api.example.invalid:" + srv.port(); host != want {
		t.Errorf("server saw Host %q, want %q", host, want)
	}
	if len(checker.seen) != 1 || checker.seen[0].Path != "/repos/b%2Fc/~" || checker.seen[0].Origin != origin {
		t.Errorf("checker saw %+v", checker.seen)
	}
}

// TestTransportRefusals tries each attack for real against a loopback server
// that would answer if the guard let the request through, and proves that
// the server accepted no connection. Rows with ok=true are the negative
// controls: the same setup with the guard's condition satisfied reaches the
// server, so the refusals are caused by the guard and not by the setup.
func TestTransportRefusals(t *testing.T) {
	type row struct {
		name      string
		tls       bool
		url       string // {port} is the target server's port
		resolve   map[string][]string
		allowPriv []netip.Prefix
		allow     []string // "METHOD ORIGIN", {port} expanded; nil = AllowAll
		mod       func(*http.Request)
		authorize func(context.Context, *http.Request, weburl.URL) error
		ok        bool
		reason    capability.Reason
	}
	api := map[string][]string{"api.example.invalid": {"127.0.0.1"}}
	rows := []row{
		{name: "control: permitted name on loopback with allow_private", url: "http://api.example.invalid:{port}/", resolve: api, allowPriv: loopback(), ok: true},
		{name: "name resolving to 127.0.0.1", url: "http://api.example.invalid:{port}/", resolve: api, reason: capability.ReasonNetworkPrivateAddress},
		{name: "name resolving to ::ffff:127.0.0.1", url: "http://mapped.test:{port}/",
			resolve: map[string][]string{"mapped.test": {"::ffff:127.0.0.1"}}, reason: capability.ReasonNetworkPrivateAddress},
		{name: "control: ::ffff:127.0.0.1 admitted by an IPv4 allow_private", url: "http://mapped.test:{port}/",
			resolve: map[string][]string{"mapped.test": {"::ffff:127.0.0.1"}}, allowPriv: loopback(), ok: true},
		{name: "name resolving to 169.254.169.254", url: "http://metadata.test:{port}/",
			resolve: map[string][]string{"metadata.test": {"169.254.169.254"}}, reason: capability.ReasonNetworkPrivateAddress},
		{name: "metadata not admitted by link-local allow_private", url: "http://metadata.test:{port}/",
			resolve:   map[string][]string{"metadata.test": {"169.254.169.254"}},
			allowPriv: []netip.Prefix{netip.MustParsePrefix("169.254.0.0/16")}, reason: capability.ReasonNetworkPrivateAddress},
		{name: "name resolving to ::ffff:10.0.0.1", url: "http://ten.test:{port}/",
			resolve: map[string][]string{"ten.test": {"::ffff:10.0.0.1"}}, allowPriv: loopback(), reason: capability.ReasonNetworkPrivateAddress},
		{name: "one bad address among good ones", url: "http://mixed.test:{port}/",
			resolve:   map[string][]string{"mixed.test": {"127.0.0.1", "169.254.169.254"}},
			allowPriv: loopback(), reason: capability.ReasonNetworkPrivateAddress},
		{name: "allow_private for another range", url: "http://api.example.invalid:{port}/", resolve: api,
			allowPriv: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}, reason: capability.ReasonNetworkPrivateAddress},
		{name: "decimal IPv4 literal", url: "http://2130706433:{port}/", reason: capability.ReasonNetworkPrivateAddress},
		{name: "hex IPv4 literal", url: "http://0x7f.1:{port}/", reason: capability.ReasonNetworkPrivateAddress},
		{name: "octal IPv4 literal", url: "http://0177.0.0.1:{port}/", reason: capability.ReasonNetworkPrivateAddress},
		{name: "IPv6 loopback literal", url: "http://[::1]:{port}/", reason: capability.ReasonNetworkPrivateAddress},
		{name: "decimal literal against a name rule", url: "http://2130706433:{port}/", allowPriv: loopback(),
			allow: []string{"GET http://api.example.invalid:{port}"}, reason: capability.ReasonNetworkDestinationDenied},
		{name: "control: decimal literal admitted by rule and allow_private", url: "http://2130706433:{port}/", allowPriv: loopback(),
			allow: []string{"GET http://127.0.0.1:{port}"}, ok: true},
		{name: "suffix attack", tls: true, url: "https://api.example.invalid.attacker.test:{port}/",
			resolve: map[string][]string{"api.example.invalid.attacker.test": {"127.0.0.1"}}, allowPriv: loopback(),
			allow: []string{"GET https://api.example.invalid:{port}"}, reason: capability.ReasonNetworkDestinationDenied},
		{name: "http downgrade against an https rule", url: "http://api.example.invalid:{port}/", resolve: api, allowPriv: loopback(),
			allow: []string{"GET https://api.example.invalid:{port}"}, reason: capability.ReasonNetworkDestinationDenied},
		{name: "other port than the rule", url: "http://api.example.invalid:{port}/", resolve: api, allowPriv: loopback(),
			allow: []string{"GET http://api.example.invalid:80"}, reason: capability.ReasonNetworkDestinationDenied},
		{name: "method not in the rule", url: "http://api.example.invalid:{port}/", resolve: api, allowPriv: loopback(),
			allow: []string{"POST http://api.example.invalid:{port}"}, reason: capability.ReasonNetworkDestinationDenied},
		{name: "control: the rule matches", url: "http://api.example.invalid:{port}/", resolve: api, allowPriv: loopback(),
			allow: []string{"GET http://api.example.invalid:{port}"}, ok: true},
		{name: "userinfo", url: "http://user:pw@api.example.invalid:{port}/", resolve: api, allowPriv: loopback(),
			allow: []string{"GET http://api.example.invalid:{port}"}, reason: capability.ReasonNetworkInvalidURL},
		{name: "Host header naming another origin", url: "http://api.example.invalid:{port}/", resolve: api, allowPriv: loopback(),
			allow: []string{"GET http://api.example.invalid:{port}"},
			mod:   func(r *http.Request) { r.Host = "internal.admin" }, reason: capability.ReasonNetworkDestinationDenied},
		{name: "Authorize hook refuses", url: "http://api.example.invalid:{port}/", resolve: api, allowPriv: loopback(),
			authorize: func(context.Context, *http.Request, weburl.URL) error {
				return capability.Denied(capability.ReasonApprovalDenied, "", "user said no")
			}, reason: capability.ReasonApprovalDenied},
		{name: "unresolvable name", url: "http://nowhere.test:{port}/", allowPriv: loopback(), reason: capability.ReasonNetworkResolveFailed},
	}
	for _, tt := range rows {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t, tt.tls, nil)
			expand := func(s string) string { return strings.ReplaceAll(s, "{port}", srv.port()) }
			var checker capability.Decider = capability.AllowAll{}
			if tt.allow != nil {
				var pairs []string
				for _, a := range tt.allow {
					pairs = append(pairs, expand(a))
				}
				checker = allowOrigins(pairs...)
			}
			res := newResolver(tt.resolve)
			tr := &Transport{Policy: checker, Dialer: &Dialer{Resolver: res, AllowPrivate: tt.allowPriv}, Authorize: tt.authorize}
			if tt.tls {
				tr.RootCAs = srv.pool()
			}
			defer tr.CloseIdleConnections()
			_, err := get(t, NewClient(tr), expand(tt.url), tt.mod)
			if tt.ok {
				if err != nil {
					t.Fatalf("GET %s: %v, want success (negative control)", expand(tt.url), err)
				}
				if srv.requests.Load() != 1 {
					t.Fatalf("server got %d requests, want 1", srv.requests.Load())
				}
				return
			}
			wantReason(t, err, tt.reason)
			srv.assertUntouched(t)
		})
	}
}

// TestRefusalSendsNothing checks that a policy refusal does not even resolve
// the name: nothing leaves the process, DNS included.
func TestRefusalSendsNothing(t *testing.T) {
	res := newResolver(map[string][]string{"forbidden.test": {"127.0.0.1"}})
	tr := &Transport{Policy: allowOrigins(), Dialer: &Dialer{Resolver: res, AllowPrivate: loopback()}}
	_, err := get(t, NewClient(tr), "http://forbidden.test/", nil)
	wantReason(t, err, capability.ReasonNetworkDestinationDenied)
	if n := res.count("forbidden.test"); n != 0 {
		t.Fatalf("resolver was asked %d times, want 0", n)
	}
}

func TestTransportZeroValueRefuses(t *testing.T) {
	srv := newServer(t, false, nil)
	var tr Transport
	_, err := get(t, NewClient(&tr), srv.URL, nil)
	wantReason(t, err, capability.ReasonNetworkDestinationDenied)
	srv.assertUntouched(t)
}

func TestTransportApprovalRequiredRefuses(t *testing.T) {
	srv := newServer(t, false, nil)
	checker := capabilitytest.DeciderFunc(func(_ context.Context, r capability.Request) capability.Decision {
		return capability.Decision{Mode: capability.ApprovalRequired, Reason: capability.ReasonApprovalRequired, Request: r.String()}
	})
	tr := &Transport{Policy: checker, Dialer: &Dialer{AllowPrivate: loopback()}}
	_, err := get(t, NewClient(tr), srv.URL, nil)
	wantReason(t, err, capability.ReasonApprovalRequired)
	srv.assertUntouched(t)
}

// TestRedirectToForbiddenOrigin: an allowed server redirects to one the
// policy does not allow; the hop is checked as a new request and the
// forbidden server is never contacted.
func TestRedirectToForbiddenOrigin(t *testing.T) {
	forbidden := newServer(t, false, nil)
	for _, loc := range []string{
		"http://forbidden.test:{port}/steal",
		"http://127.0.0.1:{port}/",
		"http://2130706433:{port}/",
		"http://0x7f.1:{port}/",
		"http://[::ffff:127.0.0.1]:{port}/",
		"http://user:pw@api.example.invalid:{port}/",
	} {
		t.Run(loc, func(t *testing.T) {
			loc := strings.ReplaceAll(loc, "{port}", forbidden.port())
			allowed := newServer(t, false, func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, loc, http.StatusFound)
			})
			res := newResolver(map[string][]string{"api.example.invalid": {"127.0.0.1"}, "forbidden.test": {"127.0.0.1"}})
			tr := &Transport{
				Policy: allowOrigins("GET http://api.example.invalid:" + allowed.port()),
				Dialer: &Dialer{Resolver: res, AllowPrivate: loopback()},
			}
			_, err := get(t, NewClient(tr), "http://api.example.invalid:"+allowed.port()+"/", nil)
			if err == nil {
				t.Fatal("redirect to a forbidden origin succeeded")
			}
			if r := capability.ReasonOf(err); r != capability.ReasonNetworkDestinationDenied && r != capability.ReasonNetworkInvalidURL {
				t.Fatalf("reason = %q (%v), want a destination or URL refusal", r, err)
			}
			if allowed.requests.Load() != 1 {
				t.Fatalf("allowed server got %d requests, want 1", allowed.requests.Load())
			}
			forbidden.assertUntouched(t)
		})
	}
}

// TestRedirectStripsCredentials: credentials follow same-origin hops only,
// and stay stripped once the chain has left the original origin.
func TestRedirectStripsCredentials(t *testing.T) {
	var final *server
	other := newServer(t, false, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, final.URL+"/back", http.StatusFound)
	})
	final = newServer(t, false, nil)
	origin := newServer(t, false, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/same":
			http.Redirect(w, r, "/landing", http.StatusFound)
		case "/cross":
			http.Redirect(w, r, other.URL+"/hop", http.StatusTemporaryRedirect)
		default:
			w.Write([]byte("ok"))
		}
	})
	tr := &Transport{
		Policy:            allowOrigins("GET http://127.0.0.1:"+origin.port(), "GET http://127.0.0.1:"+other.port(), "GET http://127.0.0.1:"+final.port()),
		Dialer:            &Dialer{AllowPrivate: loopback()},
		CredentialHeaders: []string{"X-Api-Key"},
	}
	c := NewClient(tr)
	creds := func(r *http.Request) {
		r.Header.Set("Authorization", "Bearer secret")
		r.Header.Set("Cookie", "session=secret")
		r.Header.Set("Proxy-Authorization", "Basic secret")
		r.Header.Set("X-Api-Key", "secret")
		r.Header.Set("X-Trace", "kept")
	}
	if _, err := get(t, c, origin.URL+"/same", creds); err != nil {
		t.Fatal(err)
	}
	h, uri, _ := origin.lastRequest()
	if uri != "/landing" || h.Get("Authorization") == "" || h.Get("X-Api-Key") == "" {
		t.Fatalf("same-origin hop %s lost credentials: %v", uri, h)
	}
	if _, err := get(t, c, origin.URL+"/cross", creds); err != nil {
		t.Fatal(err)
	}
	for _, s := range []*server{other, final} {
		h, uri, _ := s.lastRequest()
		for _, name := range []string{"Authorization", "Cookie", "Proxy-Authorization", "X-Api-Key"} {
			if v := h.Get(name); v != "" {
				t.Errorf("cross-origin hop %s received %s: %q", uri, name, v)
			}
		}
		if h.Get("X-Trace") != "kept" {
			t.Errorf("cross-origin hop %s lost a non-credential header", uri)
		}
	}
}

// TestRedirectDowngradeRefused: https -> http is refused even when the
// policy allows both origins, and the http server is never contacted.
func TestRedirectDowngradeRefused(t *testing.T) {
	plain := newServer(t, false, nil)
	secure := newServer(t, true, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://example.com:"+plain.port()+"/", http.StatusFound)
	})
	tr := &Transport{
		Policy:  allowOrigins("GET https://example.com:"+secure.port(), "GET http://example.com:"+plain.port()),
		Dialer:  &Dialer{Resolver: newResolver(map[string][]string{"example.com": {"127.0.0.1"}}), AllowPrivate: loopback()},
		RootCAs: secure.pool(),
	}
	_, err := get(t, NewClient(tr), "https://example.com:"+secure.port()+"/", nil)
	wantReason(t, err, capability.ReasonNetworkRedirectDenied)
	if secure.requests.Load() != 1 {
		t.Fatalf("https server got %d requests, want 1", secure.requests.Load())
	}
	plain.assertUntouched(t)
}

func TestRedirectCap(t *testing.T) {
	srv := newServer(t, false, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/again", http.StatusFound)
	})
	tr := &Transport{Policy: capability.AllowAll{}, Dialer: &Dialer{AllowPrivate: loopback()}, MaxRedirects: 3}
	_, err := get(t, NewClient(tr), srv.URL, nil)
	wantReason(t, err, capability.ReasonNetworkRedirectDenied)
	if n := srv.requests.Load(); n != 4 {
		t.Fatalf("server got %d requests, want 4 (1 + 3 hops)", n)
	}
	tr = &Transport{Policy: capability.AllowAll{}, Dialer: &Dialer{AllowPrivate: loopback()}, MaxRedirects: -1}
	_, err = get(t, NewClient(tr), srv.URL, nil)
	wantReason(t, err, capability.ReasonNetworkRedirectDenied)
}

// TestDNSRebinding: the resolver answers a loopback (admitted) address the
// first time and a forbidden one afterwards, or the other way round. Only
// one lookup happens per dial and the connection goes to the checked
// address.
func TestDNSRebinding(t *testing.T) {
	srv := newServer(t, false, nil)
	admitted := []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}
	t.Run("good then bad", func(t *testing.T) {
		res := newResolver(nil)
		res.seq["rebind.test"] = [][]netip.Addr{mustAddrs("127.0.0.1"), mustAddrs("169.254.169.254"), mustAddrs("10.0.0.1")}
		tr := &Transport{Policy: capability.AllowAll{}, Dialer: &Dialer{Resolver: res, AllowPrivate: admitted}}
		defer tr.CloseIdleConnections()
		if _, err := get(t, NewClient(tr), "http://rebind.test:"+srv.port()+"/", nil); err != nil {
			t.Fatalf("GET: %v", err)
		}
		if n := res.count("rebind.test"); n != 1 {
			t.Fatalf("lookups = %d, want 1", n)
		}
		if n := srv.ln.accepts.Load(); n != 1 {
			t.Fatalf("server accepted %d connections, want 1 (the checked address)", n)
		}
	})
	t.Run("bad then good", func(t *testing.T) {
		fresh := newServer(t, false, nil)
		res := newResolver(nil)
		res.seq["rebind.test"] = [][]netip.Addr{mustAddrs("10.0.0.1"), mustAddrs("127.0.0.1")}
		tr := &Transport{Policy: capability.AllowAll{}, Dialer: &Dialer{Resolver: res, AllowPrivate: admitted}}
		_, err := get(t, NewClient(tr), "http://rebind.test:"+fresh.port()+"/", nil)
		wantReason(t, err, capability.ReasonNetworkPrivateAddress)
		if n := res.count("rebind.test"); n != 1 {
			t.Fatalf("lookups = %d, want 1", n)
		}
		fresh.assertUntouched(t)
	})
}

// TestDialerControlRechecks exercises the connect-time hook directly: it
// refuses an address other than the checked one, and a refused address.
func TestDialerControlRechecks(t *testing.T) {
	d := &Dialer{AllowPrivate: loopback()}
	want := netip.MustParseAddrPort("127.0.0.1:8080")
	ctl := d.control(want)
	tests := []struct {
		addr   string
		wantOK bool
	}{
		{"127.0.0.1:8080", true},
		{"[::ffff:127.0.0.1]:8080", true},
		{"127.0.0.2:8080", false},
		{"127.0.0.1:8081", false},
		{"10.0.0.1:8080", false},
		{"garbage", false},
	}
	for _, tt := range tests {
		err := ctl(t.Context(), "tcp4", tt.addr, nil)
		if (err == nil) != tt.wantOK {
			t.Errorf("control(%s) = %v, want ok=%v", tt.addr, err, tt.wantOK)
		}
	}
	// A checked address that is no longer admitted (allow list changed) is
	// refused at connect time too.
	strict := &Dialer{}
	if err := strict.control(want)(t.Context(), "tcp4", "127.0.0.1:8080", nil); capability.ReasonOf(err) != capability.ReasonNetworkPrivateAddress {
		t.Errorf("control on a refused address = %v, want %s", err, capability.ReasonNetworkPrivateAddress)
	}
}

func TestDialerRefusesBadInput(t *testing.T) {
	d := &Dialer{Resolver: newResolver(nil), AllowPrivate: loopback()}
	tests := []struct {
		network, addr string
		reason        capability.Reason
	}{
		{"udp", "127.0.0.1:53", capability.ReasonNetworkInvalidURL},
		{"unix", "/tmp/sock", capability.ReasonNetworkInvalidURL},
		{"tcp", "127.0.0.1", capability.ReasonNetworkInvalidURL},
		{"tcp", "127.0.0.1:http", capability.ReasonNetworkInvalidURL},
		{"tcp", "127.0.0.1:0", capability.ReasonNetworkInvalidURL},
		{"tcp", "[fe80::1%eth0]:80", capability.ReasonNetworkInvalidURL},
		{"tcp", "bad_name:80", capability.ReasonNetworkInvalidURL},
		{"tcp", "missing.test:80", capability.ReasonNetworkResolveFailed},
		{"tcp", "169.254.169.254:80", capability.ReasonNetworkPrivateAddress},
		{"tcp", "0x7f.1:80", ""}, // an inet_aton literal of an admitted address: dials (connection refused)
	}
	for _, tt := range tests {
		c, err := d.DialContext(t.Context(), tt.network, tt.addr)
		if c != nil {
			c.Close()
		}
		if got := capability.ReasonOf(err); got != tt.reason {
			t.Errorf("DialContext(%s, %s) = %v (reason %q), want reason %q", tt.network, tt.addr, err, got, tt.reason)
		}
	}
}

// TestTLSUsesOriginalHostName: the connection goes to the resolved IP, but
// the certificate is verified against the URL's host name.
func TestTLSUsesOriginalHostName(t *testing.T) {
	srv := newServer(t, true, nil) // httptest's certificate is for example.com and 127.0.0.1
	res := newResolver(map[string][]string{"example.com": {"127.0.0.1"}, "other.test": {"127.0.0.1"}})
	tr := &Transport{Policy: capability.AllowAll{}, Dialer: &Dialer{Resolver: res, AllowPrivate: loopback()}, RootCAs: srv.pool()}
	c := NewClient(tr)
	if _, err := get(t, c, "https://example.com:"+srv.port()+"/", nil); err != nil {
		t.Fatalf("GET example.com: %v", err)
	}
	if _, err := get(t, c, "https://other.test:"+srv.port()+"/", nil); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("GET other.test: %v, want a certificate name error", err)
	}
	untrusted := &Transport{Policy: capability.AllowAll{}, Dialer: &Dialer{Resolver: res, AllowPrivate: loopback()}}
	if _, err := get(t, NewClient(untrusted), "https://example.com:"+srv.port()+"/", nil); err == nil {
		t.Fatal("GET with system roots trusted the test CA")
	}
}

// TestNoEnvironmentProxy: HTTP_PROXY is ignored; the proxy never sees a
// connection.
func TestNoEnvironmentProxy(t *testing.T) {
	proxy := newServer(t, false, nil)
	t.Setenv("HTTP_PROXY", proxy.URL)
	t.Setenv("HTTPS_PROXY", proxy.URL)
	t.Setenv("NO_PROXY", "")
	srv := newServer(t, false, nil)
	res := newResolver(map[string][]string{"api.example.invalid": {"127.0.0.1"}})
	tr := &Transport{Policy: capability.AllowAll{}, Dialer: &Dialer{Resolver: res, AllowPrivate: loopback()}}
	if _, err := get(t, NewClient(tr), "http://api.example.invalid:"+srv.port()+"/", nil); err != nil {
		t.Fatal(err)
	}
	if srv.requests.Load() != 1 {
		t.Fatalf("server got %d requests, want 1", srv.requests.Load())
	}
	proxy.assertUntouched(t)
}

func TestResponseCap(t *testing.T) {
	body := strings.Repeat("x", 5000)
	srv := newServer(t, false, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/chunked" {
			w.Write([]byte(body[:100]))
			w.(http.Flusher).Flush()
			w.Write([]byte(body[100:]))
			return
		}
		w.Header().Set("Content-Length", "5000")
		w.Write([]byte(body))
	})
	tr := &Transport{Policy: capability.AllowAll{}, Dialer: &Dialer{AllowPrivate: loopback()}, MaxResponseBytes: 1000}
	c := NewClient(tr)
	_, err := get(t, c, srv.URL+"/sized", nil)
	wantReason(t, err, capability.ReasonNetworkResponseTooLarge)

	resp, err := get(t, c, srv.URL+"/chunked", nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(resp.Body)
	wantReason(t, err, capability.ReasonNetworkResponseTooLarge)
	if len(got) != 1000 {
		t.Fatalf("read %d bytes before the cap error, want 1000", len(got))
	}

	exact := &Transport{Policy: capability.AllowAll{}, Dialer: &Dialer{AllowPrivate: loopback()}, MaxResponseBytes: 5000}
	resp, err = get(t, NewClient(exact), srv.URL+"/chunked", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := io.ReadAll(resp.Body); err != nil || len(got) != 5000 {
		t.Fatalf("body at exactly the cap: %d bytes, %v", len(got), err)
	}
}

func TestAuthorizeOrder(t *testing.T) {
	srv := newServer(t, false, nil)
	var order []string
	checker := capabilitytest.DeciderFunc(func(_ context.Context, r capability.Request) capability.Decision {
		order = append(order, "check "+r.Path)
		return capability.Decision{Mode: capability.Allow, Reason: capability.ReasonAllowed}
	})
	tr := &Transport{
		Policy: checker,
		Dialer: &Dialer{AllowPrivate: loopback()},
		Authorize: func(_ context.Context, _ *http.Request, u weburl.URL) error {
			order = append(order, "authorize "+u.Path)
			if srv.requests.Load() != 0 {
				return errors.New("authorize ran after the request was sent")
			}
			return nil
		},
	}
	if _, err := get(t, NewClient(tr), srv.URL+"/a/../b", nil); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(order, ","); got != "check /b,authorize /b" {
		t.Fatalf("order = %q", got)
	}
}

// TestWireURLRefusesWhatWasNotChecked: weburl.URL has exported fields, so
// a caller can hand-build one that Normalize would never return. The wire
// URL built from it must then carry exactly its path and query, or the
// request is refused: these forged paths would go out as another
// request-URI (escaped, or split into path and query). The control rows
// are normalized URLs, whose wire request-URI is their own.
func TestWireURLRefusesWhatWasNotChecked(t *testing.T) {
	forged := func(path, query string) weburl.URL {
		return weburl.URL{Scheme: "https", Host: "api.example.invalid", Port: 443, Origin: "https://api.example.invalid:443", Path: path, RawQuery: query}
	}
	tests := []struct {
		name string
		u    weburl.URL
		ok   bool
	}{
		{"raw space", forged("/a b", ""), false},
		{"question mark inside the path", forged("/a?b", ""), false},
		{"hash inside the path", forged("/a#b", ""), false},
		{"empty path", forged("", ""), false},
		{"invalid escape", forged("/a%zz", ""), false},
		{"control: normalized", mustNormalize(t, "https://API.example.invalid/a/%2e%2e/b%2fc/%7e?x=%20"), true},
		{"control: double slash", mustNormalize(t, "https://api.example.invalid//evil.example/x"), true},
		{"control: IPv6 default port", mustNormalize(t, "http://[::1]:80/x"), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, err := wireURL(tt.u)
			if !tt.ok {
				if err == nil {
					t.Fatalf("wireURL(%+v) = %v, want a refusal", tt.u, w)
				}
				return
			}
			if err != nil || w.RequestURI() != tt.u.RequestURI() {
				t.Fatalf("wireURL(%+v) = %v, %v; request-URI want %q", tt.u, w, err, tt.u.RequestURI())
			}
		})
	}
}

func mustNormalize(t *testing.T, raw string) weburl.URL {
	t.Helper()
	u, err := weburl.Normalize(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// TestNewRequestSkipsOnlyItsOwnNormalization: a request NewRequest made
// from Check's URL is sent as checked; once its URL is changed in place or
// replaced, the Transport normalizes and decides it again, so the shortcut
// never sends what was not checked: another origin is refused before any
// connection, a path with dot segments goes out (and is decided)
// normalized. The zero Checked, which Check never returns, is refused.
func TestNewRequestSkipsOnlyItsOwnNormalization(t *testing.T) {
	srv := newServer(t, false, nil)
	evil := newServer(t, false, nil)
	origin := "http://api.example.invalid:" + srv.port()
	evilHost := "evil.example.invalid:" + evil.port()
	res := newResolver(map[string][]string{"api.example.invalid": {"127.0.0.1"}, "evil.example.invalid": {"127.0.0.1"}})
	tests := []struct {
		name     string
		tamper   func(r *http.Request)
		wantErr  capability.Reason
		wantURI  string // what the server saw
		wantPath string // what the policy decided
	}{
		{name: "control: as made", tamper: func(*http.Request) {}, wantURI: "/b%2Fc?x=1", wantPath: "/b%2Fc"},
		{name: "host changed in place", tamper: func(r *http.Request) { r.URL.Host = evilHost }, wantErr: capability.ReasonNetworkDestinationDenied},
		{name: "URL replaced", tamper: func(r *http.Request) {
			r.URL = &url.URL{Scheme: "http", Host: evilHost, Path: "/b"}
		}, wantErr: capability.ReasonNetworkDestinationDenied},
		{name: "path changed in place", tamper: func(r *http.Request) { r.URL.Path, r.URL.RawPath = "/x/../admin", "" }, wantURI: "/admin?x=1", wantPath: "/admin"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checker := allowOrigins("GET " + origin)
			tr := &Transport{Policy: checker, Dialer: &Dialer{Resolver: res, AllowPrivate: loopback()}}
			defer tr.CloseIdleConnections()
			c, err := Check("http://API.example.invalid:" + srv.port() + "/a/%2e%2e/b%2fc?x=1")
			if err != nil {
				t.Fatal(err)
			}
			req, err := NewRequest(t.Context(), http.MethodGet, c, http.Header{}, nil)
			if err != nil {
				t.Fatal(err)
			}
			tt.tamper(req)
			before := srv.requests.Load()
			resp, err := tr.RoundTrip(req)
			if tt.wantErr != "" {
				wantReason(t, err, tt.wantErr)
				evil.assertUntouched(t)
				if srv.requests.Load() != before {
					t.Error("a refused request reached the server")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if _, uri, _ := srv.lastRequest(); uri != tt.wantURI {
				t.Errorf("server saw %q, want %q", uri, tt.wantURI)
			}
			if len(checker.seen) != 1 || checker.seen[0].Path != tt.wantPath || checker.seen[0].Origin != origin {
				t.Errorf("policy saw %+v, want one request for %s", checker.seen, tt.wantPath)
			}
		})
	}
	t.Run("zero Checked", func(t *testing.T) {
		if _, err := NewRequest(t.Context(), http.MethodGet, Checked{}, http.Header{}, nil); err == nil {
			t.Error("NewRequest accepted a Checked that Check did not make")
		}
	})
	t.Run("body", func(t *testing.T) {
		c, _ := Check(origin + "/post")
		req, err := NewRequest(t.Context(), http.MethodPost, c, http.Header{}, []byte("hello"))
		if err != nil || req.ContentLength != 5 || req.GetBody == nil {
			t.Fatalf("NewRequest with a body = %+v, %v", req, err)
		}
		b, _ := io.ReadAll(req.Body)
		rb, _ := req.GetBody()
		b2, _ := io.ReadAll(rb)
		if string(b) != "hello" || string(b2) != "hello" {
			t.Errorf("body %q, replay %q", b, b2)
		}
	})
}
