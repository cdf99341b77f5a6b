package hook

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/internal/atomicfile"
)

// TrustStore records which hook files the user trusted, by absolute path
// and sha256 of their content, in a JSON file. Every Check reads the file
// again, so trusting or revoking in another process takes effect at once.
// It is safe for concurrent use.
type TrustStore struct {
	path string
	mu   sync.Mutex
}

type trustFile struct {
	Version int               `json:"version"`
	Hooks   map[string]string `json:"hooks"`
}

// OpenTrustStore returns the store kept in the file at path (absolute). The
// file need not exist yet.
func OpenTrustStore(path string) (*TrustStore, error) {
	if !filepath.IsAbs(path) {
		return nil, fmt.Errorf("hook: trust file %q is not an absolute path", path)
	}
	return &TrustStore{path: path}, nil
}

// Digest returns "sha256:" + hex of data.
func Digest(data []byte) string {
	s := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(s[:])
}

func (t *TrustStore) load() (trustFile, error) {
	tf := trustFile{Version: 1, Hooks: map[string]string{}}
	b, err := os.ReadFile(t.path)
	if errors.Is(err, fs.ErrNotExist) {
		return tf, nil
	}
	if err != nil {
		return tf, fmt.Errorf("hook: trust file: %w", err)
	}
	if err := json.Unmarshal(b, &tf); err != nil || tf.Version != 1 {
		return tf, fmt.Errorf("hook: trust file %s is corrupt", t.path)
	}
	if tf.Hooks == nil {
		tf.Hooks = map[string]string{}
	}
	return tf, nil
}

func (t *TrustStore) save(tf trustFile) error {
	b, err := json.MarshalIndent(tf, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.Write(t.path, b, 0o600); err != nil {
		return fmt.Errorf("hook: trust file: %w", err)
	}
	return nil
}

// Trust records the current content of the hook file at path and returns
// its digest.
func (t *TrustStore) Trust(path string) (string, error) {
	if !filepath.IsAbs(path) {
		return "", fmt.Errorf("hook: %q is not an absolute path", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("hook: trust: %w", err)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxHookFile+1))
	f.Close()
	if err != nil {
		return "", fmt.Errorf("hook: trust: %w", err)
	}
	if len(data) > MaxHookFile {
		return "", errors.New("hook: trust: file too large")
	}
	d := Digest(data)
	t.mu.Lock()
	defer t.mu.Unlock()
	tf, err := t.load()
	if err != nil {
		return "", err
	}
	tf.Hooks[filepath.Clean(path)] = d
	return d, t.save(tf)
}

// Revoke forgets the hook file at path.
func (t *TrustStore) Revoke(path string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	tf, err := t.load()
	if err != nil {
		return err
	}
	delete(tf.Hooks, filepath.Clean(path))
	return t.save(tf)
}

// Check returns nil when data is the trusted content of the hook at path,
// and otherwise a *capability.Error with code HOOK_UNTRUSTED. A store that
// cannot be read also refuses.
func (t *TrustStore) Check(path string, data []byte) error {
	t.mu.Lock()
	tf, err := t.load()
	t.mu.Unlock()
	untrusted := func(detail string) error {
		return &capability.Error{Decision: capability.Decision{Reason: capability.ReasonHookUntrusted, Layer: "hook"}, Detail: detail}
	}
	if err != nil {
		return untrusted(err.Error())
	}
	want, ok := tf.Hooks[filepath.Clean(path)]
	switch {
	case !ok:
		return untrusted("hook file " + filepath.Base(path) + " is not trusted")
	case want != Digest(data):
		return untrusted("hook file " + filepath.Base(path) + " changed since it was trusted")
	}
	return nil
}
