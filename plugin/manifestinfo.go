package plugin

import (
	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/manifest"
)

// parseManifest parses and validates manifest.yaml bytes with package
// manifest; errors are *capability.Error with code
// PLUGIN_MANIFEST_INVALID whose cause is the manifest package's positioned
// problems.
func parseManifest(data []byte) (*manifest.Manifest, error) {
	m, err := manifest.Parse(ManifestName, data)
	if err != nil {
		return nil, newErr(capability.ReasonPluginManifestInvalid, "manifest", ManifestName, "", err)
	}
	return m, nil
}
