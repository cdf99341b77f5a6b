package broker

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/norma-run/norma/approval"
	"github.com/norma-run/norma/audit"
	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/manifest"
)

func TestAllowedGETInjectsToken(t *testing.T) {
	e := newEnv(t, envOptions{})
	tests := []struct {
		name     string
		hdr      []string
		wantAuth string
	}{
		{name: "injected without asking", wantAuth: "Bearer " + canary},
		{name: "placeholder in Authorization", hdr: []string{"Authorization", "Bearer " + e.placeholder()}, wantAuth: "Bearer " + canary},
		{name: "placeholder with another scheme", hdr: []string{"Authorization", "token " + e.placeholder()}, wantAuth: "token " + canary},
		{name: "plugin's own header is replaced", hdr: []string{"Authorization", "Basic Zm9vOmJhcg=="}, wantAuth: "Bearer " + canary},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := e.api.count()
			r := e.get(e.client, e.api.origin+"/repos/acme/issues", tt.hdr...)
			if r.err != nil || r.status != http.StatusOK {
				t.Fatalf("GET = %d %v %s, want 200", r.status, r.err, r.body)
			}
			if e.api.count() != before+1 {
				t.Fatalf("upstream saw %d requests, want 1", e.api.count()-before)
			}
			if got := e.api.last().Header.Get("Authorization"); got != tt.wantAuth {
				t.Errorf("upstream Authorization = %q, want %q", got, tt.wantAuth)
			}
			if ev := e.lastEvent(); ev.Decision != "allow" || ev.Detail["secrets"] != "issue_api_token" || ev.Plugin != "com.example.issue-helper" || ev.Principal != "plugin:com.example.issue-helper#p1" {
				t.Errorf("audit event = %+v", ev)
			}
		})
	}

	t.Run("reflected credential is masked", func(t *testing.T) {
		r := e.get(e.client, e.api.origin+"/echo")
		if r.status != http.StatusOK {
			t.Fatalf("GET /echo = %d", r.status)
		}
		if !strings.Contains(e.api.last().Header.Get("Authorization"), canary) {
			t.Fatal("negative control: the server did not receive the credential")
		}
		if strings.Contains(string(r.body), canary) || strings.Contains(r.header.Get("X-Echo-Auth"), canary) {
			t.Errorf("the plugin saw the secret: %q %q", r.header.Get("X-Echo-Auth"), r.body)
		}
		if !strings.Contains(string(r.body), "Bearer ****") {
			t.Errorf("body = %q, want the value masked in place", r.body)
		}
	})

	t.Run("no credential toward another origin", func(t *testing.T) {
		r := e.get(e.client, e.evil.origin+"/public/x")
		if r.status != http.StatusOK {
			t.Fatalf("GET evil = %d %s", r.status, r.body)
		}
		if h := e.evil.last().Header; h.Get("Authorization") != "" || strings.Contains(fmt.Sprint(h), canary) {
			t.Errorf("evil received credentials: %v", h)
		}
	})

	t.Run("plain http proxying", func(t *testing.T) {
		// http://api…:PORT is another origin than https://api…:PORT: no rule, no secret.
		r := e.get(e.client, strings.Replace(e.api.origin, "https:", "http:", 1)+"/repos/acme/issues")
		if r.status != http.StatusForbidden || r.reason() != capability.ReasonNetworkDestinationDenied {
			t.Errorf("GET http:// = %d %s, want 403 NETWORK_DESTINATION_DENIED", r.status, r.body)
		}
	})
}

func TestPolicyDenials(t *testing.T) {
	e := newEnv(t, envOptions{})
	tests := []struct {
		name   string
		method string
		url    string
		status int
		reason capability.Reason
	}{
		{name: "path not declared", method: "GET", url: e.api.origin + "/admin", status: 403, reason: capability.ReasonNetworkPathDenied},
		{name: "method not declared", method: "DELETE", url: e.api.origin + "/repos/acme/issues/1", status: 403, reason: capability.ReasonNetworkMethodDenied},
		{name: "origin not declared", method: "GET", url: "https://other.example.invalid/x", status: 403, reason: capability.ReasonNetworkDestinationDenied},
		{name: "dot segments normalized then denied", method: "GET", url: e.api.origin + "/repos/acme/issues/../../admin", status: 403, reason: capability.ReasonNetworkPathDenied},
		{name: "encoded slash is one segment", method: "GET", url: e.api.origin + "/repos/acme%2Fx/issues/1/extra", status: 403, reason: capability.ReasonNetworkPathDenied},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before, lookups := e.api.count(), e.resolver.lookups.Load()
			req, _ := http.NewRequestWithContext(t.Context(), tt.method, tt.url, nil)
			r := e.do(e.client, req)
			if r.status != tt.status || r.reason() != tt.reason {
				t.Errorf("%s %s = %d %s, want %d %s", tt.method, tt.url, r.status, r.body, tt.status, tt.reason)
			}
			if r.header.Get("Content-Type") != "application/json" || r.header.Get("X-Norma-Reason") != string(tt.reason) {
				t.Errorf("denial headers = %v", r.header)
			}
			if e.api.count() != before || e.resolver.lookups.Load() != lookups {
				t.Error("a denied request reached DNS or the server")
			}
			if ev := e.lastEvent(); ev.Decision != "deny" || ev.Reason != string(tt.reason) || ev.TargetHash == "" {
				t.Errorf("audit event = %+v", ev)
			}
		})
	}
}

// chanApprover hands each request to the test and waits for its verdict.
type chanApprover struct {
	asked   chan approval.Record
	verdict chan bool
}

func (a chanApprover) Approve(ctx context.Context, r approval.Record) (approval.Verdict, error) {
	select {
	case a.asked <- r:
	case <-ctx.Done():
		return approval.Verdict{}, ctx.Err()
	}
	select {
	case ok := <-a.verdict:
		return approval.Verdict{Approve: ok, By: "test"}, nil
	case <-ctx.Done():
		return approval.Verdict{}, ctx.Err()
	}
}

func TestPOSTNeedsApproval(t *testing.T) {
	ap := chanApprover{asked: make(chan approval.Record), verdict: make(chan bool)}
	svc, err := approval.NewService(approval.NewMemoryBackend(), &approval.Options{Sink: audit.NewMemory(), Approver: ap})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, envOptions{approver: svc})
	url := e.api.origin + "/repos/acme/issues/42/comments"
	post := func(body string) <-chan response {
		ch := make(chan response, 1)
		go func() {
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
			ch <- e.do(e.client, req)
		}()
		return ch
	}

	// 1. The request waits for the approver; nothing is sent meanwhile.
	done := post(`{"body":"LGTM"}`)
	var rec approval.Record
	select {
	case rec = <-ap.asked:
	case <-time.After(10 * time.Second):
		t.Fatal("the approver was never asked")
	}
	if rec.Tool != ToolNetRequest || !strings.Contains(rec.Target, "POST "+e.api.origin+"/repos/acme/issues/42/comments") || !strings.Contains(rec.Preview, "LGTM") {
		t.Errorf("approval request = %+v", rec.Request)
	}
	time.Sleep(100 * time.Millisecond)
	if e.api.count() != 0 {
		t.Fatal("the request reached the server before approval")
	}
	ap.verdict <- true
	r := <-done
	if r.status != http.StatusCreated {
		t.Fatalf("approved POST = %d %s, want 201", r.status, r.body)
	}
	if e.api.count() != 1 {
		t.Fatalf("server saw %d requests, want exactly 1", e.api.count())
	}
	seen := e.api.last()
	if string(seen.Body) != `{"body":"LGTM"}` || !strings.HasPrefix(seen.Header.Get("Idempotency-Key"), "nik_") || seen.Header.Get("Authorization") != "Bearer "+canary {
		t.Errorf("server saw body %q, idempotency %q", seen.Body, seen.Header.Get("Idempotency-Key"))
	}
	if ev := e.lastEvent(); ev.ApprovalID != rec.ID || ev.Decision != "allow" {
		t.Errorf("audit event = %+v, want allow with approval %s", ev, rec.ID)
	}

	// 2. A replay with a changed body is a new action: the approver is
	// asked about it, says no, and nothing is sent.
	done = post(`{"body":"rm -rf; LGTM"}`)
	rec2 := <-ap.asked
	if rec2.ActionHash == rec.ActionHash {
		t.Fatal("a changed body kept the action hash")
	}
	ap.verdict <- false
	r = <-done
	if r.status != http.StatusForbidden || r.reason() != capability.ReasonApprovalDenied {
		t.Errorf("replay with changed body = %d %s, want 403 APPROVAL_DENIED", r.status, r.body)
	}
	if e.api.count() != 1 {
		t.Errorf("server saw %d requests, want still 1", e.api.count())
	}

	// 3. The same body again is not covered by the consumed once-approval.
	done = post(`{"body":"LGTM"}`)
	rec3 := <-ap.asked
	if rec3.ActionHash != rec.ActionHash || rec3.ID == rec.ID {
		t.Errorf("replay: hash %s id %s, want same hash, new approval", rec3.ActionHash, rec3.ID)
	}
	ap.verdict <- false
	if r := <-done; r.status != http.StatusForbidden || e.api.count() != 1 {
		t.Errorf("replay = %d, server count %d", r.status, e.api.count())
	}
}

func TestApprovalWithoutApprover(t *testing.T) {
	e := newEnv(t, envOptions{})
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, e.api.origin+"/repos/acme/issues/42/comments", strings.NewReader("{}"))
	r := e.do(e.client, req)
	if r.status != http.StatusForbidden || r.reason() != capability.ReasonApprovalRequired || e.api.count() != 0 {
		t.Errorf("POST = %d %s (server %d), want 403 APPROVAL_REQUIRED and nothing sent", r.status, r.body, e.api.count())
	}
}

func TestPlaceholderMisuse(t *testing.T) {
	e := newEnv(t, envOptions{})
	ph := e.placeholder()
	tok := ph[strings.LastIndexByte(ph, ':')+1:]
	forged := "norma-secret:issue_api_token:" + strings.Repeat("0", 32)
	tests := []struct {
		name   string
		method string
		url    string
		body   string
		hdr    []string
		reason capability.Reason
		server *upstream
	}{
		{name: "header toward another origin", method: "GET", url: e.evil.origin + "/public/x", hdr: []string{"Authorization", "Bearer " + ph}, reason: capability.ReasonSecretOriginMismatch},
		{name: "custom header toward another origin", method: "GET", url: e.evil.origin + "/public/x", hdr: []string{"X-Token", ph}, reason: capability.ReasonSecretOriginMismatch},
		{name: "token alone toward another origin", method: "GET", url: e.evil.origin + "/public/x", hdr: []string{"X-Token", tok}, reason: capability.ReasonSecretOriginMismatch},
		{name: "query toward purpose", method: "GET", url: e.api.origin + "/repos/acme/issues?access_token=" + ph, reason: capability.ReasonSecretOriginMismatch},
		{name: "url-encoded in path", method: "GET", url: e.api.origin + "/repos/" + strings.ReplaceAll(ph, ":", "%3A") + "/issues", reason: capability.ReasonSecretOriginMismatch},
		{name: "body toward another origin", method: "POST", url: e.evil.origin + "/public/x", body: `{"t":"` + ph + `"}`, reason: capability.ReasonSecretOriginMismatch},
		{name: "body toward purpose", method: "PUT", url: e.api.origin + "/upload", body: "token=" + ph, reason: capability.ReasonSecretOriginMismatch},
		{name: "header name", method: "GET", url: e.api.origin + "/repos/acme/issues", hdr: []string{"X-" + tok, "1"}, reason: capability.ReasonSecretOriginMismatch},
		{name: "forged placeholder", method: "GET", url: e.api.origin + "/repos/acme/issues", hdr: []string{"Authorization", "Bearer " + forged}, reason: capability.ReasonSecretUndeclared},
		{name: "forged placeholder in body", method: "PUT", url: e.api.origin + "/upload", body: forged, reason: capability.ReasonSecretUndeclared},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			apiBefore, evilBefore := e.api.count(), e.evil.count()
			apiBytes, evilBytes := e.api.bytesIn.Load(), e.evil.bytesIn.Load()
			req, _ := http.NewRequestWithContext(t.Context(), tt.method, tt.url, strings.NewReader(tt.body))
			for i := 0; i < len(tt.hdr); i += 2 {
				req.Header.Set(tt.hdr[i], tt.hdr[i+1])
			}
			r := e.do(e.client, req)
			if r.status != http.StatusForbidden || r.reason() != tt.reason {
				t.Errorf("%s %s = %d %s, want 403 %s", tt.method, tt.url, r.status, r.body, tt.reason)
			}
			if e.api.count() != apiBefore || e.evil.count() != evilBefore || e.api.bytesIn.Load() != apiBytes || e.evil.bytesIn.Load() != evilBytes {
				t.Error("something was sent upstream")
			}
		})
	}

	// Negative control: the same requests without the placeholder go through.
	if r := e.get(e.client, e.evil.origin+"/public/x", "X-Token", "harmless"); r.status != http.StatusOK {
		t.Errorf("control GET evil = %d %s", r.status, r.body)
	}
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPut, e.api.origin+"/upload", strings.NewReader("token=none"))
	if r := e.do(e.client, req); r.status != http.StatusOK {
		t.Errorf("control PUT = %d %s", r.status, r.body)
	}
}

func TestRedirects(t *testing.T) {
	e := newEnv(t, envOptions{})
	t.Run("returned, not followed", func(t *testing.T) {
		r := e.get(e.newClient(false), e.api.origin+"/redirect/evil")
		if r.status != http.StatusFound || r.header.Get("Location") != e.evil.origin+"/public/landing" {
			t.Fatalf("GET = %d Location %q, want 302 to evil", r.status, r.header.Get("Location"))
		}
		if e.evil.count() != 0 {
			t.Error("the broker followed the redirect")
		}
	})
	t.Run("cross-origin hop carries no credential", func(t *testing.T) {
		r := e.get(e.client, e.api.origin+"/redirect/evil")
		if r.status != http.StatusOK || string(r.body) != "evil landing" {
			t.Fatalf("followed GET = %d %q", r.status, r.body)
		}
		if !strings.Contains(e.api.last().Header.Get("Authorization"), canary) {
			t.Error("negative control: the first hop had no credential")
		}
		got := e.evil.last()
		if got.Header.Get("Authorization") != "" || strings.Contains(fmt.Sprint(got.Header), canary) {
			t.Errorf("the hop to evil carried %v", got.Header)
		}
	})
	t.Run("hop is checked", func(t *testing.T) {
		before := e.evil.count()
		r := e.get(e.client, e.api.origin+"/redirect/evil-denied")
		if r.status != http.StatusForbidden || r.reason() != capability.ReasonNetworkPathDenied {
			t.Errorf("GET = %d %s, want 403 NETWORK_PATH_DENIED for the hop", r.status, r.body)
		}
		if e.evil.count() != before {
			t.Error("the denied hop reached evil")
		}
	})
}

// rawTunnel opens a CONNECT tunnel by hand and returns the raw connection.
func rawTunnel(t *testing.T, e *env, target string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", e.proxyURL.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("CONNECT = %v %v", resp, err)
	}
	return c
}

func TestTunnelTargetChecks(t *testing.T) {
	e := newEnv(t, envOptions{})
	apiHost := strings.TrimPrefix(e.api.origin, "https://")
	evilHost := strings.TrimPrefix(e.evil.origin, "https://")
	tests := []struct {
		name     string
		sni      string
		host     string // Host header of the inner request; "" means none sent (handshake must fail)
		wantTLS  bool
		wantCode capability.Reason
	}{
		{name: "SNI names another host", sni: "evil.example.invalid", wantCode: capability.ReasonBrokerTargetMismatch},
		{name: "no SNI for a name", sni: "", wantCode: capability.ReasonBrokerTargetMismatch},
		{name: "Host names another origin", sni: "api.example.invalid", host: evilHost, wantTLS: true, wantCode: capability.ReasonBrokerTargetMismatch},
		{name: "Host names another port", sni: "api.example.invalid", host: "api.example.invalid:1", wantTLS: true, wantCode: capability.ReasonBrokerTargetMismatch},
		{name: "Host is a prefix of the target (another port)", sni: "api.example.invalid", host: apiHost[:len(apiHost)-1], wantTLS: true, wantCode: capability.ReasonBrokerTargetMismatch},
		{name: "control: matching", sni: "api.example.invalid", host: apiHost, wantTLS: true},
		{name: "control: matching in another case", sni: "api.example.invalid", host: strings.ToUpper(apiHost), wantTLS: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			apiBefore, evilBefore := e.api.count(), e.evil.count()
			denials := countOf(e.sink.reasons(), "deny:"+string(tt.wantCode))
			c := rawTunnel(t, e, apiHost)
			tc := tls.Client(c, &tls.Config{ServerName: tt.sni, RootCAs: e.ca.Pool(), InsecureSkipVerify: tt.sni == ""})
			err := tc.HandshakeContext(t.Context())
			if !tt.wantTLS {
				if err == nil {
					t.Fatal("handshake succeeded")
				}
				waitFor(t, func() bool { return countOf(e.sink.reasons(), "deny:"+string(tt.wantCode)) > denials })
			} else {
				if err != nil {
					t.Fatalf("handshake: %v", err)
				}
				fmt.Fprintf(tc, "GET /repos/acme/issues HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", tt.host)
				resp, err := http.ReadResponse(bufio.NewReader(tc), nil)
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				want := http.StatusForbidden
				if tt.wantCode == "" {
					want = http.StatusOK
				}
				if resp.StatusCode != want || tt.wantCode != "" && !strings.Contains(string(body), string(tt.wantCode)) {
					t.Errorf("inner GET = %d %s, want %d %s", resp.StatusCode, body, want, tt.wantCode)
				}
				if strings.Contains(string(body), canary) {
					t.Error("canary in response")
				}
			}
			wantAPI := apiBefore
			if tt.wantCode == "" {
				wantAPI++
			}
			if e.api.count() != wantAPI || e.evil.count() != evilBefore {
				t.Errorf("upstream counts api %d→%d evil %d→%d", apiBefore, e.api.count(), evilBefore, e.evil.count())
			}
		})
	}
	t.Run("tunnel that does not speak TLS", func(t *testing.T) {
		c := rawTunnel(t, e, apiHost)
		fmt.Fprintf(c, "GET /repos/acme/issues HTTP/1.1\r\nHost: %s\r\n\r\n", apiHost)
		io.Copy(io.Discard, c)
		waitFor(t, func() bool { return slices.Contains(e.sink.reasons(), "deny:"+string(capability.ReasonBrokerProtocol)) })
	})
}

// TestIsAuthorityOf: the shortcut of prepare's Host check holds only for
// a Host that is exactly the URL's authority; every other Host is
// normalized and compared (TestTunnelTargetChecks sends them).
func TestIsAuthorityOf(t *testing.T) {
	tests := []struct {
		host, raw string
		want      bool
	}{
		{"api.example.invalid:8443", "https://api.example.invalid:8443/x", true},
		{"api.example.invalid", "https://api.example.invalid/", true},
		{"api.example.invalid:844", "https://api.example.invalid:8443/x", false},
		{"api.example.invalid", "https://api.example.invalid.evil/x", false},
		{"api.example.invalid", "https://api.example.invalid", false},
		{"API.example.invalid", "https://api.example.invalid/x", false},
		{"a", "https://a\\b/x", false},
		{"a/b", "https://a/b/x", false},
		{"u@a", "https://u@a/x", false},
		{"a", "http://a/x", false}, // another scheme than Normalize found
	}
	for _, tt := range tests {
		if got := isAuthorityOf(tt.host, tt.raw, "https"); got != tt.want {
			t.Errorf("isAuthorityOf(%q, %q) = %v, want %v", tt.host, tt.raw, got, tt.want)
		}
	}
}

func countOf(list []string, s string) int {
	n := 0
	for _, x := range list {
		if x == s {
			n++
		}
	}
	return n
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for i := 0; i < 200; i++ {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("condition not met in time")
}

func TestPrivateAddresses(t *testing.T) {
	e := newEnv(t, envOptions{})
	port := e.evil.port
	tests := []struct {
		name string
		host string
	}{
		{name: "DNS answer in 10/8", host: "internal.example.invalid"},
		{name: "one of two answers is metadata", host: "mixed.example.invalid"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Give the name a rule so that only the address check can refuse.
			set := e.broker.policy
			e.broker.policy = DeciderFunc(func(ctx context.Context, r capability.Request) capability.Decision {
				if r.Kind == capability.NetRequest && strings.HasPrefix(r.Origin, "https://"+tt.host) {
					return capability.Decision{Mode: capability.Allow, Reason: capability.ReasonAllowed}
				}
				return set.Decide(ctx, r)
			})
			defer func() { e.broker.policy = set }()
			before := e.api.bytesIn.Load() + e.evil.bytesIn.Load()
			r := e.get(e.client, fmt.Sprintf("https://%s:%d/x", tt.host, port))
			if r.status != http.StatusForbidden || r.reason() != capability.ReasonNetworkPrivateAddress {
				t.Errorf("GET = %d %s, want 403 NETWORK_PRIVATE_ADDRESS", r.status, r.body)
			}
			if e.api.bytesIn.Load()+e.evil.bytesIn.Load() != before {
				t.Error("bytes reached a server")
			}
		})
	}
}

// DeciderFunc adapts a function to Decider (tests only).
type DeciderFunc func(ctx context.Context, r capability.Request) capability.Decision

func (f DeciderFunc) Decide(ctx context.Context, r capability.Request) capability.Decision {
	return f(ctx, r)
}

func TestResponseCapped(t *testing.T) {
	e := newEnv(t, envOptions{limits: Limits{MaxResponseBytes: 1 << 20}})
	t.Run("declared length", func(t *testing.T) {
		start := time.Now()
		r := e.get(e.client, e.api.origin+"/big/length")
		if r.status != http.StatusBadGateway || r.reason() != capability.ReasonNetworkResponseTooLarge {
			t.Errorf("GET = %d %.200s, want 502 NETWORK_RESPONSE_TOO_LARGE", r.status, r.body)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("took %v", d)
		}
	})
	t.Run("chunked", func(t *testing.T) {
		resp, err := e.client.Get(e.api.origin + "/big/chunked")
		if err != nil {
			t.Fatal(err)
		}
		n, err := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err == nil || n > 1<<20 {
			t.Errorf("read %d bytes, err %v; want at most 1 MiB and an error", n, err)
		}
		waitFor(t, func() bool {
			return slices.Contains(e.sink.reasons(), "deny:"+string(capability.ReasonNetworkResponseTooLarge))
		})
	})
}

func TestRequestLimits(t *testing.T) {
	t.Run("body too large", func(t *testing.T) {
		e := newEnv(t, envOptions{limits: Limits{MaxRequestBytes: 1024}})
		for _, chunked := range []bool{false, true} {
			var body io.Reader = strings.NewReader(strings.Repeat("a", 4096))
			if chunked {
				body = io.MultiReader(body) // unknown length
			}
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodPut, e.api.origin+"/upload", body)
			r := e.do(e.client, req)
			if r.status != http.StatusRequestEntityTooLarge || r.reason() != capability.ReasonNetworkRequestTooLarge {
				t.Errorf("chunked=%v PUT = %d %s, want 413", chunked, r.status, r.body)
			}
		}
		if e.api.count() != 0 {
			t.Error("an oversized request reached the server")
		}
	})
	t.Run("rate", func(t *testing.T) {
		e := newEnv(t, envOptions{limits: Limits{RequestsPerSecond: 0.001, Burst: 2}})
		var codes []int
		for range 4 {
			codes = append(codes, e.get(e.client, e.api.origin+"/repos/acme/issues").status)
		}
		if !slices.Equal(codes, []int{200, 200, 429, 429}) {
			t.Errorf("statuses = %v, want 200 200 429 429", codes)
		}
		if e.api.count() != 2 {
			t.Errorf("server saw %d", e.api.count())
		}
	})
	t.Run("connections", func(t *testing.T) {
		e := newEnv(t, envOptions{limits: Limits{MaxConns: 1}})
		rawTunnel(t, e, strings.TrimPrefix(e.api.origin, "https://")) // holds the only slot
		c2 := e.newClient(true)
		r := e.get(c2, e.api.origin+"/repos/acme/issues")
		if r.err == nil && r.status != http.StatusTooManyRequests {
			t.Errorf("second connection = %d %s, want refused", r.status, r.body)
		}
		c, err := net.Dial("tcp", e.proxyURL.Host)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		c.Close()
		if err != nil || resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("X-Norma-Reason") != string(capability.ReasonBrokerConnectionLimit) {
			t.Errorf("over-limit connection got %v %v", resp, err)
		}
	})
	t.Run("upstream timeout", func(t *testing.T) {
		e := newEnv(t, envOptions{limits: Limits{UpstreamTimeout: 300 * time.Millisecond}})
		r := e.get(e.client, e.api.origin+"/slow")
		if r.status != http.StatusGatewayTimeout || r.reason() != capability.ReasonTimeout {
			t.Errorf("GET /slow = %d %s, want 504 TIMEOUT", r.status, r.body)
		}
		// The timed-out tunnel is closed after its 504; the plugin's next
		// request gets a new one and is served.
		if !r.close {
			t.Error("504 in a tunnel without Connection: close")
		}
		if r := e.get(e.client, e.api.origin+"/repos/acme/issues"); r.status != http.StatusOK {
			t.Errorf("GET after a timeout = %d %s", r.status, r.body)
		}
		// In the middle of a body: the plugin sees a broken body, never a
		// short one, and the next request is served.
		if r := e.get(e.client, e.api.origin+"/slow?body=1"); r.err == nil {
			t.Errorf("GET /slow?body=1 = %d %q without an error, want a broken body", r.status, r.body)
		}
		if r := e.get(e.client, e.api.origin+"/repos/acme/issues"); r.status != http.StatusOK {
			t.Errorf("GET after a timeout in a body = %d %s", r.status, r.body)
		}
		if n := countOf(e.sink.reasons(), "deny:"+string(capability.ReasonTimeout)); n != 1 {
			t.Errorf("%d TIMEOUT denials audited, want 1 (the one before headers)", n)
		}
	})
	t.Run("upstream timeout is per exchange", func(t *testing.T) {
		// One kept-alive tunnel, fast requests with idle gaps longer than
		// the timeout: the tunnel's timer is armed for each exchange only,
		// and fires for none.
		e := newEnv(t, envOptions{limits: Limits{UpstreamTimeout: 300 * time.Millisecond}})
		for i := range 4 {
			if r := e.get(e.client, e.api.origin+"/repos/acme/issues"); r.status != http.StatusOK || r.close {
				t.Fatalf("request %d = %d %s, close %v", i, r.status, r.body, r.close)
			}
			time.Sleep(400 * time.Millisecond)
		}
		if n := e.api.count(); n != 4 {
			t.Errorf("server saw %d requests, want 4", n)
		}
	})
}

func TestHeadersStripped(t *testing.T) {
	e := newEnv(t, envOptions{})
	r := e.get(e.client, e.api.origin+"/repos/acme/issues",
		"Proxy-Authorization", "Basic c2VjcmV0", "Connection", "X-Hop", "X-Hop", "1", "Keep-Alive", "timeout=5", "X-Keep", "yes")
	if r.status != http.StatusOK {
		t.Fatalf("GET = %d", r.status)
	}
	h := e.api.last().Header
	for _, k := range []string{"Proxy-Authorization", "X-Hop", "Keep-Alive", "Proxy-Connection"} {
		if h.Get(k) != "" {
			t.Errorf("%s reached upstream: %q", k, h.Get(k))
		}
	}
	if h.Get("X-Keep") != "yes" {
		t.Error("an end-to-end header was dropped")
	}
	r = e.get(e.client, e.api.origin+"/repos/acme/issues", "Upgrade", "websocket", "Connection", "Upgrade")
	if r.status != http.StatusForbidden || r.reason() != capability.ReasonBrokerProtocol {
		t.Errorf("Upgrade = %d %s, want 403 BROKER_PROTOCOL", r.status, r.body)
	}
}

func TestFailClosed(t *testing.T) {
	t.Run("audit down", func(t *testing.T) {
		e := newEnv(t, envOptions{})
		e.sink.fail.Store(true)
		r := e.get(e.client, e.api.origin+"/repos/acme/issues")
		if r.status != http.StatusForbidden || r.reason() != capability.ReasonAuditUnavailable || e.api.count() != 0 {
			t.Errorf("GET = %d %s (server %d), want 403 AUDIT_UNAVAILABLE and nothing sent", r.status, r.body, e.api.count())
		}
	})
	t.Run("secret missing", func(t *testing.T) {
		e := newEnv(t, envOptions{noValue: true})
		r := e.get(e.client, e.api.origin+"/repos/acme/issues")
		if r.status != http.StatusForbidden || r.reason() != capability.ReasonSecretUnavailable || e.api.count() != 0 {
			t.Errorf("GET = %d %s (server %d), want 403 SECRET_UNAVAILABLE and nothing sent", r.status, r.body, e.api.count())
		}
	})
	t.Run("not a proxy request", func(t *testing.T) {
		e := newEnv(t, envOptions{})
		resp, err := http.Get("http://" + e.proxyURL.Host + "/repos/acme/issues")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("X-Norma-Reason") != string(capability.ReasonBrokerProtocol) {
			t.Errorf("origin-form request = %d", resp.StatusCode)
		}
	})
	t.Run("upstream certificate not trusted", func(t *testing.T) {
		e := newEnv(t, envOptions{upstreamRoots: x509.NewCertPool()}) // not the upstream's CA
		r := e.get(e.client, e.api.origin+"/repos/acme/issues")
		if r.status != http.StatusBadGateway || r.reason() != capability.ReasonNetworkUpstreamFailed {
			t.Errorf("GET = %d %s, want 502 NETWORK_UPSTREAM_FAILED", r.status, r.body)
		}
		if e.api.count() != 0 {
			t.Error("a request was sent over an unverified connection")
		}
	})
}

func TestEnv(t *testing.T) {
	e := newEnv(t, envOptions{})
	got := map[string]string{}
	for _, kv := range e.broker.Env() {
		k, v, _ := strings.Cut(kv, "=")
		got[k] = v
	}
	proxy := "http://" + e.proxyURL.Host
	for k, want := range map[string]string{
		"HTTP_PROXY": proxy, "HTTPS_PROXY": proxy, "https_proxy": proxy, "NO_PROXY": "",
		"SSL_CERT_FILE": e.ca.CertPath(), "NODE_EXTRA_CA_CERTS": e.ca.CertPath(), "REQUESTS_CA_BUNDLE": e.ca.CertPath(),
		"ISSUE_TOKEN": e.placeholder(),
	} {
		if v, ok := got[k]; !ok || v != want {
			t.Errorf("Env %s = %q, want %q", k, v, want)
		}
	}
	for k, v := range got {
		if strings.Contains(v, canary) || strings.Contains(v, CAKeyFile) {
			t.Errorf("Env %s leaks %q", k, v)
		}
		// A manifest's env may not override what the broker sets (a
		// secret's variable is refused by the manifest on its own).
		if k != "ISSUE_TOKEN" && !manifest.ReservedEnv(k) {
			t.Errorf("Env sets %s, which manifest.ReservedEnv does not reserve", k)
		}
	}
}

func TestUnixSocket(t *testing.T) {
	e := newEnv(t, envOptions{})
	sock := t.TempDir() + "/broker.sock"
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(ln, e.broker.cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Go(func() { b.Serve(ctx) })
	defer func() { cancel(); wg.Wait() }()
	if env := b.Env(); !slices.Contains(env, "NORMA_BROKER_SOCKET="+sock) || slices.ContainsFunc(env, func(s string) bool { return strings.HasPrefix(s, "HTTP_PROXY=") }) {
		t.Errorf("Env = %v", env)
	}
	c := &http.Client{Transport: &http.Transport{
		Proxy: http.ProxyURL(e.proxyURL), // the dialer below ignores the address
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		},
		TLSClientConfig: &tls.Config{RootCAs: e.ca.Pool()},
	}}
	r := e.get(c, e.api.origin+"/repos/acme/issues")
	if r.status != http.StatusOK || e.api.last().Header.Get("Authorization") != "Bearer "+canary {
		t.Errorf("GET over unix socket = %d %s", r.status, r.body)
	}
}

func TestNewValidates(t *testing.T) {
	ca, err := LoadOrCreateCA(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	defer ln.Close()
	ok := Config{Identity: Identity{Plugin: "p", Process: "1"}, Policy: DeciderFunc(nil), Audit: &recSink{}, CA: ca}
	tests := []struct {
		name string
		mut  func(*Config)
	}{
		{"no policy", func(c *Config) { c.Policy = nil }},
		{"no audit", func(c *Config) { c.Audit = nil }},
		{"no CA", func(c *Config) { c.CA = nil }},
		{"no process", func(c *Config) { c.Identity.Process = "" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ok
			tt.mut(&c)
			if _, err := New(ln, c); err == nil {
				t.Error("New succeeded")
			}
		})
	}
	if _, err := New(ln, ok); err != nil {
		t.Errorf("control: New = %v", err)
	}
	if _, err := New(nil, ok); err == nil || !strings.Contains(err.Error(), "listener") {
		t.Errorf("New(nil) = %v", err)
	}
}
