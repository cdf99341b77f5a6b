package manifest_test

import (
	"os"
	"testing"

	"github.com/norma-run/norma/manifest"
)

// TestFromCanonicalJSON: a manifest's canonical JSON decodes to the same
// digest as the parsed manifest; extra fields or trailing data are refused.
func TestFromCanonicalJSON(t *testing.T) {
	data, err := os.ReadFile("../examples/plugins/issue-helper/manifest.yaml")
	if err != nil {
		t.Fatal(err)
	}
	m, err := manifest.Parse("manifest.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	c, err := m.CanonicalJSON()
	if err != nil {
		t.Fatal(err)
	}
	got, err := manifest.FromCanonicalJSON(c)
	if err != nil {
		t.Fatal(err)
	}
	if got.Digest() != m.Digest() || got.ID != m.ID || len(got.Tools) != len(m.Tools) {
		t.Errorf("decoded %s %s, parsed %s %s", got.ID, got.Digest(), m.ID, m.Digest())
	}
	for name, bad := range map[string]string{
		"unknown field": `{"id":"x","bogus":1}`,
		"trailing data": string(c) + `{}`,
		"not JSON":      `id: x`,
	} {
		if _, err := manifest.FromCanonicalJSON([]byte(bad)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
