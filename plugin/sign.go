package plugin

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/manifest"
)

// SignOptions configures [Sign].
type SignOptions struct {
	// Now returns the signing time (default time.Now).
	Now func() time.Time
	// CoSigners also sign the statement. A publisher rotating keys signs
	// with the new key and co-signs with the old one.
	CoSigners []ed25519.PrivateKey
	Limits    *Limits
	Progress  Progress
}

// Sign hashes the package in dir, builds its [Statement] (plugin id,
// version, manifest digest, Merkle root, key, time, files), signs it with key
// (and every co-signer) and writes dir/package.sig atomically. It refuses a
// package whose manifest does not validate or whose entrypoint is not one of
// its files.
func Sign(ctx context.Context, dir string, key ed25519.PrivateKey, opts *SignOptions) (*Statement, error) {
	if opts == nil {
		opts = &SignOptions{}
	}
	if len(key) != ed25519.PrivateKeySize {
		return nil, newErr(capability.ReasonPluginKeyInvalid, "sign", "", "not an ed25519 private key", nil)
	}
	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}
	tree, err := HashDir(ctx, dir, &HashOptions{Limits: opts.Limits, Progress: opts.Progress})
	if err != nil {
		return nil, err
	}
	m, err := readManifest(dir, tree)
	if err != nil {
		return nil, err
	}
	if err := checkEntrypoint(m, tree); err != nil {
		return nil, err
	}
	pub := key.Public().(ed25519.PublicKey)
	st := &Statement{
		Type:           StatementType,
		ID:             m.ID,
		Version:        m.Version,
		ManifestDigest: m.Digest(),
		MerkleRoot:     tree.Root(),
		Key:            KeyRef{ID: KeyID(pub), PublicKey: pub},
		SignedAt:       now().UTC().Truncate(time.Second),
		Files:          tree.Files,
	}
	payload, err := json.Marshal(st)
	if err != nil {
		return nil, err
	}
	env := Envelope{PayloadType: PayloadType, Payload: payload}
	pae := PAE(PayloadType, payload)
	for _, k := range append([]ed25519.PrivateKey{key}, opts.CoSigners...) {
		if len(k) != ed25519.PrivateKeySize {
			return nil, newErr(capability.ReasonPluginKeyInvalid, "sign", "", "co-signer is not an ed25519 private key", nil)
		}
		env.Signatures = append(env.Signatures, Signature{KeyID: KeyID(k.Public().(ed25519.PublicKey)), Sig: ed25519.Sign(k, pae)})
	}
	data, err := json.MarshalIndent(env, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := writeAtomic(filepath.Join(dir, SignatureName), append(data, '\n'), 0o644); err != nil {
		return nil, err
	}
	return st, nil
}

// readManifest reads and parses manifest.yaml of the package in dir, whose
// tree is known.
func readManifest(dir string, tree *Tree) (*manifest.Manifest, error) {
	if _, ok := tree.Lookup(ManifestName); !ok {
		return nil, newErr(capability.ReasonPluginManifestMissing, "manifest", ManifestName, "no manifest.yaml at the package root", nil)
	}
	data, err := readPackageFile(dir, ManifestName, 1<<20)
	if err != nil {
		return nil, err
	}
	return parseManifest(data)
}

// checkEntrypoint refuses a manifest whose entrypoint is not an executable
// file of the package.
func checkEntrypoint(m *manifest.Manifest, tree *Tree) error {
	f, ok := tree.Lookup(m.Entrypoint)
	if !ok {
		return newErr(capability.ReasonPluginManifestInvalid, "manifest", ManifestName, fmt.Sprintf("entrypoint %s is not a file of the package", m.Entrypoint), nil)
	}
	if f.Mode != ModeExec {
		return newErr(capability.ReasonPluginManifestInvalid, "manifest", ManifestName, fmt.Sprintf("entrypoint %s is not executable (mode %#o)", m.Entrypoint, f.Mode), nil)
	}
	return nil
}

// readPackageFile reads a regular file of the package (no links) up to max bytes.
func readPackageFile(dir, name string, max int64) ([]byte, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, newErr(capability.ReasonPluginState, "read", dir, "cannot open package directory", err)
	}
	defer root.Close()
	f, _, err := openRegular(root, "read", name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, newErr(capability.ReasonPluginState, "read", name, "", err)
	}
	if int64(len(data)) > max {
		return nil, newErr(capability.ReasonPluginArchiveLimit, "read", name, fmt.Sprintf("larger than %d bytes", max), nil)
	}
	return data, nil
}
