package netguard

import (
	"context"
	"net"
	"net/netip"
	"strconv"
	"testing"

	"github.com/norma-run/norma/capability"
)

// mappingResolver is a fakeResolver that sends every connection to a
// name it knows to port.
type mappingResolver struct {
	*fakeResolver
	port uint16
}

func (r mappingResolver) MapPort(host string, _ uint16) uint16 {
	if _, ok := r.answers[host]; ok {
		return r.port
	}
	return 0
}

// TestDialerPortMapper: a Resolver that is a PortMapper moves a name's
// connections to another port (the demo's API on a high port stands in
// for :443); the address is still checked, and an IP literal is never
// mapped.
func TestDialerPortMapper(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	port := uint16(ln.Addr().(*net.TCPAddr).Port)
	r := mappingResolver{newResolver(map[string][]string{"api.example.invalid": {"127.0.0.1"}}), port}
	ctx := context.Background()

	d := &Dialer{Resolver: r, AllowPrivate: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
	c, err := d.DialContext(ctx, "tcp", "API.example.invalid.:443")
	if err != nil {
		t.Fatalf("DialContext(api.example.invalid:443) = %v, want a connection to port %d", err, port)
	}
	if got := c.RemoteAddr().String(); got != "127.0.0.1:"+strconv.Itoa(int(port)) {
		t.Errorf("connected to %s", got)
	}
	c.Close()

	// The mapped address is checked like any other: without allow_private
	// loopback is refused.
	strict := &Dialer{Resolver: r}
	if _, err := strict.DialContext(ctx, "tcp", "api.example.invalid:443"); capability.ReasonOf(err) != capability.ReasonNetworkPrivateAddress {
		t.Errorf("without allow_private: %v, want NETWORK_PRIVATE_ADDRESS", err)
	}
	// An IP literal keeps its port (nothing listens on 127.0.0.1:1).
	if c, err := d.DialContext(ctx, "tcp", "127.0.0.1:1"); err == nil {
		c.Close()
		t.Error("an IP literal was mapped")
	}
}
