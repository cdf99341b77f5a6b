package secret

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// KeyLen is the length of a vault key: AES-256.
const KeyLen = 32

// KeySource supplies the vault encryption key. An OS keyring (Secret
// Service, Keychain) is plugged in by implementing it; [KeyFile] is the
// fallback. Implementations must be safe for concurrent use and must
// return an error, never a weaker key, when the key is unusable.
type KeySource interface {
	// Key returns the KeyLen-byte key, creating it on first use when the
	// source can; created reports that it did.
	Key(ctx context.Context) (key []byte, created bool, err error)
}

// KeyFile is a [KeySource] over a file holding KeyLen random bytes.
//
// It creates the file with mode 0600 on first use (written aside, then
// linked into place, so two processes never see a partial key), and refuses a key file that is not a regular
// file, is not owned by the current user, or is readable or writable by
// group or others. A key file next to the vault only protects against
// someone who copies the vault file alone; callers must tell the user so
// when Key reports created (the CLI prints a warning).
type KeyFile struct {
	// Path of the key file.
	Path string
}

var _ KeySource = KeyFile{}

// Key implements [KeySource].
func (k KeyFile) Key(ctx context.Context) ([]byte, bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	if k.Path == "" {
		return nil, false, unavailable("", "key file path is empty", nil)
	}
	key, err := k.read()
	if err == nil {
		return key, false, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, false, err
	}
	key = make([]byte, KeyLen)
	if _, err := rand.Read(key); err != nil {
		return nil, false, unavailable("", "generate key: "+err.Error(), err)
	}
	// Write a temporary file, then link(2) it into place: the key appears
	// whole or not at all, and a concurrent creator loses with EEXIST.
	f, err := os.CreateTemp(filepath.Dir(k.Path), ".vault-key-*.tmp") // mode 0600
	if err != nil {
		return nil, false, unavailable("", "create key file: "+err.Error(), err)
	}
	defer os.Remove(f.Name())
	_, werr := f.Write(key)
	serr := f.Sync()
	cerr := f.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		return nil, false, unavailable("", "write key file: "+err.Error(), err)
	}
	if err := os.Link(f.Name(), k.Path); errors.Is(err, fs.ErrExist) {
		key, err := k.read() // created by a concurrent process
		return key, false, err
	} else if err != nil {
		return nil, false, unavailable("", "create key file: "+err.Error(), err)
	}
	return key, true, nil
}

func (k KeyFile) read() ([]byte, error) {
	f, err := os.OpenFile(k.Path, os.O_RDONLY|nofollow, 0)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		return nil, unavailable("", "open key file: "+err.Error(), err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, unavailable("", "stat key file: "+err.Error(), err)
	}
	if err := checkPrivateFile(k.Path, fi); err != nil {
		return nil, err
	}
	key := make([]byte, KeyLen+1)
	n, err := io.ReadFull(f, key)
	if n != KeyLen || !errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, unavailable("", fmt.Sprintf("key file %s must hold exactly %d bytes", k.Path, KeyLen), nil)
	}
	return key[:KeyLen], nil
}

// checkPrivateFile refuses a file that is not regular, not owned by us, or
// accessible by group or others.
func checkPrivateFile(path string, fi fs.FileInfo) error {
	if !fi.Mode().IsRegular() {
		return unavailable("", path+" is not a regular file", nil)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return unavailable("", fmt.Sprintf("%s has mode %04o; refusing a key or vault file that group or others can access (chmod 600 it)", path, perm), nil)
	}
	if !ownedByCurrentUser(fi) {
		return unavailable("", path+" is not owned by the current user", nil)
	}
	return nil
}
