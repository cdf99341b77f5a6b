// Package filetrust records the content of the workspace files that decide
// what runs (the workspace policy and settings files) as the user last
// accepted it, so that a later change can be shown as a delta against it
// and held until accepted when it widens.
//
// The record is one JSON file under Norma's state directory, like the
// hook trust file: per workspace (its absolute path, symbolic links
// resolved) and file (relative to the workspace), the accepted bytes and
// their digest. The content itself is kept, not only a digest, because a
// held change is shown as a delta against it and the accepted version is
// what a run applies meanwhile.
package filetrust

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/norma-run/norma/internal/atomicfile"
)

// FileName is the record's name under the state directory.
const FileName = "policy-trust.json"

// Accepted is one file's accepted content.
type Accepted struct {
	// Absent says the user accepted that the file does not exist (the
	// built-in defaults); Content is then empty.
	Absent  bool      `json:"absent,omitempty"`
	Content []byte    `json:"content,omitempty"`
	Digest  string    `json:"digest"`
	At      time.Time `json:"at"`
	// By says how it was accepted: "norma policy trust", "terminal",
	// "narrowing" (applied at once), "approval" (an "always" answer).
	By string `json:"by"`
}

type record struct {
	Version    int                            `json:"version"`
	Workspaces map[string]map[string]Accepted `json:"workspaces"`
}

// Store is the record of one state directory. Every call reads the file
// again, so an acceptance in another process counts at once. It is safe
// for concurrent use within a process; across processes the last writer
// of the whole file wins.
type Store struct {
	path string
	mu   sync.Mutex
}

// Open returns the store of the state directory home. The file need not
// exist yet.
func Open(home string) (*Store, error) {
	if home == "" {
		return nil, errors.New("filetrust: no state directory")
	}
	abs, err := filepath.Abs(filepath.Join(home, FileName))
	if err != nil {
		return nil, err
	}
	return &Store{path: abs}, nil
}

// Digest returns "sha256:" + hex of data; nil (no file) digests as "absent".
func Digest(data []byte, absent bool) string {
	if absent {
		return "absent"
	}
	s := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(s[:])
}

// WorkspaceKey is the identity a workspace is recorded under: its absolute
// path with symbolic links resolved.
func WorkspaceKey(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(abs)
}

func (s *Store) load() (record, error) {
	r := record{Version: 1, Workspaces: map[string]map[string]Accepted{}}
	b, err := os.ReadFile(s.path)
	if errors.Is(err, fs.ErrNotExist) {
		return r, nil
	}
	if err != nil {
		return r, fmt.Errorf("filetrust: %w", err)
	}
	if err := json.Unmarshal(b, &r); err != nil || r.Version != 1 {
		return r, fmt.Errorf("filetrust: %s is corrupt", s.path)
	}
	if r.Workspaces == nil {
		r.Workspaces = map[string]map[string]Accepted{}
	}
	return r, nil
}

// Get returns what the user accepted of file in workspace ws; ok is false
// when nothing was ever accepted.
func (s *Store) Get(ws, file string) (a Accepted, ok bool, err error) {
	key, err := WorkspaceKey(ws)
	if err != nil {
		return Accepted{}, false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.load()
	if err != nil {
		return Accepted{}, false, err
	}
	a, ok = r.Workspaces[key][file]
	return a, ok, nil
}

// Accept records content (absent: no file) as the accepted version of
// file in workspace ws.
func (s *Store) Accept(ws, file string, content []byte, absent bool, by string) error {
	return s.Update(ws, file, by, func([]byte, bool) ([]byte, bool, error) { return content, absent, nil })
}

// Update replaces the accepted version of file in workspace ws with what
// edit makes of it (content and absent of the old one; nothing accepted
// reads as absent), under the store's lock.
func (s *Store) Update(ws, file, by string, edit func(old []byte, absent bool) ([]byte, bool, error)) error {
	key, err := WorkspaceKey(ws)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.load()
	if err != nil {
		return err
	}
	old, ok := r.Workspaces[key][file]
	content, absent, err := edit(old.Content, !ok || old.Absent)
	if err != nil {
		return err
	}
	if absent {
		content = nil
	}
	if r.Workspaces[key] == nil {
		r.Workspaces[key] = map[string]Accepted{}
	}
	r.Workspaces[key][file] = Accepted{Absent: absent, Content: content, Digest: Digest(content, absent), At: time.Now().UTC(), By: by}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.Write(s.path, b, 0o600); err != nil {
		return fmt.Errorf("filetrust: %w", err)
	}
	return nil
}
