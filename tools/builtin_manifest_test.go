package tools_test

import (
	"encoding/json"
	"os"
	"reflect"
	"testing"

	"github.com/norma-run/norma/manifest"
	"github.com/norma-run/norma/tools"
)

// TestBuiltinManifestPassesSchema is what lets tools.Manifest decode the
// embedded manifest.json instead of parsing manifest.yaml: the YAML passes
// the full manifest.Parse, schema included, and gives the value the JSON
// decodes to. -update rewrites manifest.json.
func TestBuiltinManifestPassesSchema(t *testing.T) {
	data, err := os.ReadFile("manifest.yaml")
	if err != nil {
		t.Fatal(err)
	}
	full, err := manifest.Parse("tools/manifest.yaml", data)
	if err != nil {
		t.Fatalf("the built-in manifest fails manifest.Parse: %v", err)
	}
	if *update {
		b, err := json.MarshalIndent(full, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile("manifest.json", append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := tools.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, full) {
		t.Errorf("tools.Manifest() = %+v\nmanifest.Parse gives %+v", got, full)
	}
}
