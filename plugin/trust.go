package plugin

import (
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/internal/atomicfile"
)

// TrustStore holds the publisher keys the user added and the rollback table.
// It lives in a directory of its own (mode 0700; files 0600) under the state
// directory, which plugins never get a capability for: the sandbox does not
// mount the state directory and the file-system guard only reaches the
// workspace. Updates take an exclusive flock on TRUST/.lock and replace files
// atomically, so concurrent norma processes do not lose records.
//
// Files:
//
//	keys.json      []TrustedKey: key, publisher, allowed plugin id prefixes
//	rollback.json  per plugin id: the pinned key; per key id, the
//	               highest version installed and its Merkle root; and the
//	               Merkle root of every version installed (bounded)
type TrustStore struct {
	dir string
}

// TrustedKey is a publisher key the user added.
type TrustedKey struct {
	ID        string            `json:"id"`
	Publisher string            `json:"publisher"`
	PublicKey ed25519.PublicKey `json:"publicKey"`
	// Prefixes are plugin id prefixes; "com.example" admits "com.example"
	// and "com.example.*" / "com.example-*" ids, never "com.examples".
	Prefixes []string  `json:"prefixes"`
	AddedAt  time.Time `json:"addedAt"`
}

// Allows reports whether the key may sign plugin id.
func (k TrustedKey) Allows(id string) bool {
	for _, p := range k.Prefixes {
		if PrefixMatches(p, id) {
			return true
		}
	}
	return false
}

// PrefixMatches reports whether plugin id falls under prefix: equal, or
// continuing with "." or "-" after it. A prefix ending in "." or "-" matches
// ids that start with it.
func PrefixMatches(prefix, id string) bool {
	if prefix == "" {
		return false
	}
	if strings.HasSuffix(prefix, ".") || strings.HasSuffix(prefix, "-") {
		return strings.HasPrefix(id, prefix) && len(id) > len(prefix)
	}
	if id == prefix {
		return true
	}
	rest, ok := strings.CutPrefix(id, prefix)
	return ok && (rest[0] == '.' || rest[0] == '-')
}

// Installed is one row of the rollback table.
type Installed struct {
	Version    string `json:"version"`
	MerkleRoot Digest `json:"merkleRoot"`
}

// PluginTrust is the rollback-table entry of one plugin id.
type PluginTrust struct {
	// Pinned is the key the plugin's current version was signed with; a
	// different key is accepted only with a co-signature by this one.
	Pinned KeyRef `json:"pinned"`
	// Highest maps a key id to the highest version installed with it.
	Highest map[string]Installed `json:"highest"`
	// Versions maps every version of the plugin installed signed, without
	// its build metadata, to the Merkle root it was installed with, so a
	// version number is never reused for other contents, not even as a
	// downgrade or after a removal. It holds at most [MaxVersionHistory]
	// versions; the lowest are forgotten first.
	Versions map[string]Digest `json:"versions,omitempty"`
}

type rollbackFile struct {
	Plugins map[string]*PluginTrust `json:"plugins"`
}

// OpenTrustStore opens (creating when missing) the trust store in dir.
// It refuses a directory that group or others can write.
func OpenTrustStore(dir string) (*TrustStore, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, newErr(capability.ReasonPluginState, "trust", dir, "cannot create trust store", err)
	}
	info, err := os.Stat(dir)
	if err != nil {
		return nil, newErr(capability.ReasonPluginState, "trust", dir, "cannot open trust store", err)
	}
	if info.Mode().Perm()&0o022 != 0 {
		return nil, newErr(capability.ReasonPluginState, "trust", dir, fmt.Sprintf("trust store is writable by others (mode %#o)", info.Mode().Perm()), nil)
	}
	return &TrustStore{dir: dir}, nil
}

// Dir returns the trust store directory.
func (s *TrustStore) Dir() string { return s.dir }

func (s *TrustStore) lock() (func(), error) {
	f, err := os.OpenFile(filepath.Join(s.dir, ".lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, newErr(capability.ReasonPluginState, "trust", s.dir, "cannot lock trust store", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, newErr(capability.ReasonPluginState, "trust", s.dir, "cannot lock trust store", err)
	}
	return func() { syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
}

func (s *TrustStore) read(name string, v any) error {
	data, err := os.ReadFile(filepath.Join(s.dir, name))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return newErr(capability.ReasonPluginState, "trust", name, "cannot read", err)
	}
	if err := decodeStrict(data, v); err != nil {
		// A corrupt trust file fails closed: nothing verifies until it is fixed.
		return newErr(capability.ReasonPluginState, "trust", filepath.Join(s.dir, name), "corrupt trust file", err)
	}
	return nil
}

func (s *TrustStore) write(name string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return writeAtomic(filepath.Join(s.dir, name), append(data, '\n'), 0o600)
}

// writeAtomic writes data to a temporary file next to p, syncs it and
// renames it over p.
func writeAtomic(p string, data []byte, mode os.FileMode) error {
	if err := atomicfile.Write(p, data, mode); err != nil {
		return newErr(capability.ReasonPluginState, "write", p, "", err)
	}
	return nil
}

// Keys returns the trusted keys sorted by publisher and id.
func (s *TrustStore) Keys() ([]TrustedKey, error) {
	var keys []TrustedKey
	if err := s.read("keys.json", &keys); err != nil {
		return nil, err
	}
	slices.SortFunc(keys, func(a, b TrustedKey) int {
		if c := strings.Compare(a.Publisher, b.Publisher); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return keys, nil
}

// Add trusts pub as publisher for plugin ids under prefixes (at least one,
// each a valid id or id prefix). Adding a key again replaces its publisher
// and prefixes.
func (s *TrustStore) Add(pub ed25519.PublicKey, publisher string, prefixes []string, now time.Time) (TrustedKey, error) {
	if len(pub) != ed25519.PublicKeySize {
		return TrustedKey{}, newErr(capability.ReasonPluginKeyInvalid, "trust add", "", "not an ed25519 public key", nil)
	}
	publisher = strings.TrimSpace(publisher)
	if publisher == "" || len(publisher) > 200 {
		return TrustedKey{}, newErr(capability.ReasonPluginKeyInvalid, "trust add", "", "publisher name required (at most 200 bytes)", nil)
	}
	if len(prefixes) == 0 {
		return TrustedKey{}, newErr(capability.ReasonPluginKeyInvalid, "trust add", "", "at least one plugin id prefix required", nil)
	}
	for _, p := range prefixes {
		q := strings.TrimRight(p, ".-")
		if q == "" || !(idPattern().MatchString(q) || regexpLabel(q)) || len(p)-len(q) > 1 {
			return TrustedKey{}, newErr(capability.ReasonPluginKeyInvalid, "trust add", "", "malformed plugin id prefix "+strconvQuote(p), nil)
		}
	}
	unlock, err := s.lock()
	if err != nil {
		return TrustedKey{}, err
	}
	defer unlock()
	var keys []TrustedKey
	if err := s.read("keys.json", &keys); err != nil {
		return TrustedKey{}, err
	}
	k := TrustedKey{ID: KeyID(pub), Publisher: publisher, PublicKey: pub, Prefixes: slices.Compact(slices.Sorted(slices.Values(prefixes))), AddedAt: now.UTC()}
	keys = slices.DeleteFunc(keys, func(o TrustedKey) bool { return o.ID == k.ID })
	keys = append(keys, k)
	return k, s.write("keys.json", keys)
}

func regexpLabel(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// Remove removes a trusted key by id (or unique id prefix). Pins and the
// rollback table are kept: removing a key never lowers a floor.
func (s *TrustStore) Remove(id string) error {
	unlock, err := s.lock()
	if err != nil {
		return err
	}
	defer unlock()
	var keys []TrustedKey
	if err := s.read("keys.json", &keys); err != nil {
		return err
	}
	n := 0
	for _, k := range keys {
		if strings.HasPrefix(k.ID, id) {
			n++
		}
	}
	switch {
	case n == 0:
		return newErr(capability.ReasonPluginKeyUntrusted, "trust remove", id, "no such key", nil)
	case n > 1:
		return newErr(capability.ReasonPluginKeyInvalid, "trust remove", id, "ambiguous key id", nil)
	}
	keys = slices.DeleteFunc(keys, func(k TrustedKey) bool { return strings.HasPrefix(k.ID, id) })
	return s.write("keys.json", keys)
}

// Plugin returns the rollback-table entry of plugin id.
func (s *TrustStore) Plugin(id string) (*PluginTrust, bool, error) {
	var rf rollbackFile
	if err := s.read("rollback.json", &rf); err != nil {
		return nil, false, err
	}
	p, ok := rf.Plugins[id]
	return p, ok && p != nil, nil
}

// CheckRollback refuses (PLUGIN_ROLLBACK) installing version of plugin id
// with Merkle root when a higher version was installed before with any key
// of the plugin (a key rotation does not reset the floor), or when the same
// version (equal but for build metadata) was installed before with other
// contents: any version in [PluginTrust.Versions], not only the highest.
// allowDowngrade lifts the first refusal, never the second; a downgrade to
// the very contents installed before with that version is allowed with it.
func (s *TrustStore) CheckRollback(id, version string, root Digest, allowDowngrade bool) error {
	p, ok, err := s.Plugin(id)
	if err != nil || !ok {
		return err
	}
	v, err := parseVersion(version)
	if err != nil {
		return newErr(capability.ReasonPluginStatementInvalid, "install", id, "", err)
	}
	if r, ok := p.Versions[v.identity()]; ok && r != root {
		return newErr(capability.ReasonPluginRollback, "install", id,
			fmt.Sprintf("version %s was installed before with other contents %s; this package has %s: give the package a new version", version, r, root), nil)
	}
	for _, keyID := range slices.Sorted(maps.Keys(p.Highest)) {
		inst := p.Highest[keyID]
		h, err := parseVersion(inst.Version)
		if err != nil {
			return newErr(capability.ReasonPluginState, "trust", id, "corrupt rollback table", err)
		}
		switch c := v.compare(h); {
		case c == 0 && inst.MerkleRoot != root:
			return newErr(capability.ReasonPluginRollback, "install", id,
				fmt.Sprintf("version %s was installed before (key %s) with other contents %s; this package has %s", version, keyID, inst.MerkleRoot, root), nil)
		case c < 0 && !allowDowngrade:
			return newErr(capability.ReasonPluginRollback, "install", id,
				fmt.Sprintf("version %s is lower than %s, installed before with key %s; pass --allow-downgrade to install it anyway", version, inst.Version, keyID), nil)
		}
	}
	return nil
}

// Record notes that version (with Merkle root) of plugin id was installed,
// signed by key: the key becomes the plugin's pin, the version joins
// [PluginTrust.Versions] and the key's highest version rises when version
// is higher. An unsigned (--dev) install records nothing here; the
// plugin's own state keeps its history ([State.History]).
func (s *TrustStore) Record(id string, key KeyRef, version string, root Digest) error {
	v, err := parseVersion(version)
	if err != nil {
		return err
	}
	unlock, err := s.lock()
	if err != nil {
		return err
	}
	defer unlock()
	var rf rollbackFile
	if err := s.read("rollback.json", &rf); err != nil {
		return err
	}
	if rf.Plugins == nil {
		rf.Plugins = map[string]*PluginTrust{}
	}
	p := rf.Plugins[id]
	if p == nil {
		p = &PluginTrust{Highest: map[string]Installed{}}
		rf.Plugins[id] = p
	}
	p.Pinned = key
	if p.Versions == nil {
		p.Versions = map[string]Digest{}
	}
	remember(p.Versions, v, root)
	if cur, ok := p.Highest[key.ID]; ok {
		if h, err := parseVersion(cur.Version); err == nil && v.compare(h) <= 0 {
			return s.write("rollback.json", rf)
		}
	}
	p.Highest[key.ID] = Installed{Version: version, MerkleRoot: root}
	return s.write("rollback.json", rf)
}

func writeJSON(p string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return writeAtomic(p, append(data, '\n'), 0o600)
}
