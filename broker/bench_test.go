package broker

import (
	"crypto/tls"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/norma-run/norma/guard/netguard"
)

// benchGET runs GETs of a small JSON document through c, with keep-alive,
// and reports requests per second.
func benchGET(b *testing.B, c *http.Client, url string) {
	b.ReportAllocs()
	start := time.Now()
	n := 0
	for b.Loop() {
		resp, err := c.Get(url)
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
}

// BenchmarkDirectGET is the baseline: an HTTPS GET straight to the
// loopback server.
func BenchmarkDirectGET(b *testing.B) {
	e := newEnv(b, envOptions{limits: Limits{RequestsPerSecond: -1}})
	d := &netguard.Dialer{Resolver: e.resolver, AllowPrivate: e.broker.cfg.AllowPrivate}
	c := &http.Client{Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: e.broker.cfg.UpstreamRootCAs, ServerName: "api.example.invalid"},
		DialContext:     d.DialContext,
	}}
	benchGET(b, c, e.api.origin+"/repos/acme/issues")
}

// BenchmarkBrokerGET is the same GET through the broker: CONNECT tunnel
// (kept alive), TLS termination, policy decision, secret injection,
// audit event, upstream TLS (pooled) and response masking.
func BenchmarkBrokerGET(b *testing.B) {
	e := newEnv(b, envOptions{limits: Limits{RequestsPerSecond: -1}})
	benchGET(b, e.client, e.api.origin+"/repos/acme/issues")
}

// BenchmarkBrokerGETNewConn opens a new plugin connection (CONNECT + TLS
// handshake with a cached leaf) for every request: the worst case of a
// client without keep-alive.
func BenchmarkBrokerGETNewConn(b *testing.B) {
	e := newEnv(b, envOptions{limits: Limits{RequestsPerSecond: -1}})
	c := e.newClient(true)
	c.Transport.(*http.Transport).DisableKeepAlives = true
	benchGET(b, c, e.api.origin+"/repos/acme/issues")
}
