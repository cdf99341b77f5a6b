package netguard

import (
	"net/netip"
	"testing"

	"github.com/norma-run/norma/capability"
)

// FuzzCheckAddr checks CheckAddr against the netip predicates: anything that
// netip calls loopback, private, link-local, multicast or unspecified (after
// unmapping) is refused, and every mapped form gets the same answer as its
// IPv4 address.
func FuzzCheckAddr(f *testing.F) {
	for _, tt := range addrTests {
		if tt.addr != "" {
			a := netip.MustParseAddr(tt.addr).WithZone("").As16()
			f.Add(a[:])
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) != 16 {
			return
		}
		a := netip.AddrFrom16([16]byte(b))
		err := CheckAddr(a, nil)
		u := a.Unmap()
		if (u.IsLoopback() || u.IsPrivate() || u.IsLinkLocalUnicast() || u.IsMulticast() || u.IsUnspecified() ||
			!u.IsGlobalUnicast()) && err == nil {
			t.Fatalf("CheckAddr(%s) = nil for a non-public address", a)
		}
		if err != nil && capability.ReasonOf(err) != capability.ReasonNetworkPrivateAddress {
			t.Fatalf("CheckAddr(%s) reason %q", a, capability.ReasonOf(err))
		}
		if (CheckAddr(u, nil) == nil) != (err == nil) {
			t.Fatalf("CheckAddr(%s) and CheckAddr(%s) disagree", a, u)
		}
	})
}
