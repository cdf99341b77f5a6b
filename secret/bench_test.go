package secret

import (
	"io"
	"strings"
	"testing"
)

// BenchmarkRedact measures the redactor on a 4 KiB tool result with and
// without a secret in it.
func BenchmarkRedact(b *testing.B) {
	r, _ := newTestRedactor(b)
	clean := strings.Repeat("lorem ipsum dolor sit amet ", 150)
	for _, bc := range []struct{ name, in string }{
		{"clean", clean},
		{"one secret", clean[:2000] + canary + clean[2000:]},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(bc.in)))
			for b.Loop() {
				r.Redact(bc.in)
			}
		})
	}
	b.Run("mask reader 1MiB", func(b *testing.B) {
		in := strings.Repeat(clean, 256)
		b.ReportAllocs()
		b.SetBytes(int64(len(in)))
		buf := make([]byte, 32<<10)
		for b.Loop() {
			io.CopyBuffer(io.Discard, r.MaskReader(strings.NewReader(in)), buf)
		}
	})
}
