// Package loopback answers whether a Host header names a loopback host:
// the DNS-rebinding check of every loopback HTTP listener of norma serve
// (the hook daemon's, the team server's).
package loopback

import (
	"net/netip"
	"strconv"
	"strings"
)

// Host reports whether host (a Host header, with or without a port) is
// well formed and names a loopback host: "localhost" in any ASCII case,
// an IPv4 address of 127.0.0.0/8, or an IPv6 loopback address in brackets
// ("[::1]", "[::ffff:127.0.0.1]"), optionally followed by ":PORT" where
// PORT is 1 to 5 digits no more than 65535. Anything else is false, among
// it a bracket out of place ("localhost]", "[::1", "[::1]x"), IPv6
// without brackets, a zone, a trailing dot ("localhost."), an empty port
// and userinfo ("localhost:@").
func Host(host string) bool {
	if rest, ok := strings.CutPrefix(host, "["); ok {
		addr, rest, ok := strings.Cut(rest, "]")
		if !ok || !optionalPort(rest) {
			return false
		}
		a, err := netip.ParseAddr(addr)
		return err == nil && a.Is6() && a.Zone() == "" && a.Unmap().IsLoopback()
	}
	name := host
	if i := strings.LastIndexByte(host, ':'); i >= 0 {
		if !optionalPort(host[i:]) {
			return false
		}
		name = host[:i]
	}
	if isLocalhost(name) {
		return true
	}
	a, err := netip.ParseAddr(name)
	return err == nil && a.Is4() && a.IsLoopback()
}

// optionalPort reports whether s is empty or ":PORT" (see Host).
func optionalPort(s string) bool {
	if s == "" {
		return true
	}
	p, ok := strings.CutPrefix(s, ":")
	if !ok || p == "" || len(p) > 5 || strings.Trim(p, "0123456789") != "" {
		return false
	}
	n, err := strconv.Atoi(p)
	return err == nil && n <= 65535
}

// isLocalhost reports whether s is "localhost" in ASCII case only: no
// Unicode folding ("localhoſt" is not it), as a browser sends it.
func isLocalhost(s string) bool {
	const want = "localhost"
	if len(s) != len(want) {
		return false
	}
	for i := range len(s) {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != want[i] {
			return false
		}
	}
	return true
}
