package bench

import (
	"bufio"
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"
)

// startBareTLSProxy runs the least a TLS-terminating proxy does, and
// nothing else: on CONNECT it hijacks the connection, ends the client's TLS
// (with the server's own certificate, so the client needs no other root)
// and serves HTTP/1.1 on it, sending every request on to u over one pooled
// http.Transport and copying the response back. No policy, no secrets, no
// audit, no logging. It is the floor under the broker's per-request cost:
// what terminating TLS in Go's net/http costs over smokescreen's byte copy.
func startBareTLSProxy(tb testing.TB, u *upstreamServer) *http.Client {
	tb.Helper()
	up := directClient(u).Transport.(*http.Transport)
	up.DisableCompression = true
	cert := u.srv.TLS.Certificates[0]
	var wg sync.WaitGroup
	forward := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		out, err := http.NewRequestWithContext(r.Context(), r.Method, "https://"+r.Host+r.URL.RequestURI(), r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		out.Header = r.Header.Clone()
		resp, err := up.RoundTrip(out)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		io.Copy(w, resp.Body)
	})
	front := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodConnect {
			http.Error(w, "CONNECT only", http.StatusMethodNotAllowed)
			return
		}
		conn, brw, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		if _, err := conn.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n")); err != nil {
			conn.Close()
			return
		}
		tc := tls.Server(&bufConn{Conn: conn, r: brw.Reader}, &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"http/1.1"}})
		wg.Add(1)
		defer wg.Done()
		(&http.Server{Handler: forward}).Serve(&oneConn{c: tc, done: make(chan struct{})})
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	go front.Serve(ln)
	tr := &http.Transport{
		Proxy:           http.ProxyURL(&url.URL{Scheme: "http", Host: ln.Addr().String()}),
		TLSClientConfig: &tls.Config{RootCAs: u.roots},
	}
	tb.Cleanup(func() {
		tr.CloseIdleConnections()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		front.Shutdown(ctx)
		wg.Wait()
		up.CloseIdleConnections()
	})
	return &http.Client{Timeout: 30 * time.Second, Transport: tr}
}

// bufConn reads what the CONNECT's reader already buffered first.
type bufConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// oneConn is a net.Listener of one connection: Accept returns it once,
// then blocks until the connection is closed.
type oneConn struct {
	c    net.Conn
	once sync.Once
	done chan struct{}
	used bool
}

func (l *oneConn) Accept() (net.Conn, error) {
	if !l.used {
		l.used = true
		return &closeNotify{Conn: l.c, l: l}, nil
	}
	<-l.done
	return nil, net.ErrClosed
}

func (l *oneConn) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *oneConn) Addr() net.Addr { return l.c.LocalAddr() }

type closeNotify struct {
	net.Conn
	l *oneConn
}

func (c *closeNotify) Close() error {
	c.l.Close()
	return c.Conn.Close()
}

// BenchmarkBareTLSProxyGET is the GET through startBareTLSProxy.
func BenchmarkBareTLSProxyGET(b *testing.B) {
	u := newUpstream(b)
	benchGET(b, startBareTLSProxy(b, u), u.origin+apiPath)
}

// TestBareTLSProxy checks the bare proxy reaches the server and adds
// nothing (no credential).
func TestBareTLSProxy(t *testing.T) {
	u := newUpstream(t)
	if st, body, err := get(startBareTLSProxy(t, u), u.origin+apiPath); err != nil || st != http.StatusOK || body != `[{"number":42}]` {
		t.Fatalf("bare proxy GET = %d %q %v", st, body, err)
	}
	if u.auth() != "" {
		t.Errorf("bare proxy carried Authorization %q", u.auth())
	}
}
