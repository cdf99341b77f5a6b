package loopback

import (
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"testing"
)

// FuzzHost checks the Host check against a second reading of the
// header, net/url's: whatever Host accepts, url.Parse reads as an
// authority and nothing else (no user info, no path), whose host is
// localhost or a loopback address (never a name that merely contains
// one) and whose port, if any, is a port number.
func FuzzHost(f *testing.F) {
	for _, seed := range []string{
		"127.0.0.1:8787",          // the usual
		"localhost:8787",          // by name
		"[::1]:8787",              // IPv6 loopback
		"127.9.9.9",               // all of 127/8, no port
		"[::ffff:127.0.0.1]:1",    // mapped IPv4 loopback
		"attacker.example:8787",   // a rebinding page's own name
		"127.0.0.1.nip.io:8787",   // a name that resolves to loopback
		"localhost.attacker.test", // a name that starts like it
		"0.0.0.0:8787",            // unspecified
		"[fe80::1%lo]:80",         // a zone
		"",                        // none
	} {
		f.Add(seed)
	}
	for _, tt := range hostTests {
		f.Add(tt.host)
	}
	f.Fuzz(func(t *testing.T, host string) {
		if !Host(host) {
			return
		}
		u, err := url.Parse("http://" + host + "/")
		if err != nil {
			t.Fatalf("Host(%q) = true, but it is no URL's host: %v", host, err)
		}
		if u.Host != host || u.User != nil || u.Path != "/" || u.RawQuery != "" || u.Fragment != "" {
			t.Fatalf("Host(%q) = true, but the URL reads it as host %q, user %v, path %q", host, u.Host, u.User, u.Path)
		}
		if p := u.Port(); p != "" {
			if n, err := strconv.Atoi(p); err != nil || n < 0 || n > 65535 {
				t.Fatalf("Host(%q) = true, but its port is %q", host, p)
			}
		}
		h := u.Hostname()
		if strings.ToLower(h) == "localhost" {
			return
		}
		if a, err := netip.ParseAddr(h); err != nil || !a.Unmap().IsLoopback() || a.Zone() != "" {
			t.Fatalf("Host(%q) = true, but the URL's host is %q", host, h)
		}
	})
}
