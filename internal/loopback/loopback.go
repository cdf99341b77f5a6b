// Package loopback answers whether a Host header names a loopback host:
// the DNS-rebinding check of every loopback HTTP listener of norma serve
// (the hook daemon's, the team server's).
package loopback

import (
	"net"
	"net/netip"
	"strings"
)

// Host reports whether host (a Host header, with or without a
// port) names a loopback address. A port must be digits: "localhost:@"
// is userinfo to a URL parser, naming no host at all.
func Host(host string) bool {
	if h, port, err := net.SplitHostPort(host); err == nil {
		if port == "" || len(port) > 5 || strings.Trim(port, "0123456789") != "" {
			return false
		}
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.Unmap().IsLoopback()
}
