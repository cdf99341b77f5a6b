package secret

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
)

// File names inside a FileVault directory.
const (
	VaultFileName = "vault.json"
	KeyFileName   = "vault.key"
	lockFileName  = "vault.lock"
	maxVaultFile  = 16 << 20
	vaultVersion  = 1
	aadPrefix     = "norma-secret-v1\x00"
)

// FileVault is a [Vault] kept in one file, each value encrypted with
// AES-256-GCM under the key of a [KeySource], with the secret name as
// additional data (so an entry moved to another name does not decrypt).
//
// The file is written with mode 0600 through a temporary file and an
// atomic rename, under an exclusive flock, so concurrent `norma secret set`
// processes do not lose each other's updates; readers never see a partial
// file. A vault or key file that group or others can access is refused.
//
// A FileVault is safe for concurrent use. What it does not protect
// against: anyone who can read both the vault and the key file as the same
// user (use an OS keyring KeySource to raise that bar).
type FileVault struct {
	dir        string
	key        cipher.AEAD
	keyCreated bool
	mu         sync.Mutex // serializes writers inside this process
}

// FileVaultOptions configures [OpenFileVault]; nil means the defaults.
type FileVaultOptions struct {
	// Key supplies the encryption key; nil means KeyFile{dir/vault.key}.
	Key KeySource
}

type vaultFile struct {
	Version int                   `json:"version"`
	Secrets map[string]vaultEntry `json:"secrets"`
}

type vaultEntry struct {
	Nonce      []byte `json:"nonce"`
	Ciphertext []byte `json:"ciphertext"`
}

// OpenFileVault opens (creating dir with mode 0700 when missing) the file
// vault in dir and loads its key, creating a key file on first use; call
// [FileVault.KeyCreated] to learn whether it did. It refuses a dir that
// group or others can write.
func OpenFileVault(ctx context.Context, dir string, opts *FileVaultOptions) (*FileVault, error) {
	if dir == "" {
		return nil, unavailable("", "vault directory is empty", nil)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, unavailable("", "create vault directory: "+err.Error(), err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, unavailable("", "stat vault directory: "+err.Error(), err)
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return nil, unavailable("", fmt.Sprintf("vault directory %s has mode %04o; group or others can write it", dir, fi.Mode().Perm()), nil)
	}
	var ks KeySource = KeyFile{Path: filepath.Join(dir, KeyFileName)}
	if opts != nil && opts.Key != nil {
		ks = opts.Key
	}
	key, created, err := ks.Key(ctx)
	if err != nil {
		return nil, err
	}
	if len(key) != KeyLen {
		return nil, unavailable("", fmt.Sprintf("vault key must be %d bytes", KeyLen), nil)
	}
	block, err := aes.NewCipher(key)
	clear(key)
	if err != nil {
		return nil, unavailable("", "cipher: "+err.Error(), err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, unavailable("", "cipher: "+err.Error(), err)
	}
	return &FileVault{dir: dir, key: aead, keyCreated: created}, nil
}

// KeyCreated reports whether opening the vault created a new key.
func (v *FileVault) KeyCreated() bool { return v.keyCreated }

// Path returns the vault file path.
func (v *FileVault) Path() string { return filepath.Join(v.dir, VaultFileName) }

var _ Vault = (*FileVault)(nil)

func aad(name string) []byte { return []byte(aadPrefix + name) }

// Get implements [Vault].
func (v *FileVault) Get(ctx context.Context, name string) (Value, error) {
	if err := CheckName(name); err != nil {
		return Value{}, err
	}
	if err := ctx.Err(); err != nil {
		return Value{}, err
	}
	f, err := v.load()
	if err != nil {
		return Value{}, err
	}
	e, ok := f.Secrets[name]
	if !ok {
		return Value{}, notFound(name)
	}
	if len(e.Nonce) != v.key.NonceSize() {
		return Value{}, unavailable(name, "vault entry is malformed", nil)
	}
	pt, err := v.key.Open(nil, e.Nonce, e.Ciphertext, aad(name))
	if err != nil {
		return Value{}, unavailable(name, "vault entry does not decrypt (wrong key or tampered file)", nil)
	}
	out := NewValue(pt)
	clear(pt)
	return out, nil
}

// Set implements [Vault]. The value must pass [CheckValue].
func (v *FileVault) Set(ctx context.Context, name string, val Value) error {
	if err := CheckName(name); err != nil {
		return err
	}
	if err := CheckValue(name, val); err != nil {
		return err
	}
	nonce := make([]byte, v.key.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return unavailable(name, "nonce: "+err.Error(), err)
	}
	pt := val.Reveal()
	ct := v.key.Seal(nil, nonce, pt, aad(name))
	clear(pt)
	return v.update(ctx, func(f *vaultFile) error {
		f.Secrets[name] = vaultEntry{Nonce: nonce, Ciphertext: ct}
		return nil
	})
}

// List implements [Vault].
func (v *FileVault) List(ctx context.Context) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f, err := v.load()
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(f.Secrets))
	for n := range f.Secrets {
		names = append(names, n)
	}
	slices.Sort(names)
	return names, nil
}

// Delete implements [Vault].
func (v *FileVault) Delete(ctx context.Context, name string) error {
	if err := CheckName(name); err != nil {
		return err
	}
	return v.update(ctx, func(f *vaultFile) error {
		if _, ok := f.Secrets[name]; !ok {
			return notFound(name)
		}
		delete(f.Secrets, name)
		return nil
	})
}

// load reads the vault file; a missing file is an empty vault.
func (v *FileVault) load() (*vaultFile, error) {
	empty := &vaultFile{Version: vaultVersion, Secrets: map[string]vaultEntry{}}
	fh, err := os.OpenFile(v.Path(), os.O_RDONLY|nofollow, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return empty, nil
	}
	if err != nil {
		return nil, unavailable("", "open vault: "+err.Error(), err)
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil {
		return nil, unavailable("", "stat vault: "+err.Error(), err)
	}
	if err := checkPrivateFile(v.Path(), fi); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(fh, maxVaultFile+1))
	if err != nil {
		return nil, unavailable("", "read vault: "+err.Error(), err)
	}
	if len(data) > maxVaultFile {
		return nil, unavailable("", "vault file is too large", nil)
	}
	var f vaultFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, unavailable("", "vault file is corrupt: "+err.Error(), err)
	}
	if f.Version != vaultVersion {
		return nil, unavailable("", fmt.Sprintf("vault file version %d is not supported", f.Version), nil)
	}
	if f.Secrets == nil {
		f.Secrets = map[string]vaultEntry{}
	}
	for n := range f.Secrets {
		if !ValidName(n) {
			return nil, unavailable("", "vault file holds an invalid secret name", nil)
		}
	}
	return &f, nil
}

// update applies fn to the vault file under the in-process mutex and an
// exclusive flock, and writes the result atomically.
func (v *FileVault) update(ctx context.Context, fn func(*vaultFile) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	lf, err := os.OpenFile(filepath.Join(v.dir, lockFileName), os.O_RDWR|os.O_CREATE|nofollow, 0o600)
	if err != nil {
		return unavailable("", "open vault lock: "+err.Error(), err)
	}
	defer lf.Close()
	if err := lockFile(lf); err != nil {
		return unavailable("", "lock vault: "+err.Error(), err)
	}
	defer unlockFile(lf)
	f, err := v.load()
	if err != nil {
		return err
	}
	if err := fn(f); err != nil {
		return err
	}
	data, err := json.Marshal(f)
	if err != nil {
		return unavailable("", "encode vault: "+err.Error(), err)
	}
	tmp, err := os.CreateTemp(v.dir, ".vault-*.tmp") // mode 0600
	if err != nil {
		return unavailable("", "write vault: "+err.Error(), err)
	}
	_, werr := tmp.Write(data)
	serr := tmp.Sync()
	cerr := tmp.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		os.Remove(tmp.Name())
		return unavailable("", "write vault: "+err.Error(), err)
	}
	if err := os.Rename(tmp.Name(), v.Path()); err != nil {
		os.Remove(tmp.Name())
		return unavailable("", "replace vault: "+err.Error(), err)
	}
	if d, err := os.Open(v.dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}
