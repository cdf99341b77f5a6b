package netguard

import (
	"net/netip"

	"github.com/norma-run/norma/capability"
)

// addrClass names why an address is refused; the name goes into the error
// detail together with the RFC that defines the range.
type addrClass struct {
	name string
	rfc  string
	// metadata marks cloud instance-metadata endpoints: an allow_private
	// prefix admits them only when it names the single address (/32 or
	// /128), never through a wider range such as 169.254.0.0/16.
	metadata bool
}

var (
	classThisNet    = &addrClass{name: "this-network", rfc: "RFC 791"}
	classPrivate    = &addrClass{name: "private", rfc: "RFC 1918"}
	classCGNAT      = &addrClass{name: "shared address space (CGNAT)", rfc: "RFC 6598"}
	classLoopback   = &addrClass{name: "loopback", rfc: "RFC 1122"}
	classLinkLocal  = &addrClass{name: "link-local", rfc: "RFC 3927"}
	classIETF       = &addrClass{name: "IETF protocol assignment", rfc: "RFC 6890"}
	classDoc        = &addrClass{name: "documentation", rfc: "RFC 5737"}
	class6to4Relay  = &addrClass{name: "6to4 relay anycast", rfc: "RFC 7526"}
	classBenchmark  = &addrClass{name: "benchmarking", rfc: "RFC 2544"}
	classMulticast  = &addrClass{name: "multicast", rfc: "RFC 5771"}
	classReserved   = &addrClass{name: "reserved", rfc: "RFC 1112"}
	classBroadcast  = &addrClass{name: "limited broadcast", rfc: "RFC 919"}
	classMetadata   = &addrClass{name: "cloud metadata endpoint", rfc: "provider documentation", metadata: true}
	classUnspec6    = &addrClass{name: "unspecified", rfc: "RFC 4291"}
	classLoopback6  = &addrClass{name: "loopback", rfc: "RFC 4291"}
	classNotGlobal6 = &addrClass{name: "outside global unicast 2000::/3", rfc: "RFC 4291"}
	classNAT64Local = &addrClass{name: "local-use NAT64", rfc: "RFC 8215"}
	classDoc6       = &addrClass{name: "documentation", rfc: "RFC 3849"}
	classDoc6b      = &addrClass{name: "documentation", rfc: "RFC 9637"}
	classBench6     = &addrClass{name: "benchmarking", rfc: "RFC 5180"}
	classORCHID     = &addrClass{name: "ORCHID (deprecated)", rfc: "RFC 4843"}
	classULA        = &addrClass{name: "unique-local", rfc: "RFC 4193"}
	classLinkLocal6 = &addrClass{name: "link-local", rfc: "RFC 4291"}
	classSiteLocal6 = &addrClass{name: "site-local (deprecated)", rfc: "RFC 3879"}
	classMulticast6 = &addrClass{name: "multicast", rfc: "RFC 4291"}
)

type deniedRange struct {
	p     netip.Prefix
	class *addrClass
}

// metadataAddrs are the instance-metadata endpoints of the big clouds. Most
// also fall in a refused range; they are listed so that a broad
// allow_private prefix does not expose them (see addrClass.metadata).
var metadataAddrs = []deniedRange{
	{netip.MustParsePrefix("169.254.169.254/32"), classMetadata}, // AWS, GCP, Azure, OCI, DigitalOcean, OpenStack
	{netip.MustParsePrefix("169.254.170.2/32"), classMetadata},   // AWS ECS task metadata
	{netip.MustParsePrefix("169.254.169.123/32"), classMetadata}, // AWS time sync
	{netip.MustParsePrefix("169.254.169.253/32"), classMetadata}, // AWS DNS
	{netip.MustParsePrefix("100.100.100.200/32"), classMetadata}, // Alibaba Cloud
	{netip.MustParsePrefix("192.0.0.192/32"), classMetadata},     // Oracle Cloud (legacy)
	{netip.MustParsePrefix("168.63.129.16/32"), classMetadata},   // Azure WireServer (a public address)
	{netip.MustParsePrefix("fd00:ec2::254/128"), classMetadata},  // AWS IMDS over IPv6
	{netip.MustParsePrefix("fd00:ec2::23/128"), classMetadata},   // AWS time sync over IPv6
	{netip.MustParsePrefix("fd20:ce::254/128"), classMetadata},   // GCP metadata over IPv6
}

// deniedV4 lists the IPv4 special-purpose ranges (RFC 6890 registry) that are
// not globally reachable unicast, plus multicast and broadcast.
var deniedV4 = []deniedRange{
	{netip.MustParsePrefix("0.0.0.0/8"), classThisNet},
	{netip.MustParsePrefix("10.0.0.0/8"), classPrivate},
	{netip.MustParsePrefix("100.64.0.0/10"), classCGNAT},
	{netip.MustParsePrefix("127.0.0.0/8"), classLoopback},
	{netip.MustParsePrefix("169.254.0.0/16"), classLinkLocal},
	{netip.MustParsePrefix("172.16.0.0/12"), classPrivate},
	{netip.MustParsePrefix("192.0.0.0/24"), classIETF},
	{netip.MustParsePrefix("192.0.2.0/24"), classDoc},
	{netip.MustParsePrefix("192.88.99.0/24"), class6to4Relay},
	{netip.MustParsePrefix("192.168.0.0/16"), classPrivate},
	{netip.MustParsePrefix("198.18.0.0/15"), classBenchmark},
	{netip.MustParsePrefix("198.51.100.0/24"), classDoc},
	{netip.MustParsePrefix("203.0.113.0/24"), classDoc},
	{netip.MustParsePrefix("224.0.0.0/4"), classMulticast},
	{netip.MustParsePrefix("255.255.255.255/32"), classBroadcast},
	{netip.MustParsePrefix("240.0.0.0/4"), classReserved},
}

var (
	nat64   = netip.MustParsePrefix("64:ff9b::/96")    // RFC 6052 well-known prefix
	sixTo4  = netip.MustParsePrefix("2002::/16")       // RFC 3056
	teredo  = netip.MustParsePrefix("2001::/32")       // RFC 4380
	compat4 = netip.MustParsePrefix("::/96")           // RFC 4291 IPv4-compatible (deprecated)
	siit    = netip.MustParsePrefix("::ffff:0:0:0/96") // RFC 2765 IPv4-translated
)

// deniedV6 lists IPv6 ranges refused outright. Everything outside 2000::/3
// (global unicast) is refused too (classNotGlobal6), except the NAT64 well-known prefix whose
// embedded IPv4 address decides; these entries are the ones inside 2000::/3
// or those worth a more precise name.
var deniedV6 = []deniedRange{
	{netip.MustParsePrefix("::/128"), classUnspec6},
	{netip.MustParsePrefix("::1/128"), classLoopback6},
	{netip.MustParsePrefix("64:ff9b:1::/48"), classNAT64Local},
	{netip.MustParsePrefix("2001:db8::/32"), classDoc6},
	{netip.MustParsePrefix("3fff::/20"), classDoc6b},
	{netip.MustParsePrefix("2001:2::/48"), classBench6},
	{netip.MustParsePrefix("2001:10::/28"), classORCHID},
	{netip.MustParsePrefix("fc00::/7"), classULA},
	{netip.MustParsePrefix("fe80::/10"), classLinkLocal6},
	{netip.MustParsePrefix("fec0::/10"), classSiteLocal6},
	{netip.MustParsePrefix("ff00::/8"), classMulticast6},
}

// classify returns the class of a refused address, or nil for a public
// unicast address. a has no zone and is unmapped.
func classify(a netip.Addr) *addrClass {
	if a.Is4() {
		return classify4(a)
	}
	return classify6(a)
}

// classify6 classifies an IPv6 address (not IPv4-mapped).
func classify6(a netip.Addr) *addrClass {
	b := a.As16()
	hi := uint64(b[0])<<56 | uint64(b[1])<<48 | uint64(b[2])<<40 | uint64(b[3])<<32 |
		uint64(b[4])<<24 | uint64(b[5])<<16 | uint64(b[6])<<8 | uint64(b[7])
	for i := range denied6 {
		r := &denied6[i]
		if r.lo <= hi && hi <= r.hi && (!r.exact || r.p.Contains(a)) {
			return r.class
		}
	}
	if hi>>61 != 1 /* not 2000::/3 */ && !nat64.Contains(a) {
		return classNotGlobal6
	}
	return nil
}

// embeddedV4 returns the IPv4 addresses that an IPv6 address carries and that
// a translator or tunnel would deliver to: NAT64 (RFC 6052), 6to4 (RFC 3056),
// Teredo server and client (RFC 4380), IPv4-compatible (RFC 4291) and
// IPv4-translated (RFC 2765) forms. IPv4-mapped addresses were already
// unmapped by the caller.
func embeddedV4(a netip.Addr) (out [2]netip.Addr, n int) {
	if !a.Is6() {
		return out, 0
	}
	b := a.As16()
	switch {
	case nat64.Contains(a), compat4.Contains(a), siit.Contains(a):
		out[0] = netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})
		return out, 1
	case sixTo4.Contains(a):
		out[0] = netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]})
		return out, 1
	case teredo.Contains(a):
		out[0] = netip.AddrFrom4([4]byte{b[4], b[5], b[6], b[7]})                                 // server
		out[1] = netip.AddrFrom4([4]byte{b[12] ^ 0xff, b[13] ^ 0xff, b[14] ^ 0xff, b[15] ^ 0xff}) // client, obfuscated
		return out, 2
	}
	return out, 0
}

// admitted reports whether an allow_private prefix admits a, which belongs
// to class c. Prefixes written in IPv4-mapped form are unmapped first.
// Metadata endpoints are admitted only by a prefix naming the single address.
func admitted(a netip.Addr, c *addrClass, allow []netip.Prefix) bool {
	for _, p := range allow {
		if !p.IsValid() {
			continue
		}
		if pa := p.Addr(); pa.Is4In6() && p.Bits() >= 96 {
			p = netip.PrefixFrom(pa.Unmap(), p.Bits()-96)
		}
		if !p.Contains(a) {
			continue
		}
		if c.metadata && p.Bits() != a.BitLen() {
			continue
		}
		return true
	}
	return false
}

// CheckAddr returns nil when a may be dialed: a public unicast address, or
// an address that one of the allowPrivate prefixes admits. It refuses
// loopback, unspecified, RFC 1918 private, link-local, CGNAT (100.64.0.0/10),
// unique-local (fc00::/7), site-local, multicast, broadcast, documentation,
// benchmarking and reserved ranges, IPv6 outside 2000::/3, and the cloud
// metadata endpoints (169.254.169.254, fd00:ec2::254, 100.100.100.200,
// 168.63.129.16, …). IPv4-mapped addresses are unmapped before any check;
// for IPv6 forms that embed an IPv4 address a translator or tunnel would
// reach (NAT64 64:ff9b::/96, 6to4 2002::/16, Teredo 2001::/32,
// IPv4-compatible and IPv4-translated), the embedded address is checked too.
//
// A metadata endpoint is admitted only by a prefix that names exactly that
// address (/32 or /128): "allow_private: [169.254.0.0/16]" still refuses
// 169.254.169.254. An IPv6 zone is ignored. The zero Addr is refused.
//
// CheckAddr does not allocate when it returns nil. Errors are of type
// *capability.Error with reason NETWORK_PRIVATE_ADDRESS.
func CheckAddr(a netip.Addr, allowPrivate []netip.Prefix) error {
	if !a.IsValid() {
		return capability.Denied(capability.ReasonNetworkPrivateAddress, "invalid address", "invalid IP address")
	}
	a = a.WithZone("").Unmap()
	if c := classify(a); c != nil && !admitted(a, c, allowPrivate) {
		return addrDenied(a, a, c)
	}
	emb, n := embeddedV4(a)
	for i := range n {
		if c := classify(emb[i]); c != nil && !admitted(emb[i], c, allowPrivate) {
			return addrDenied(a, emb[i], c)
		}
	}
	return nil
}

func addrDenied(a, culprit netip.Addr, c *addrClass) error {
	detail := a.String() + " is " + c.name + " (" + c.rfc + ")"
	if culprit != a {
		detail = a.String() + " embeds " + culprit.String() + ", which is " + c.name + " (" + c.rfc + ")"
	}
	return capability.Denied(capability.ReasonNetworkPrivateAddress, a.String(), detail)
}

// v4Range is an inclusive range of IPv4 addresses as integers.
type v4Range struct {
	lo, hi uint32
	class  *addrClass
}

// denied4 is metadataAddrs (first, so they keep their class) followed by
// deniedV4, as integer ranges: classify4 is then a few compares per range.
var denied4 = func() []v4Range {
	var out []v4Range
	for _, list := range [][]deniedRange{metadataAddrs, deniedV4} {
		for _, r := range list {
			if !r.p.Addr().Is4() {
				continue
			}
			lo := v4int(r.p.Masked().Addr())
			out = append(out, v4Range{lo: lo, hi: lo | (1<<(32-r.p.Bits()) - 1), class: r.class})
		}
	}
	return out
}()

func v4int(a netip.Addr) uint32 {
	b := a.As4()
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

func classify4(a netip.Addr) *addrClass {
	v := v4int(a)
	for i := range denied4 {
		if r := &denied4[i]; r.lo <= v && v <= r.hi {
			return r.class
		}
	}
	return nil
}

// v6Range matches on the upper 64 bits; exact ranges (longer than /64) also
// need the full prefix check.
type v6Range struct {
	lo, hi uint64
	exact  bool
	p      netip.Prefix
	class  *addrClass
}

var denied6 = func() []v6Range {
	var out []v6Range
	for _, list := range [][]deniedRange{metadataAddrs, deniedV6} {
		for _, r := range list {
			if !r.p.Addr().Is6() {
				continue
			}
			m := r.p.Masked()
			b := m.Addr().As16()
			lo := uint64(0)
			for i := range 8 {
				lo = lo<<8 | uint64(b[i])
			}
			bits := min(m.Bits(), 64)
			hi := lo
			if bits < 64 {
				hi = lo | (1<<(64-bits) - 1)
			}
			out = append(out, v6Range{lo: lo, hi: hi, exact: m.Bits() > 64, p: m, class: r.class})
		}
	}
	return out
}()
