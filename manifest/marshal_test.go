package manifest

import (
	"path/filepath"
	"testing"
)

// TestManifestMarshalRoundTrip: Marshal gives YAML that Parse reads back
// to the same manifest, digest for digest.
func TestManifestMarshalRoundTrip(t *testing.T) {
	files, _ := filepath.Glob("../examples/plugins/*/manifest.yaml")
	if len(files) == 0 {
		t.Fatal("no example manifests")
	}
	for _, f := range files {
		m, err := ParseFile(f)
		if err != nil {
			t.Fatal(err)
		}
		b, err := m.Marshal()
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		back, err := Parse("marshaled.yaml", b)
		if err != nil {
			t.Fatalf("%s: Marshal output does not parse: %v\n%s", f, err, b)
		}
		if back.Digest() != m.Digest() {
			t.Errorf("%s: digest %s after a round trip, want %s\n%s", f, back.Digest(), m.Digest(), b)
		}
	}
}
