package plugin

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/norma-run/norma/capability"
)

// PayloadType is the DSSE payload type of a package statement.
const PayloadType = "application/vnd.norma.plugin-statement.v1+json"

// StatementType is the _type of a package statement.
const StatementType = "https://norma.run/plugin-statement/v1"

// maxEnvelopeSize bounds package.sig (a statement lists every file; 20,000
// files take about 3 MiB).
const maxEnvelopeSize = 64 << 20

// Envelope is a DSSE-style signature envelope (package.sig). Each signature
// is an ed25519 signature over PAE(PayloadType, Payload); see [PAE].
type Envelope struct {
	PayloadType string      `json:"payloadType"`
	Payload     []byte      `json:"payload"`
	Signatures  []Signature `json:"signatures"`
}

// Signature is one signature of an [Envelope].
type Signature struct {
	KeyID string `json:"keyid"`
	Sig   []byte `json:"sig"`
}

// PAE is the DSSE v1 pre-authentication encoding:
// "DSSEv1" SP len(type) SP type SP len(body) SP body.
func PAE(payloadType string, body []byte) []byte {
	var b bytes.Buffer
	b.Grow(len(body) + len(payloadType) + 32)
	b.WriteString("DSSEv1 ")
	b.WriteString(strconv.Itoa(len(payloadType)))
	b.WriteByte(' ')
	b.WriteString(payloadType)
	b.WriteByte(' ')
	b.WriteString(strconv.Itoa(len(body)))
	b.WriteByte(' ')
	b.Write(body)
	return b.Bytes()
}

// KeyRef names the key that made a statement.
type KeyRef struct {
	ID        string            `json:"id"`
	PublicKey ed25519.PublicKey `json:"publicKey"`
}

// Statement is what a publisher signs: exactly which bytes make up which
// plugin version. Files lists every leaf so a refusal can name the file that
// differs; MerkleRoot over Files is the binding value.
type Statement struct {
	Type           string    `json:"_type"`
	ID             string    `json:"id"`
	Version        string    `json:"version"`
	ManifestDigest string    `json:"manifestDigest"`
	MerkleRoot     Digest    `json:"merkleRoot"`
	Key            KeyRef    `json:"key"`
	SignedAt       time.Time `json:"signedAt"`
	Files          []File    `json:"files"`
}

// ParseEnvelope decodes package.sig strictly (no unknown fields, one JSON
// value, at least one signature). Errors are *capability.Error with code
// PLUGIN_ENVELOPE_INVALID.
func ParseEnvelope(data []byte) (*Envelope, error) {
	var env Envelope
	if err := decodeStrict(data, &env); err != nil {
		return nil, newErr(capability.ReasonPluginEnvelopeInvalid, "verify", SignatureName, "malformed envelope", err)
	}
	switch {
	case env.PayloadType != PayloadType:
		return nil, newErr(capability.ReasonPluginEnvelopeInvalid, "verify", SignatureName, fmt.Sprintf("payload type %q, want %q", env.PayloadType, PayloadType), nil)
	case len(env.Signatures) == 0:
		return nil, newErr(capability.ReasonPluginEnvelopeInvalid, "verify", SignatureName, "no signatures", nil)
	case len(env.Signatures) > 8:
		return nil, newErr(capability.ReasonPluginEnvelopeInvalid, "verify", SignatureName, "more than 8 signatures", nil)
	}
	for _, s := range env.Signatures {
		if len(s.Sig) != ed25519.SignatureSize || s.KeyID == "" {
			return nil, newErr(capability.ReasonPluginEnvelopeInvalid, "verify", SignatureName, "malformed signature entry", nil)
		}
	}
	return &env, nil
}

func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("trailing data after JSON value")
	}
	return nil
}

// parseStatement decodes and checks a statement for internal consistency:
// type, id, version, digests, key id, sorted unique valid file leaves whose
// Merkle root is MerkleRoot, and a manifest leaf.
func parseStatement(payload []byte) (*Statement, error) {
	bad := func(msg string, err error) error {
		return newErr(capability.ReasonPluginStatementInvalid, "verify", SignatureName, msg, err)
	}
	var st Statement
	if err := decodeStrict(payload, &st); err != nil {
		return nil, bad("malformed statement", err)
	}
	if st.Type != StatementType {
		return nil, bad(fmt.Sprintf("statement type %q, want %q", st.Type, StatementType), nil)
	}
	if !idPattern().MatchString(st.ID) {
		return nil, bad("malformed plugin id "+strconv.Quote(st.ID), nil)
	}
	if _, err := parseVersion(st.Version); err != nil {
		return nil, bad("", err)
	}
	if _, err := ParseDigest(st.ManifestDigest); err != nil {
		return nil, bad("", err)
	}
	if len(st.Key.PublicKey) != ed25519.PublicKeySize || KeyID(st.Key.PublicKey) != st.Key.ID {
		return nil, bad("key id does not match the public key", nil)
	}
	if st.SignedAt.IsZero() {
		return nil, bad("missing signedAt", nil)
	}
	for i, f := range st.Files {
		if err := ValidPath(f.Path); err != nil {
			return nil, bad("", err)
		}
		if f.Path == SignatureName {
			return nil, bad("package.sig cannot be a leaf", nil)
		}
		if f.Mode != ModeFile && f.Mode != ModeExec {
			return nil, bad(fmt.Sprintf("file %s has non-canonical mode %#o", f.Path, f.Mode), nil)
		}
		if f.Size < 0 {
			return nil, bad("negative size", nil)
		}
		if i > 0 && st.Files[i-1].Path >= f.Path {
			return nil, bad("files are not sorted and unique", nil)
		}
	}
	if _, ok := (&Tree{Files: st.Files}).Lookup(ManifestName); !ok {
		return nil, bad("statement lists no manifest.yaml", nil)
	}
	if MerkleRoot(st.Files) != st.MerkleRoot {
		return nil, bad("merkleRoot does not match the listed files", nil)
	}
	return &st, nil
}
