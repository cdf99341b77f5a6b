package builtin_test

import (
	"bytes"
	"os"
	"reflect"
	"testing"

	"github.com/norma-run/norma/manifest"
	"github.com/norma-run/norma/tool/builtin"
)

// TestBuiltinManifestPassesSchema is what lets builtin.Manifest decode the
// embedded manifest.json instead of parsing manifest.yaml: the YAML passes
// the full manifest.Parse, schema included, manifest.json is the canonical
// JSON of that value, and it decodes to the same value and digest. -update rewrites manifest.json.
func TestBuiltinManifestPassesSchema(t *testing.T) {
	data, err := os.ReadFile("manifest.yaml")
	if err != nil {
		t.Fatal(err)
	}
	full, err := manifest.Parse("tools/manifest.yaml", data)
	if err != nil {
		t.Fatalf("the built-in manifest fails manifest.Parse: %v", err)
	}
	canonical, err := full.CanonicalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile("manifest.json", canonical, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if embedded, err := os.ReadFile("manifest.json"); err != nil || !bytes.Equal(embedded, canonical) {
		t.Fatalf("manifest.json is not the canonical JSON of manifest.yaml (%v): go test ./tools -run TestBuiltinManifestPassesSchema -update", err)
	}
	got, err := builtin.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	if got.Digest() != full.Digest() || !reflect.DeepEqual(got, full) {
		t.Errorf("builtin.Manifest() = %+v\nmanifest.Parse gives %+v", got, full)
	}
}
