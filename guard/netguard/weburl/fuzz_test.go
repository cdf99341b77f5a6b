package weburl

import (
	"net/netip"
	"net/url"
	"strings"
	"testing"

	"github.com/norma-run/norma/capability"
)

// addFixtureSeeds adds every input of the testdata tables as a seed; the
// comment lines in those files say what each group exercises.
func addFixtureSeeds(f *testing.F) {
	for _, name := range []string{"origins.txt", "urls.txt"} {
		for _, fx := range readFixtures(f, name) {
			f.Add(fx.in)
		}
	}
}

func FuzzNormalize(f *testing.F) {
	addFixtureSeeds(f)
	// Encoded dot segments mixed with encoded slashes.
	f.Add("https://a.example/%2e%2e%2f%2e%2e/x/%2E/..")
	// A host that only IDNA mapping turns into an IPv4 address.
	f.Add("http://０ｘ７ｆ．１/")
	// Teredo-looking IPv6 literal with a port and query.
	f.Add("http://[2001:0:808:808::f7f7:f7f7]:81/?q=%41")
	f.Fuzz(func(t *testing.T, s string) {
		u, err := Normalize(s)
		if err != nil {
			if r := capability.ReasonOf(err); r != capability.ReasonNetworkInvalidURL {
				t.Fatalf("Normalize(%q) error reason %q, want %s", s, r, capability.ReasonNetworkInvalidURL)
			}
			return
		}
		checkURLInvariants(t, s, u)
	})
}

func checkURLInvariants(t *testing.T, in string, u URL) {
	t.Helper()
	again, err := Normalize(u.String())
	if err != nil || again != u {
		t.Fatalf("not idempotent: Normalize(%q) = %+v; Normalize(%q) = %+v, %v", in, u, u.String(), again, err)
	}
	if u.Port == 0 || (u.Scheme != "http" && u.Scheme != "https") {
		t.Fatalf("Normalize(%q): bad scheme/port %+v", in, u)
	}
	if u.Origin != u.Scheme+"://"+u.HostPort() {
		t.Fatalf("Normalize(%q): Origin %q is not scheme://host:port", in, u.Origin)
	}
	if !strings.HasPrefix(u.Path, "/") {
		t.Fatalf("Normalize(%q): Path %q does not start at the root", in, u.Path)
	}
	for _, seg := range strings.Split(u.Path[1:], "/") {
		if seg == "." || seg == ".." {
			t.Fatalf("Normalize(%q): Path %q keeps a dot segment", in, u.Path)
		}
		if d, err := url.PathUnescape(seg); err != nil || d == "." || d == ".." {
			t.Fatalf("Normalize(%q): segment %q decodes to a dot segment (%v)", in, seg, err)
		}
	}
	if strings.Contains(u.Path, "%2f") || strings.Contains(u.Path, "%2e") || strings.Contains(u.Path, "%2E") {
		t.Fatalf("Normalize(%q): Path %q is not canonically escaped", in, u.Path)
	}
	// Differential: net/url agrees on host, port and escaped path, which
	// is also what the Transport puts on the wire.
	std, err := url.Parse(u.String())
	if err != nil {
		t.Fatalf("net/url cannot parse %q: %v", u.String(), err)
	}
	if std.Hostname() != u.Host || std.Port() == "" || std.EscapedPath() != u.Path || std.User != nil {
		t.Fatalf("net/url disagrees on %q: host %q port %q path %q", u.String(), std.Hostname(), std.Port(), std.EscapedPath())
	}
	if a, err := netip.ParseAddr(u.Host); err == nil && a.Zone() != "" {
		t.Fatalf("Normalize(%q): zone survived in %q", in, u.Host)
	}
}

func FuzzNormalizeOrigin(f *testing.F) {
	addFixtureSeeds(f)
	// Label with reserved hyphens that is not punycode.
	f.Add("https://ab--cd.example")
	// Upper-case punycode.
	f.Add("https://XN--BCHER-KVA.example")
	f.Fuzz(func(t *testing.T, s string) {
		// Differential: the ASCII fast path agrees with the IDNA profile.
		if fast, ok := asciiFast(s); ok {
			slow, err := hostProfile.ToASCII(s)
			if err != nil || slow != fast {
				t.Fatalf("asciiFast(%q) = %q but IDNA says %q, %v", s, fast, slow, err)
			}
		}
		o, err := NormalizeOrigin(s)
		if err != nil {
			if r := capability.ReasonOf(err); r != capability.ReasonNetworkInvalidURL {
				t.Fatalf("NormalizeOrigin(%q) error reason %q", s, r)
			}
			return
		}
		if again, err := NormalizeOrigin(o); err != nil || again != o {
			t.Fatalf("not idempotent: NormalizeOrigin(%q) = %q; again %q, %v", s, o, again, err)
		}
		std, err := url.Parse(o)
		if err != nil || std.Port() == "" || std.Path != "" || std.User != nil {
			t.Fatalf("NormalizeOrigin(%q) = %q: not scheme://host:port (%v)", s, o, err)
		}
		u, err := Normalize(s)
		if err != nil || u.Origin != o {
			t.Fatalf("Normalize(%q) = %+v, %v, disagrees with origin %q", s, u, err, o)
		}
	})
}
