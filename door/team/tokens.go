package team

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/norma-run/norma/internal/atomicfile"
)

// TokenFile is the name of the token file in the state directory.
const TokenFile = "team-tokens.json"

// tokenPrefix marks a team token, so secret scanners and people can tell
// what a leaked one is.
const tokenPrefix = "norma_team_"

// maxTokenFile bounds the token file read.
const maxTokenFile = 1 << 20

// ErrNoToken is returned by [Tokens.Revoke] for a name that has no token.
var ErrNoToken = errors.New("team: no token of that name")

// ErrTokenExists is returned by [Tokens.Add] for a name already taken.
var ErrTokenExists = errors.New("team: a token of that name exists (revoke it first)")

// ErrUnknownToken is returned by [Tokens.Lookup] for a token that is not
// (or no longer) in the file.
var ErrUnknownToken = errors.New("team: unknown or revoked token")

// Secret is a bearer token as issued, shown once. It never prints by
// accident: String and LogValue redact it; Reveal returns it.
type Secret struct{ s string }

// String redacts the token.
func (Secret) String() string { return "REDACTED_TOKEN" }

// LogValue redacts the token.
func (Secret) LogValue() slog.Value { return slog.StringValue("REDACTED_TOKEN") }

// Reveal returns the token itself, to print once to the person who made it.
func (s Secret) Reveal() string { return s.s }

// TokenInfo is what the token file keeps of one token: never the token,
// only its SHA-256.
type TokenInfo struct {
	Name    string    `json:"name"`
	Role    Role      `json:"role"`
	Created time.Time `json:"created"`
	// SHA256 is the hex SHA-256 of the token. A token is 256 random bits,
	// so a plain hash is enough: there is nothing to guess.
	SHA256 string `json:"sha256"`
}

type tokenFile struct {
	Version int         `json:"version"`
	Tokens  []TokenInfo `json:"tokens"`
}

// namePattern is what a token name may be: it becomes part of DecidedBy
// ("team:NAME") and of log lines.
// namePattern is compiled on first use (start-up cost of every norma process).
var namePattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`) })

// ValidName reports whether name may name a token.
func ValidName(name string) bool { return namePattern().MatchString(name) }

// Tokens is the token file of a state directory. Writers ([Tokens.Add],
// [Tokens.Revoke]) take an exclusive flock on path+".lock" and replace the
// file atomically (mode 0600); [Tokens.Lookup] rereads the file whenever
// it changed, so a token added or revoked by `norma serve token` in
// another process counts from the next request on. Its methods are safe
// for concurrent use.
type Tokens struct {
	path string

	mu    sync.Mutex
	stamp fileStamp
	cache []TokenInfo
}

// fileStamp identifies one version of the file: an atomic replace makes a
// new inode.
type fileStamp struct {
	ino, size, mtime int64
	ok               bool
}

// OpenTokens returns the token file at path; it need not exist yet.
func OpenTokens(path string) *Tokens { return &Tokens{path: path} }

// Path is the token file's path.
func (t *Tokens) Path() string { return t.path }

// Add makes a new token for name with role and returns it; the file keeps
// only its hash.
func (t *Tokens) Add(name string, role Role, now time.Time) (Secret, TokenInfo, error) {
	if !ValidName(name) {
		return Secret{}, TokenInfo{}, fmt.Errorf("team: token name %q: want 1-63 of a-z 0-9 . _ - starting with a letter or digit", name)
	}
	if _, err := ParseRole(string(role)); err != nil {
		return Secret{}, TokenInfo{}, err
	}
	b := make([]byte, 32)
	rand.Read(b) // never fails (crypto/rand)
	sec := Secret{tokenPrefix + base64.RawURLEncoding.EncodeToString(b)}
	info := TokenInfo{Name: name, Role: role, Created: now.UTC().Truncate(time.Second), SHA256: digest(sec.s)}
	err := t.update(func(f *tokenFile) error {
		if slices.ContainsFunc(f.Tokens, func(ti TokenInfo) bool { return ti.Name == name }) {
			return fmt.Errorf("%w: %s", ErrTokenExists, name)
		}
		f.Tokens = append(f.Tokens, info)
		return nil
	})
	if err != nil {
		return Secret{}, TokenInfo{}, err
	}
	return sec, info, nil
}

// Revoke deletes the token of name; the server refuses it from the next
// request on.
func (t *Tokens) Revoke(name string) error {
	return t.update(func(f *tokenFile) error {
		i := slices.IndexFunc(f.Tokens, func(ti TokenInfo) bool { return ti.Name == name })
		if i < 0 {
			return fmt.Errorf("%w: %q", ErrNoToken, name)
		}
		f.Tokens = slices.Delete(f.Tokens, i, i+1)
		return nil
	})
}

// List returns the tokens, by name.
func (t *Tokens) List() ([]TokenInfo, error) {
	ts, err := t.current()
	if err != nil {
		return nil, err
	}
	ts = slices.Clone(ts)
	slices.SortFunc(ts, func(a, b TokenInfo) int { return strings.Compare(a.Name, b.Name) })
	return ts, nil
}

// Lookup returns the principal whose token is tok, or [ErrUnknownToken].
// Every stored hash is compared, in constant time, whatever matched: the
// time taken does not depend on which token, or which byte, differs.
// Another error means the file could not be read; the caller refuses.
func (t *Tokens) Lookup(tok string) (Principal, error) {
	ts, err := t.current()
	if err != nil {
		return Principal{}, err
	}
	got := digestBytes(tok)
	found := -1
	for i := range ts {
		want, err := hex.DecodeString(ts[i].SHA256)
		if err != nil || len(want) != sha256.Size {
			continue
		}
		if subtle.ConstantTimeCompare(got, want) == 1 {
			found = i
		}
	}
	if found < 0 || !strings.HasPrefix(tok, tokenPrefix) {
		return Principal{}, ErrUnknownToken
	}
	return Principal{Name: ts[found].Name, Role: ts[found].Role}, nil
}

func digestBytes(tok string) []byte {
	s := sha256.Sum256([]byte(tok))
	return s[:]
}

func digest(tok string) string { return hex.EncodeToString(digestBytes(tok)) }

// current returns the tokens in the file, rereading it when it changed.
func (t *Tokens) current() ([]TokenInfo, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	st, err := stampOf(t.path)
	if err != nil {
		return nil, err
	}
	if st.ok && st == t.stamp {
		return t.cache, nil
	}
	f, st, err := readTokenFile(t.path)
	if err != nil {
		return nil, err
	}
	t.stamp, t.cache = st, f.Tokens
	return t.cache, nil
}

func stampOf(path string) (fileStamp, error) {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return fileStamp{}, nil
	}
	if err != nil {
		return fileStamp{}, fmt.Errorf("team: token file: %w", err)
	}
	st, _ := fi.Sys().(*syscall.Stat_t)
	if st == nil {
		return fileStamp{}, errors.New("team: token file: no file identity")
	}
	return fileStamp{ino: int64(st.Ino), size: fi.Size(), mtime: fi.ModTime().UnixNano(), ok: true}, nil
}

// readTokenFile reads the file at path; a missing file holds no token. A
// file that is not a private regular file of this uid is refused: the
// hashes it holds may have been written by someone else.
func readTokenFile(path string) (tokenFile, fileStamp, error) {
	fh, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return tokenFile{Version: 1}, fileStamp{}, nil
	}
	if err != nil {
		return tokenFile{}, fileStamp{}, fmt.Errorf("team: token file: %w", err)
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil {
		return tokenFile{}, fileStamp{}, fmt.Errorf("team: token file: %w", err)
	}
	st, _ := fi.Sys().(*syscall.Stat_t)
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o077 != 0 || st == nil || int(st.Uid) != os.Getuid() {
		return tokenFile{}, fileStamp{}, fmt.Errorf("team: the token file %s is not a private file of this user (mode %v)", path, fi.Mode())
	}
	b, err := io.ReadAll(io.LimitReader(fh, maxTokenFile+1))
	if err != nil {
		return tokenFile{}, fileStamp{}, fmt.Errorf("team: token file: %w", err)
	}
	if len(b) > maxTokenFile {
		return tokenFile{}, fileStamp{}, fmt.Errorf("team: the token file %s is over %d bytes", path, maxTokenFile)
	}
	var f tokenFile
	if err := json.Unmarshal(b, &f); err != nil {
		return tokenFile{}, fileStamp{}, fmt.Errorf("team: the token file %s: %w", path, err)
	}
	if f.Version != 1 {
		return tokenFile{}, fileStamp{}, fmt.Errorf("team: the token file %s has version %d; this norma reads version 1", path, f.Version)
	}
	return f, fileStamp{ino: int64(st.Ino), size: fi.Size(), mtime: fi.ModTime().UnixNano(), ok: true}, nil
}

// update changes the file with fn under the file's lock and replaces it
// atomically.
func (t *Tokens) update(fn func(*tokenFile) error) error {
	if err := os.MkdirAll(filepath.Dir(t.path), 0o700); err != nil {
		return fmt.Errorf("team: %w", err)
	}
	lock, err := os.OpenFile(t.path+".lock", os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("team: the token file's lock: %w", err)
	}
	defer lock.Close() // releases the lock
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("team: locking %s: %w", lock.Name(), err)
	}
	f, _, err := readTokenFile(t.path)
	if err != nil {
		return err
	}
	if err := fn(&f); err != nil {
		return err
	}
	f.Version = 1
	if f.Tokens == nil {
		f.Tokens = []TokenInfo{}
	}
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return fmt.Errorf("team: %w", err)
	}
	if err := atomicfile.Write(t.path, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("team: writing the token file: %w", err)
	}
	return nil
}
