package broker

import (
	"testing"

	"github.com/norma-run/norma/guard/netguard/weburl"
)

// FuzzIsAuthorityOf checks the property prepare's shortcut relies on: when
// isAuthorityOf(host, raw, scheme) holds for a URL that normalizes, the
// Host header host names the very origin raw normalizes to, so the check it
// skips (NormalizeOrigin of scheme://host against the URL's origin) would
// have passed.
func FuzzIsAuthorityOf(f *testing.F) {
	for _, s := range [][2]string{
		{"api.example.invalid:8443", "https://api.example.invalid:8443/x"},
		{"API.example.invalid", "https://API.example.invalid/a/../b"},
		{"api.example.invalid.", "https://api.example.invalid./"},
		{"0x7f.1:443", "https://0x7f.1:443/x"},
		{"[::1]:8443", "https://[::1]:8443/x"},
		{"xn--bcher-kva.example", "https://bücher.example/x"},
		{"a:443", "https://a:443//evil.example/x"},
		{"a", "https://a%2eb/x"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, host, raw string) {
		u, err := weburl.Normalize(raw)
		if err != nil || !isAuthorityOf(host, raw, u.Scheme) {
			return
		}
		h, err := weburl.NormalizeOrigin(u.Scheme + "://" + host)
		if err != nil || h != u.Origin {
			t.Fatalf("isAuthorityOf(%q, %q): Host normalizes to %q, %v; the URL's origin is %q", host, raw, h, err, u.Origin)
		}
	})
}
