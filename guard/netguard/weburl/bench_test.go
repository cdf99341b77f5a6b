package weburl

import "testing"

var benchURLs = []struct{ name, in string }{
	{"canonical", "https://api.example.invalid/repos/acme/issues/42/comments"},
	{"mixed-case-query", "HTTPS://API.Example.invalid./repos/acme/issues?state=open&per_page=100"},
	{"dot-segments-encoded", "https://api.example.invalid/repos/a/%2e%2e/acme/issues/%34%32"},
	{"idna", "https://bücher.example/katalog"},
	{"ipv4-hex", "http://0x7f.1:8080/health"},
}

func BenchmarkNormalize(b *testing.B) {
	for _, bb := range benchURLs {
		b.Run(bb.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Normalize(bb.in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkNormalizeOrigin(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := NormalizeOrigin("https://api.example.invalid"); err != nil {
			b.Fatal(err)
		}
	}
}
