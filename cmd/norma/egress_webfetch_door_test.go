package main

import (
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/norma-run/norma/secret/secrettest"
)

// countedTLS is a loopback HTTPS server that counts every byte and
// connection it receives (TLS handshakes included), with a CA file the
// norma process trusts it by (SSL_CERT_FILE).
type countedTLS struct {
	origin, caFile string
	bytes, conns   atomic.Int64
	mu             sync.Mutex
	got            []string // request URIs and bodies
}

type countingConn struct {
	net.Conn
	n *atomic.Int64
}

func (c countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.n.Add(int64(n))
	return n, err
}

type countingListener struct {
	net.Listener
	s *countedTLS
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.s.conns.Add(1)
	return countingConn{c, &l.s.bytes}, nil
}

func newCountedTLS(t *testing.T) *countedTLS {
	t.Helper()
	s := &countedTLS{}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		buf := new(strings.Builder)
		if r.Body != nil {
			b := make([]byte, 64<<10)
			n, _ := r.Body.Read(b)
			buf.Write(b[:n])
		}
		s.mu.Lock()
		s.got = append(s.got, r.RequestURI+" "+buf.String())
		s.mu.Unlock()
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, "received")
	}))
	srv.Listener = countingListener{srv.Listener, s}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	s.origin = srv.URL
	s.caFile = filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(s.caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	return s
}

// egressVault is a vault value for the egress door tests; it holds the
// run canary, so that every door output is scanned for it.
const egressVault = "VAULT-" + runCanary + "-7a2f9d"

// egressCases are the requests that must not leave: the vault value as
// written and encoded, a token of each family, a card number; each is a
// query value (escaped as a client would).
func egressCases() []secrettest.Sample {
	out := []secrettest.Sample{{Name: "vault", Detector: "known-value", Text: egressVault},
		{Name: "vault base64", Detector: "known-value", Text: base64.StdEncoding.EncodeToString([]byte(egressVault))}}
	for _, e := range secrettest.Encoded(egressVault) {
		out = append(out, secrettest.Sample{Name: "vault " + e.Name, Detector: "known-value", Text: e.Text})
	}
	for _, s := range secrettest.Tokens() {
		out = append(out, s)
	}
	out = append(out, secrettest.Sample{Name: "card", Detector: "card-number", Text: "4111 1111 1111 1111"},
		secrettest.Sample{Name: "iban", Detector: "iban", Text: "GB82 WEST 1234 5698 7654 32"},
		secrettest.Sample{Name: "gh base64", Detector: "github-token", Text: base64.StdEncoding.EncodeToString([]byte(secrettest.Tokens()[0].Text))})
	return out
}

// TestDoorEgressWebFetch: WebFetch from `norma run` toward an allowed
// loopback HTTPS origin. Every call that carries a vault value (as
// written or encoded), a token of each family or a card number is refused
// with SECRET_EGRESS or SENSITIVE_DATA_EGRESS, naming the detector; the
// server receives nothing — not a connection, not a byte. Then the benign
// twins (documentation of formats, an expired-token error, a base64
// image, a UUID in the URL, git status output) are fetched.
func TestDoorEgressWebFetch(t *testing.T) {
	e := newRunEnv(t)
	web := newCountedTLS(t)
	env := []string{"SSL_CERT_FILE=" + web.caFile, "XDG_CONFIG_HOME=" + t.TempDir()}
	set := exec.Command(normaBin(t), "--home", e.home, "secret", "set", "deploy_token")
	set.Stdin = strings.NewReader(egressVault + "\n")
	if out, err := set.CombinedOutput(); err != nil {
		t.Fatalf("secret set: %v\n%s", err, out)
	}
	os.MkdirAll(filepath.Join(e.ws, ".norma"), 0o755)
	settings := fmt.Sprintf("network:\n  requests:\n    - {origin: %q, methods: [GET], paths: [\"/page\", \"/page/{id}\"]}\n  allow_private: [\"127.0.0.1/32\"]\n", web.origin)
	if err := os.WriteFile(filepath.Join(e.ws, ".norma", "settings.yaml"), []byte(settings), 0o644); err != nil {
		t.Fatal(err)
	}
	trustWorkspace(t, env, e.home, e.ws)
	run := func(calls []string) map[string]map[string]any {
		t.Helper()
		script := "turns:\n  - tool_calls:\n"
		for i, c := range calls {
			script += fmt.Sprintf("      - {id: c%d, name: WebFetch, input: {url: %q}}\n", i, c)
		}
		script += "  - text: done\n"
		code, out, errs := doorEnv(t, env, "--home", e.home, "run", "--workspace", e.ws, "--provider", "scripted", "--script", e.script(t, script), "--json", "fetch")
		if code != 0 {
			t.Fatalf("run: exit %d\n%s%s", code, out, errs)
		}
		for _, c := range egressCases() {
			if len(c.Text) > 12 && strings.Contains(out+errs, c.Text) {
				t.Errorf("%s: the value is in the run's output", c.Name)
			}
		}
		return toolCalls(jsonLines(t, out))
	}

	cases := egressCases()
	var urls []string
	for _, c := range cases {
		urls = append(urls, web.origin+"/page?q="+url.QueryEscape(c.Text))
	}
	calls := run(urls)
	for i, c := range cases {
		got := calls[fmt.Sprintf("c%d", i)]
		want := "SECRET_EGRESS"
		if c.Detector == "card-number" || c.Detector == "iban" {
			want = "SENSITIVE_DATA_EGRESS"
		}
		if got == nil || got["reason"] != want {
			t.Errorf("%s: %v, want %s", c.Name, got, want)
		}
	}
	if b, n := web.bytes.Load(), web.conns.Load(); b != 0 || n != 0 {
		t.Fatalf("the server received %d bytes on %d connections: %q", b, n, web.got)
	}

	var benign []string
	for _, s := range secrettest.Benign() {
		benign = append(benign, web.origin+"/page?q="+url.QueryEscape(s.Text))
	}
	benign = append(benign, web.origin+"/page/550e8400-e29b-41d4-a716-446655440000", web.origin+"/page?img="+url.QueryEscape(secrettest.Image()[:1500]))
	calls = run(benign)
	for i := range benign {
		if got := calls[fmt.Sprintf("c%d", i)]; got == nil || got["reason"] != "ALLOWED" || got["is_error"] != false {
			t.Errorf("benign %s: %v", benign[i], got)
		}
	}
	if web.conns.Load() == 0 {
		t.Fatal("the benign fetches never reached the server")
	}
}
