package mcpadd

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// SourceFile is where the package records where it came from.
const SourceFile = "norma-source.json"

// Source is the pin of a built server: what was installed, at which
// version and digest, and from which command.
type Source struct {
	Kind    string `json:"kind"`
	Package string `json:"package"`
	Version string `json:"version"`
	// Integrity is npm's integrity (sha512-...) of the package, sha256 of a
	// python distribution's RECORD, or sha256 of a copied file.
	Integrity string   `json:"integrity"`
	Installer string   `json:"installer,omitempty"`
	Command   []string `json:"command"`
}

func writeSource(dir string, s Source) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, SourceFile), append(b, '\n'), 0o644)
}

// ReadSource reads the source pin of an installed package directory.
func ReadSource(dir string) (*Source, error) {
	b, err := os.ReadFile(filepath.Join(dir, SourceFile))
	if err != nil {
		return nil, err
	}
	var s Source
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", SourceFile, err)
	}
	return &s, nil
}
