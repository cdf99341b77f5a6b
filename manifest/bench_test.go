package manifest

import (
	"os"
	"testing"
)

// BenchmarkParseValidateDigest: the example manifest from bytes to digest.
func BenchmarkParseValidateDigest(b *testing.B) {
	data, err := os.ReadFile("testdata/manifests/valid/issue-helper.yaml")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		m, err := Parse("issue-helper.yaml", data)
		if err != nil {
			b.Fatal(err)
		}
		_ = m.Digest()
	}
}
