package netguard

import (
	"net/netip"
	"testing"

	"github.com/norma-run/norma/capability"
)

// addrTests lists boundary cases for CheckAddr with the RFC that defines each
// range. allow is the allow_private list (nil = none); ok = may be dialed.
var addrTests = []struct {
	name  string
	addr  string
	allow []string
	ok    bool
}{
	// Public unicast.
	{"public v4", "93.184.216.34", nil, true},
	{"public v4 8.8.8.8", "8.8.8.8", nil, true},
	{"public v6", "2606:4700::1111", nil, true},
	// RFC 791 "this network" / unspecified.
	{"unspecified v4", "0.0.0.0", nil, false},
	{"this network upper bound", "0.255.255.255", nil, false},
	{"just above this network", "1.0.0.0", nil, true},
	// RFC 1918.
	{"10/8 low", "10.0.0.0", nil, false},
	{"10/8 high", "10.255.255.255", nil, false},
	{"just below 10/8", "9.255.255.255", nil, true},
	{"just above 10/8", "11.0.0.0", nil, true},
	{"172.16/12 low", "172.16.0.0", nil, false},
	{"172.16/12 high", "172.31.255.255", nil, false},
	{"just below 172.16/12", "172.15.255.255", nil, true},
	{"just above 172.16/12", "172.32.0.0", nil, true},
	{"192.168/16", "192.168.1.1", nil, false},
	{"just above 192.168/16", "192.169.0.0", nil, true},
	// RFC 6598 CGNAT 100.64.0.0/10.
	{"CGNAT low", "100.64.0.0", nil, false},
	{"CGNAT high", "100.127.255.255", nil, false},
	{"just below CGNAT", "100.63.255.255", nil, true},
	{"just above CGNAT", "100.128.0.0", nil, true},
	// RFC 1122 loopback.
	{"loopback", "127.0.0.1", nil, false},
	{"loopback high", "127.255.255.254", nil, false},
	{"just above loopback", "128.0.0.0", nil, true},
	// RFC 3927 link-local and the metadata endpoints in it.
	{"link-local", "169.254.1.1", nil, false},
	{"AWS/GCP/Azure metadata", "169.254.169.254", nil, false},
	{"AWS ECS metadata", "169.254.170.2", nil, false},
	{"just above link-local", "169.255.0.0", nil, true},
	// Other metadata endpoints.
	{"Alibaba metadata (CGNAT)", "100.100.100.200", nil, false},
	{"Oracle metadata (RFC 6890 192.0.0/24)", "192.0.0.192", nil, false},
	{"Azure WireServer (public address)", "168.63.129.16", nil, false},
	{"next to Azure WireServer", "168.63.129.17", nil, true},
	{"AWS IMDS v6", "fd00:ec2::254", nil, false},
	// RFC 6890 / 5737 / 2544 / 7526 special purpose.
	{"IETF protocol assignments", "192.0.0.8", nil, false},
	{"TEST-NET-1", "192.0.2.1", nil, false},
	{"TEST-NET-2", "198.51.100.1", nil, false},
	{"TEST-NET-3", "203.0.113.255", nil, false},
	{"6to4 relay anycast", "192.88.99.1", nil, false},
	{"benchmarking low", "198.18.0.0", nil, false},
	{"benchmarking high", "198.19.255.255", nil, false},
	{"just above benchmarking", "198.20.0.0", nil, true},
	// RFC 5771 multicast, RFC 1112 reserved, RFC 919 broadcast.
	{"multicast low", "224.0.0.0", nil, false},
	{"multicast high", "239.255.255.255", nil, false},
	{"reserved", "240.0.0.1", nil, false},
	{"broadcast", "255.255.255.255", nil, false},
	{"just below multicast", "223.255.255.255", nil, true},
	// RFC 4291 IPv6 specials.
	{"v6 unspecified", "::", nil, false},
	{"v6 loopback", "::1", nil, false},
	{"v6 link-local", "fe80::1", nil, false},
	{"v6 link-local with zone", "fe80::1%eth0", nil, false},
	{"v6 site-local (RFC 3879)", "fec0::1", nil, false},
	{"v6 multicast", "ff02::1", nil, false},
	{"v6 ULA low (RFC 4193)", "fc00::", nil, false},
	{"v6 ULA high", "fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", nil, false},
	{"just below ULA (outside 2000::/3)", "fbff::1", nil, false},
	{"v6 discard-only (RFC 6666)", "100::1", nil, false},
	{"v6 documentation (RFC 3849)", "2001:db8::1", nil, false},
	{"v6 documentation (RFC 9637)", "3fff::1", nil, false},
	{"v6 benchmarking (RFC 5180)", "2001:2::1", nil, false},
	{"v6 global unicast top", "3ffe::1", nil, true},
	{"v6 above 2000::/3", "4000::1", nil, false},
	// IPv4-mapped (RFC 4291 2.5.5.2): unmapped before checking.
	{"mapped private", "::ffff:10.0.0.1", nil, false},
	{"mapped loopback", "::ffff:127.0.0.1", nil, false},
	{"mapped metadata", "::ffff:169.254.169.254", nil, false},
	{"mapped public", "::ffff:8.8.8.8", nil, true},
	// IPv4-compatible (RFC 4291 2.5.5.1, deprecated) and IPv4-translated (RFC 2765).
	{"compat private", "::10.0.0.1", nil, false},
	{"compat public (deprecated, refused)", "::8.8.8.8", nil, false},
	{"translated private", "::ffff:0:10.0.0.1", nil, false},
	// NAT64 (RFC 6052, RFC 8215).
	{"NAT64 loopback", "64:ff9b::127.0.0.1", nil, false},
	{"NAT64 metadata", "64:ff9b::a9fe:a9fe", nil, false},
	{"NAT64 public", "64:ff9b::8.8.8.8", nil, true},
	{"NAT64 local-use", "64:ff9b:1::8.8.8.8", nil, false},
	// 6to4 (RFC 3056).
	{"6to4 private", "2002:0a00:0001::1", nil, false},
	{"6to4 loopback", "2002:7f00:1::", nil, false},
	{"6to4 public", "2002:0808:0808::1", nil, true},
	// Teredo (RFC 4380): server in bits 32-63, client XOR 0xff in the last 32.
	{"Teredo client loopback", "2001:0:0808:0808::80ff:fffe", nil, false},
	{"Teredo server private", "2001:0:0a00:0001::f7f7:f7f7", nil, false},
	{"Teredo public both", "2001:0:0808:0808::f7f7:f7f7", nil, true},
	// allow_private admits what it contains, and only that.
	{"loopback admitted", "127.0.0.1", []string{"127.0.0.0/8"}, true},
	{"loopback not in narrower prefix", "127.0.0.2", []string{"127.0.0.1/32"}, false},
	{"private admitted", "10.1.2.3", []string{"10.0.0.0/8"}, true},
	{"mapped private admitted by v4 prefix", "::ffff:10.0.0.1", []string{"10.0.0.0/8"}, true},
	{"private admitted by mapped prefix", "10.0.0.1", []string{"::ffff:10.0.0.0/104"}, true},
	{"NAT64 private admitted by v4 prefix", "64:ff9b::a00:1", []string{"10.0.0.0/8"}, true},
	{"ULA admitted", "fd12:3456::1", []string{"fd00::/8"}, true},
	{"other private not admitted", "192.168.0.1", []string{"10.0.0.0/8"}, false},
	{"metadata not admitted by link-local range", "169.254.169.254", []string{"169.254.0.0/16"}, false},
	{"metadata not admitted by everything", "169.254.169.254", []string{"0.0.0.0/0"}, false},
	{"metadata admitted by exact /32", "169.254.169.254", []string{"169.254.169.254/32"}, true},
	{"v6 metadata not admitted by ULA range", "fd00:ec2::254", []string{"fc00::/7"}, false},
	{"link-local admitted next to metadata", "169.254.1.1", []string{"169.254.0.0/16"}, true},
	{"invalid prefix ignored", "127.0.0.1", []string{""}, false},
	{"zero address", "", nil, false},
}

func TestCheckAddr(t *testing.T) {
	for _, tt := range addrTests {
		t.Run(tt.name, func(t *testing.T) {
			var a netip.Addr
			if tt.addr != "" {
				a = netip.MustParseAddr(tt.addr)
			}
			allow := parsePrefixes(t, tt.allow)
			err := CheckAddr(a, allow)
			if tt.ok && err != nil {
				t.Fatalf("CheckAddr(%s, %v) = %v, want nil", tt.addr, tt.allow, err)
			}
			if !tt.ok {
				if err == nil {
					t.Fatalf("CheckAddr(%s, %v) = nil, want %s", tt.addr, tt.allow, capability.ReasonNetworkPrivateAddress)
				}
				if r := capability.ReasonOf(err); r != capability.ReasonNetworkPrivateAddress {
					t.Fatalf("CheckAddr(%s) reason = %q, want %s", tt.addr, r, capability.ReasonNetworkPrivateAddress)
				}
			}
		})
	}
}

func parsePrefixes(tb testing.TB, ss []string) []netip.Prefix {
	var out []netip.Prefix
	for _, s := range ss {
		p, err := netip.ParsePrefix(s)
		if err != nil && s != "" {
			tb.Fatalf("ParsePrefix(%q): %v", s, err)
		}
		out = append(out, p) // an invalid prefix stays the zero Prefix
	}
	return out
}

func TestCheckAddrAllowNoAlloc(t *testing.T) {
	allow := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	for _, s := range []string{"8.8.8.8", "2606:4700::1111", "10.0.0.1", "::ffff:10.0.0.1", "2001:0:0808:0808::f7f7:f7f7"} {
		a := netip.MustParseAddr(s)
		if n := testing.AllocsPerRun(100, func() { _ = CheckAddr(a, allow) }); n != 0 {
			t.Errorf("CheckAddr(%s) allocates %v times, want 0", s, n)
		}
	}
}
