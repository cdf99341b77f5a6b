package netguard

import (
	"net/netip"
	"testing"
)

func BenchmarkCheckAddr(b *testing.B) {
	allow := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd00::/8")}
	for _, bb := range []struct{ name, addr string }{
		{"public-v4", "93.184.216.34"},
		{"public-v6", "2606:4700::1111"},
		{"mapped-public", "::ffff:93.184.216.34"},
		{"teredo-public", "2001:0:808:808::f7f7:f7f7"},
		{"private-admitted", "10.1.2.3"},
	} {
		a := netip.MustParseAddr(bb.addr)
		b.Run(bb.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := CheckAddr(a, allow); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	a := netip.MustParseAddr("169.254.169.254")
	b.Run("denied-metadata", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := CheckAddr(a, allow); err == nil {
				b.Fatal("allowed")
			}
		}
	})
}
