package tools_test

import (
	"os"
	"reflect"
	"testing"

	"github.com/norma-run/norma/manifest"
	"github.com/norma-run/norma/tools"
)

// TestBuiltinManifestPassesSchema is what lets tools.Manifest skip the
// schema step (manifest.ParseBuiltin): the embedded manifest passes the
// full manifest.Parse, schema included, and gives the same value.
func TestBuiltinManifestPassesSchema(t *testing.T) {
	data, err := os.ReadFile("manifest.yaml")
	if err != nil {
		t.Fatal(err)
	}
	full, err := manifest.Parse("tools/manifest.yaml", data)
	if err != nil {
		t.Fatalf("the built-in manifest fails manifest.Parse: %v", err)
	}
	got, err := tools.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, full) {
		t.Errorf("tools.Manifest() = %+v\nmanifest.Parse gives %+v", got, full)
	}
}
