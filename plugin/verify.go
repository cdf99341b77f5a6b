package plugin

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/manifest"
)

// VerifyOptions configures [Verify]. Exactly one of PublicKey and Trust
// must be set: with neither, Verify refuses (fail closed).
type VerifyOptions struct {
	// PublicKey, when set, is the only key whose signature is accepted; the
	// trust store is not consulted (`norma plugin verify --pubkey`).
	PublicKey ed25519.PublicKey
	// Trust decides which keys may sign which plugin ids, and which key a
	// plugin is pinned to.
	Trust *TrustStore
	// Tree, when set, is the already hashed tree of dir (from [Stage]),
	// which must be a private copy; otherwise dir is hashed.
	Tree     *Tree
	Limits   *Limits
	Progress Progress
}

// Verified is the outcome of a successful [Verify].
type Verified struct {
	Statement *Statement
	Manifest  *manifest.Manifest
	Tree      *Tree
	// Signer is the key id that made the statement; Publisher its name in
	// the trust store ("" with --pubkey or a rotated key).
	Signer    string
	Publisher string
	// CoSigners are the other key ids whose signatures verified.
	CoSigners []string
	// Rotated is set when the plugin was pinned to another key that
	// co-signed this statement; installing records the new pin.
	Rotated bool
}

// Verify checks that the package in dir is exactly what a trusted key
// signed: the envelope parses, a signature by an acceptable key verifies,
// the statement is consistent, manifest.yaml has the signed id, version and
// digest, and every file name, mode and byte, and the file set, match the
// statement (so the Merkle root matches). Cheap checks run first; the files
// are hashed last. Every refusal is a *capability.Error with its own code.
func Verify(ctx context.Context, dir string, opts *VerifyOptions) (*Verified, error) {
	if opts == nil || (opts.PublicKey == nil && opts.Trust == nil) {
		return nil, newErr(capability.ReasonPluginKeyUntrusted, "verify", dir, "no public key and no trust store: nothing to verify against", nil)
	}
	data, err := readPackageFile(dir, SignatureName, maxEnvelopeSize)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || isNotExist(err) {
			return nil, newErr(capability.ReasonPluginUnsigned, "verify", dir, "no package.sig: the package is not signed", nil)
		}
		return nil, err
	}
	env, err := ParseEnvelope(data)
	if err != nil {
		return nil, err
	}
	st, v, err := checkSignatures(env, opts)
	if err != nil {
		return nil, err
	}
	v.Statement = st

	tree := opts.Tree
	if tree == nil {
		if tree, err = HashDir(ctx, dir, &HashOptions{Limits: opts.Limits, Progress: opts.Progress}); err != nil {
			return nil, err
		}
	}
	v.Tree = tree
	// The manifest is checked before the file set so that a swapped
	// manifest is reported as what it is.
	if _, ok := tree.Lookup(ManifestName); !ok {
		return nil, newErr(capability.ReasonPluginManifestMissing, "verify", ManifestName, "no manifest.yaml at the package root", nil)
	}
	m, err := readManifest(dir, tree)
	if err != nil {
		return nil, err
	}
	if m.ID != st.ID || m.Version != st.Version {
		return nil, newErr(capability.ReasonPluginManifestMismatch, "verify", ManifestName,
			fmt.Sprintf("manifest declares %s@%s but the signed statement is for %s@%s", m.ID, m.Version, st.ID, st.Version), nil)
	}
	if m.Digest() != st.ManifestDigest {
		return nil, newErr(capability.ReasonPluginManifestMismatch, "verify", ManifestName,
			fmt.Sprintf("manifest differs from the signed manifest (digest %s, signed %s)", m.Digest(), st.ManifestDigest), nil)
	}
	v.Manifest = m
	if err := compareFiles(st.Files, tree.Files); err != nil {
		return nil, err
	}
	if got := tree.Root(); got != st.MerkleRoot {
		return nil, newErr(capability.ReasonPluginMerkleMismatch, "verify", dir, fmt.Sprintf("Merkle root %s, signed %s", got, st.MerkleRoot), nil)
	}
	return v, nil
}

func isNotExist(err error) bool {
	var pe *fs.PathError
	return errors.As(err, &pe) && errors.Is(pe.Err, fs.ErrNotExist)
}

// checkSignatures verifies the envelope's signatures and decides trust. The
// payload is not trusted (beyond reading the key it names) until a
// signature verifies.
func checkSignatures(env *Envelope, opts *VerifyOptions) (*Statement, *Verified, error) {
	var claimed struct {
		ID  string `json:"id"`
		Key KeyRef `json:"key"`
	}
	_ = json.Unmarshal(env.Payload, &claimed) // errors surface below

	known := map[string]ed25519.PublicKey{}
	var trusted map[string]TrustedKey
	var pin *PluginTrust
	if opts.PublicKey != nil {
		known[KeyID(opts.PublicKey)] = opts.PublicKey
	} else {
		keys, err := opts.Trust.Keys()
		if err != nil {
			return nil, nil, err
		}
		trusted = map[string]TrustedKey{}
		for _, k := range keys {
			trusted[k.ID] = k
			known[k.ID] = k.PublicKey
		}
		if claimed.ID != "" {
			p, ok, err := opts.Trust.Plugin(claimed.ID)
			if err != nil {
				return nil, nil, err
			}
			if ok {
				pin = p
				if _, dup := known[p.Pinned.ID]; !dup && KeyID(p.Pinned.PublicKey) == p.Pinned.ID {
					known[p.Pinned.ID] = p.Pinned.PublicKey
				}
			}
		}
		// The statement's own key may be a new, rotated key; it counts
		// only together with a co-signature by a trusted or pinned key.
		if k := claimed.Key; len(k.PublicKey) == ed25519.PublicKeySize && KeyID(k.PublicKey) == k.ID {
			if _, dup := known[k.ID]; !dup {
				known[k.ID] = k.PublicKey
			}
		}
	}

	pae := PAE(env.PayloadType, env.Payload)
	valid := map[string]bool{}
	var failed []string
	for _, s := range env.Signatures {
		pub, ok := known[s.KeyID]
		if !ok {
			continue
		}
		if ed25519.Verify(pub, pae, s.Sig) {
			valid[s.KeyID] = true
		} else {
			failed = append(failed, s.KeyID)
		}
	}
	if len(valid) == 0 {
		if len(failed) > 0 {
			return nil, nil, newErr(capability.ReasonPluginSignatureInvalid, "verify", SignatureName,
				fmt.Sprintf("signature by %s does not verify over the statement: the statement or the signature was altered", strings.Join(failed, ", ")), nil)
		}
		ids := make([]string, 0, len(env.Signatures))
		for _, s := range env.Signatures {
			ids = append(ids, s.KeyID)
		}
		msg := "signed by " + strings.Join(ids, ", ") + ", which is not in the trust store"
		if opts.PublicKey != nil {
			msg = "not signed by the given key " + KeyID(opts.PublicKey) + " (signed by " + strings.Join(ids, ", ") + ")"
		}
		return nil, nil, newErr(capability.ReasonPluginKeyUntrusted, "verify", SignatureName, msg, nil)
	}
	st, err := parseStatement(env.Payload)
	if err != nil {
		return nil, nil, err
	}
	if st.ID != claimed.ID || st.Key.ID != claimed.Key.ID {
		return nil, nil, newErr(capability.ReasonPluginStatementInvalid, "verify", SignatureName, "statement decodes ambiguously", nil)
	}
	v := &Verified{Signer: st.Key.ID}
	for id := range valid {
		if id != st.Key.ID {
			v.CoSigners = append(v.CoSigners, id)
		}
	}
	if opts.PublicKey != nil {
		want := KeyID(opts.PublicKey)
		if !valid[want] {
			return nil, nil, newErr(capability.ReasonPluginKeyUntrusted, "verify", SignatureName, "not signed by the given key "+want, nil)
		}
		return st, v, nil
	}
	if !valid[st.Key.ID] {
		return nil, nil, newErr(capability.ReasonPluginSignatureInvalid, "verify", SignatureName,
			fmt.Sprintf("the statement names key %s, which did not sign it", st.Key.ID), nil)
	}
	if pin != nil {
		switch {
		case pin.Pinned.ID == st.Key.ID:
		case valid[pin.Pinned.ID]:
			v.Rotated = true
		default:
			return nil, nil, newErr(capability.ReasonPluginKeyRotation, "verify", st.ID,
				fmt.Sprintf("signed by %s, but %s is pinned to key %s; a new key is accepted only when the statement is co-signed by %s", st.Key.ID, st.ID, pin.Pinned.ID, pin.Pinned.ID), nil)
		}
		if k, ok := trusted[st.Key.ID]; ok {
			v.Publisher = k.Publisher
		} else if k, ok := trusted[pin.Pinned.ID]; ok {
			v.Publisher = k.Publisher
		}
		return st, v, nil
	}
	if k, ok := trusted[st.Key.ID]; ok {
		if !k.Allows(st.ID) {
			return nil, nil, newErr(capability.ReasonPluginKeyScope, "verify", st.ID,
				fmt.Sprintf("key %s (%s) is trusted only for %s", k.ID, k.Publisher, strings.Join(k.Prefixes, ", ")), nil)
		}
		v.Publisher = k.Publisher
		return st, v, nil
	}
	// A new key vouched for by a co-signature of a key trusted for this id.
	for id := range valid {
		if k, ok := trusted[id]; ok && k.Allows(st.ID) {
			v.Publisher = k.Publisher
			v.Rotated = true
			return st, v, nil
		}
	}
	return nil, nil, newErr(capability.ReasonPluginKeyUntrusted, "verify", st.ID,
		fmt.Sprintf("signed by %s, which is not in the trust store (add it with `norma plugin trust add KEYFILE --publisher NAME --prefix %s`)", st.Key.ID, st.ID), nil)
}

// compareFiles reports the first class of difference between the signed
// files and the files present, naming up to five paths.
func compareFiles(signed, got []File) error {
	var modified, mode, missing, unexpected []string
	i, j := 0, 0
	for i < len(signed) || j < len(got) {
		switch {
		case j == len(got) || (i < len(signed) && signed[i].Path < got[j].Path):
			missing = append(missing, signed[i].Path)
			i++
		case i == len(signed) || got[j].Path < signed[i].Path:
			unexpected = append(unexpected, got[j].Path)
			j++
		default:
			s, g := signed[i], got[j]
			if s.SHA256 != g.SHA256 || s.Size != g.Size {
				modified = append(modified, s.Path)
			} else if s.Mode != g.Mode {
				mode = append(mode, fmt.Sprintf("%s (%#o, signed %#o)", s.Path, g.Mode, s.Mode))
			}
			i++
			j++
		}
	}
	list := func(ps []string) string {
		if len(ps) > 5 {
			return strings.Join(ps[:5], ", ") + fmt.Sprintf(" and %d more", len(ps)-5)
		}
		return strings.Join(ps, ", ")
	}
	switch {
	case len(modified) > 0:
		return newErr(capability.ReasonPluginFileModified, "verify", modified[0], "content differs from the signed statement: "+list(modified), nil)
	case len(mode) > 0:
		return newErr(capability.ReasonPluginFileMode, "verify", "", "file mode differs from the signed statement: "+list(mode), nil)
	case len(missing) == 1 && len(unexpected) == 1 && sameContent(signed, missing[0], got, unexpected[0]):
		return newErr(capability.ReasonPluginFileRenamed, "verify", unexpected[0], "signed file "+missing[0]+" was renamed to "+unexpected[0], nil)
	case len(unexpected) > 0:
		return newErr(capability.ReasonPluginFileUnexpected, "verify", unexpected[0], "files not in the signed statement: "+list(unexpected), nil)
	case len(missing) > 0:
		return newErr(capability.ReasonPluginFileMissing, "verify", missing[0], "signed files missing: "+list(missing), nil)
	}
	return nil
}

func sameContent(a []File, pa string, b []File, pb string) bool {
	fa, _ := (&Tree{Files: a}).Lookup(pa)
	fb, _ := (&Tree{Files: b}).Lookup(pb)
	return fa.SHA256 == fb.SHA256
}
