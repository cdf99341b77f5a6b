package broker

import (
	"bytes"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"syscall"
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

// body4KiB is a clean 4 KiB JSON request body (chat messages), what the
// content check scans on every request that carries one.
func body4KiB() []byte {
	var b bytes.Buffer
	b.WriteString(`{"messages":[`)
	for i := 0; b.Len() < 4100; i++ {
		fmt.Fprintf(&b, `{"role":"user","id":"msg_%06d","content":"Please summarise the report for quarter %d and list the open issues."},`, i, i%4+1)
	}
	return append(b.Bytes()[:4094], "]}"...)
}

// benchPUT sends PUTs of body through c and reports requests per second
// and the process's CPU time per request (client, broker and server all
// run in it): on a shared machine wall ns/op swings with other load,
// cpu-ns/op is what the request costs.
func benchPUT(b *testing.B, c *http.Client, url string, body []byte) {
	b.ReportAllocs()
	start, cpu0 := time.Now(), cpuNow()
	n := 0
	for b.Loop() {
		req, _ := http.NewRequest(http.MethodPut, url, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := c.Do(req)
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

// cpuNow is the process's CPU time, user and system, every thread.
func cpuNow() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkDirectPUT4KiB and BenchmarkBrokerPUT4KiB: a 4 KiB JSON body
// straight to the loopback server and through the broker (which scans
// it, issue 29); their difference is the broker's added latency.
func BenchmarkDirectPUT4KiB(b *testing.B) {
	e := newEnv(b, envOptions{limits: Limits{RequestsPerSecond: -1}})
	d := &netguard.Dialer{Resolver: e.resolver, AllowPrivate: e.broker.cfg.AllowPrivate}
	c := &http.Client{Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: e.broker.cfg.UpstreamRootCAs, ServerName: "api.example.invalid"},
		DialContext:     d.DialContext,
	}}
	benchPUT(b, c, e.api.origin+"/upload", body4KiB())
}

func BenchmarkBrokerPUT4KiB(b *testing.B) {
	e := newEnv(b, envOptions{limits: Limits{RequestsPerSecond: -1}})
	benchPUT(b, e.client, e.api.origin+"/upload", body4KiB())
}
