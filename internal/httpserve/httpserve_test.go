package httpserve

import (
	"context"
	"io"
	"net"
	"net/http"
	"testing"
)

// TestShutdownStopsEveryListener: one Shutdown ends the Serve of each
// listener with nil, and neither accepts afterwards.
func TestShutdownStopsEveryListener(t *testing.T) {
	var g Group
	h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") })
	var lns []net.Listener
	done := make(chan error, 2)
	for range 2 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		go func() { done <- g.Serve(ln, &http.Server{Handler: h}) }()
	}
	for _, ln := range lns {
		res, err := http.Get("http://" + ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
	}
	if err := g.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := <-done; err != nil {
			t.Errorf("Serve after Shutdown = %v, want nil", err)
		}
	}
	for _, ln := range lns {
		if c, err := net.Dial("tcp", ln.Addr().String()); err == nil {
			c.Close()
			t.Errorf("%s still accepts", ln.Addr())
		}
	}
}
