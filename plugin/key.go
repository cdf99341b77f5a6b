package plugin

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"os"

	"github.com/norma-run/norma/capability"
)

// KeyID returns the id of an ed25519 public key: "ed25519:" followed by the
// first 16 bytes of SHA-256 over the raw 32-byte key, in hex.
func KeyID(pub ed25519.PublicKey) string {
	sum := sha256.Sum256(pub)
	return "ed25519:" + hex.EncodeToString(sum[:16])
}

// GenerateKey returns a new ed25519 key pair from crypto/rand.
func GenerateKey() (ed25519.PublicKey, ed25519.PrivateKey, error) {
	return ed25519.GenerateKey(rand.Reader)
}

// WriteKeyPair writes priv to name+".key" (PKCS #8 PEM, mode 0600) and its
// public key to name+".pub" (PKIX PEM, mode 0644). Neither file may exist.
func WriteKeyPair(name string, priv ed25519.PrivateKey) error {
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return err
	}
	pubDER, err := x509.MarshalPKIXPublicKey(priv.Public())
	if err != nil {
		return err
	}
	if err := writeNew(name+".key", pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		return err
	}
	if err := writeNew(name+".pub", pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER}), 0o644); err != nil {
		os.Remove(name + ".key")
		return err
	}
	return nil
}

func writeNew(p string, data []byte, mode os.FileMode) error {
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return fmt.Errorf("plugin: write key %s: %w", p, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(p)
		return fmt.Errorf("plugin: write key %s: %w", p, err)
	}
	if err := f.Close(); err != nil {
		os.Remove(p)
		return fmt.Errorf("plugin: write key %s: %w", p, err)
	}
	return nil
}

// ParsePrivateKey parses a PKCS #8 PEM ed25519 private key.
func ParsePrivateKey(data []byte) (ed25519.PrivateKey, error) { return parsePrivateKey(data, "") }

// parsePrivateKey is ParsePrivateKey naming the file p in its errors.
func parsePrivateKey(data []byte, p string) (ed25519.PrivateKey, error) {
	b, _ := pem.Decode(data)
	if b == nil || b.Type != "PRIVATE KEY" {
		return nil, newErr(capability.ReasonPluginKeyInvalid, "key", p, "not a PEM \"PRIVATE KEY\"", nil)
	}
	k, err := x509.ParsePKCS8PrivateKey(b.Bytes)
	if err != nil {
		return nil, newErr(capability.ReasonPluginKeyInvalid, "key", p, "malformed PKCS #8 key", err)
	}
	priv, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, newErr(capability.ReasonPluginKeyInvalid, "key", p, fmt.Sprintf("%T is not an ed25519 key", k), nil)
	}
	return priv, nil
}

// ParsePublicKey parses a PKIX PEM ed25519 public key.
func ParsePublicKey(data []byte) (ed25519.PublicKey, error) { return parsePublicKey(data, "") }

// parsePublicKey is ParsePublicKey naming the file p in its errors.
func parsePublicKey(data []byte, p string) (ed25519.PublicKey, error) {
	b, _ := pem.Decode(data)
	if b == nil || b.Type != "PUBLIC KEY" {
		return nil, newErr(capability.ReasonPluginKeyInvalid, "key", p, "not a PEM \"PUBLIC KEY\"", nil)
	}
	k, err := x509.ParsePKIXPublicKey(b.Bytes)
	if err != nil {
		return nil, newErr(capability.ReasonPluginKeyInvalid, "key", p, "malformed PKIX key", err)
	}
	pub, ok := k.(ed25519.PublicKey)
	if !ok {
		return nil, newErr(capability.ReasonPluginKeyInvalid, "key", p, fmt.Sprintf("%T is not an ed25519 key", k), nil)
	}
	return pub, nil
}

// LoadPrivateKey reads a private key file. It refuses a file that group or
// others can read.
func LoadPrivateKey(p string) (ed25519.PrivateKey, error) {
	info, err := os.Stat(p)
	if err != nil {
		return nil, fmt.Errorf("plugin: read key %s: %w", p, err)
	}
	if info.Mode().Perm()&0o077 != 0 {
		return nil, newErr(capability.ReasonPluginKeyInvalid, "key", p, fmt.Sprintf("private key file has mode %#o; want 0600", info.Mode().Perm()), nil)
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("plugin: read key %s: %w", p, err)
	}
	k, err := parsePrivateKey(data, p)
	if err != nil {
		return nil, err
	}
	return k, nil
}

// LoadPublicKey reads a public key file.
func LoadPublicKey(p string) (ed25519.PublicKey, error) {
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("plugin: read key %s: %w", p, err)
	}
	k, err := parsePublicKey(data, p)
	if err != nil {
		return nil, err
	}
	return k, nil
}
