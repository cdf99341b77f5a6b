package hook

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
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
	tf := trustFile{Version: 1}
	switch err := atomicfile.ReadJSON(t.path, 1, &tf); {
	case errors.Is(err, atomicfile.ErrCorrupt):
		return tf, fmt.Errorf("hook: trust file %s is corrupt", t.path)
	case err != nil:
		return tf, fmt.Errorf("hook: trust file: %w", err)
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

// commandDigest binds a hook file's content to the arguments it runs
// with: trusting `./tool -c X` does not trust `./tool -c Y`.
func commandDigest(data []byte, args []string) string {
	if len(args) == 0 {
		return Digest(data)
	}
	b := append([]byte(nil), data...)
	b = append(b, "\x00norma-hook-args\x00"...)
	b = append(b, strings.Join(args, "\x00")...)
	return Digest(b)
}

// commandKey names a trusted command: its file, and its arguments when it
// has any (one file may be trusted with several argument lists).
func commandKey(path string, args []string) string {
	k := filepath.Clean(path)
	if len(args) > 0 {
		k += "\x00" + strings.Join(args, "\x00")
	}
	return k
}

// Trust records the current content of the hook file at path, with the
// arguments it runs with, and returns the digest.
func (t *TrustStore) Trust(path string, args ...string) (string, error) {
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
	d := commandDigest(data, args)
	t.mu.Lock()
	defer t.mu.Unlock()
	tf, err := t.load()
	if err != nil {
		return "", err
	}
	tf.Hooks[commandKey(path, args)] = d
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
func (t *TrustStore) Check(path string, args []string, data []byte) error {
	t.mu.Lock()
	tf, err := t.load()
	t.mu.Unlock()
	untrusted := func(detail string) error {
		return &capability.Error{Decision: capability.Decision{Reason: capability.ReasonHookUntrusted, Layer: "hook"}, Detail: detail}
	}
	if err != nil {
		return untrusted(err.Error())
	}
	want, ok := tf.Hooks[commandKey(path, args)]
	switch {
	case !ok:
		return untrusted("hook file " + filepath.Base(path) + " is not trusted")
	case want != commandDigest(data, args):
		return untrusted("hook file " + filepath.Base(path) + " or its arguments changed since it was trusted")
	}
	return nil
}
