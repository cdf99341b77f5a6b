package runtime

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/norma-run/norma/audit"
	"github.com/norma-run/norma/internal/atomicfile"
	"github.com/norma-run/norma/plugin"
	"github.com/norma-run/norma/secret"
	"github.com/norma-run/norma/store"
)

// The audit checkpoint key lives in the state directory's key store, never
// in the database: <state>/keys/audit-checkpoint.key (PKCS #8, 0600) and
// .pub, written by the same code as publisher keys (plugin.WriteKeyPair).
// The newest stored checkpoint is also copied to <state>/audit.checkpoint,
// so that putting back an older copy of the database is detected too.
const (
	KeyStoreDir         = "keys"
	auditKeyName        = "audit-checkpoint"
	AuditCheckpointFile = "audit.checkpoint"
)

func AuditKeyBase(home string) string { return filepath.Join(home, KeyStoreDir, auditKeyName) }

// openAuditLog opens the audit log of the state directory home over db,
// signing a checkpoint of the chain head when it is closed; OpenServices
// is its one caller.
func openAuditLog(ctx context.Context, home string, db store.Store, red *secret.Redactor) (*audit.Log, error) {
	cp, err := AuditCheckpointer(ctx, home, db)
	if err != nil {
		return nil, err
	}
	return audit.Open(db, &audit.Options{Checkpointer: cp, Redactor: red})
}

// AuditCheckpointer returns the checkpoint writer of home. The first use
// creates the key and stores a checkpoint of the head at once, under the
// key store's lock, so that from then on a state directory with a key and
// no stored checkpoint is one whose checkpoints were deleted
// (Checkpointer.RequireStored). A failure of that first checkpoint is
// left for the Checkpointer's next use to report.
func AuditCheckpointer(ctx context.Context, home string, db store.Store) (*audit.Checkpointer, error) {
	dir := filepath.Join(home, KeyStoreDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("audit key: %w", err)
	}
	lock, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("audit key: %w", err)
	}
	defer lock.Close() // releases the lock
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return nil, fmt.Errorf("audit key: lock %s: %w", lock.Name(), err)
	}
	priv, created, err := loadOrCreateAuditKey(home)
	if err != nil {
		return nil, err
	}
	pub := priv.Public().(ed25519.PublicKey)
	origin := audit.KeyOrigin(pub)
	s, err := audit.NewNoteSigner(origin, priv)
	if err != nil {
		return nil, err
	}
	v, err := audit.NewNoteVerifier(origin, pub)
	if err != nil {
		return nil, err
	}
	file, own := checkpointCopy(home, db)
	cp := &audit.Checkpointer{Origin: origin, Signer: s, Verifier: v,
		Publish: func(signed []byte) error { return atomicfile.Write(file, signed, 0o600) }}
	if created || firstUse(ctx, db, file, own) {
		// A new key, or an old key's first use of a store: from this
		// checkpoint on, none stored means deleted.
		_, _, _ = cp.Checkpoint(ctx, db) // a failure is reported by the next use
	}
	cp.RequireStored = true
	return cp, nil
}

// checkpointCopy is the file in home that holds a copy of the newest
// checkpoint home's key stored in db: audit.checkpoint for home's own
// norma.db (own true), audit.checkpoint-HASH for any other store (--store),
// HASH naming the store (its path, or its server, database and tenant).
// Its existence says that home's key has stored checkpoints in db, so
// none there means they were deleted.
func checkpointCopy(home string, db store.Store) (file string, own bool) {
	id := fmt.Sprintf("%T", db)
	if s, ok := db.(interface{ Identity() string }); ok {
		id = s.Identity()
	}
	if id == "sqlite:"+filepath.Join(home, store.FileName) {
		return filepath.Join(home, AuditCheckpointFile), true
	}
	sum := sha256.Sum256([]byte(id))
	return filepath.Join(home, AuditCheckpointFile+"-"+hex.EncodeToString(sum[:8])), false
}

// firstUse reports whether home's key has never stored a checkpoint in
// db, so that none there is not a deletion: no copy of one (file) in
// home, and, for home's own norma.db, whose first checkpoint older
// Norma took when it made the key, an empty log too (the key was made
// with another store, --store, and norma.db is new). A log that cannot
// be read is not a first use: the checkpoint stays required.
func firstUse(ctx context.Context, db store.Store, file string, own bool) bool {
	if exists(file) {
		return false
	}
	if !own {
		return true
	}
	rows, err := db.QueryAudit(ctx, audit.Filter{Limit: 1})
	return err == nil && len(rows) == 0
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// loadOrCreateAuditKey reads the audit key, or creates it when the key
// store has none. The caller holds the key store's lock.
func loadOrCreateAuditKey(home string) (priv ed25519.PrivateKey, created bool, err error) {
	base := AuditKeyBase(home)
	if _, err := os.Lstat(base + ".key"); errors.Is(err, fs.ErrNotExist) {
		_, priv, err := plugin.GenerateKey()
		if err != nil {
			return nil, false, err
		}
		os.Remove(base + ".pub") // a stray public key without its private key
		if err := plugin.WriteKeyPair(base, priv); err != nil {
			return nil, false, err
		}
		return priv, true, nil
	}
	priv, err = plugin.LoadPrivateKey(base + ".key")
	return priv, false, err
}

// ErrNoAuditKey: an exported checkpoint cannot be checked in a state
// directory that never wrote one.
var ErrNoAuditKey = errors.New("audit key: the state directory has no audit key")

// AuditVerifyOptions returns what `audit verify` checks in home besides
// the chain: the state directory's copy of the newest checkpoint and the
// exported ones. It is nil when the key store has no audit key (no
// checkpoint was ever written); then an exported checkpoint cannot be
// checked, which is an error. The verifier comes from the private key when
// it is readable (and the public key file must match it), else from the
// public key file.
func AuditVerifyOptions(ctx context.Context, home string, db store.Store, exported []audit.ExternalCheckpoint) (*audit.VerifyOptions, error) {
	base := AuditKeyBase(home)
	var pub ed25519.PublicKey
	priv, err := plugin.LoadPrivateKey(base + ".key")
	switch {
	case err == nil:
		pub = priv.Public().(ed25519.PublicKey)
		if filePub, err := plugin.LoadPublicKey(base + ".pub"); err == nil && !bytes.Equal(filePub, pub) {
			return nil, fmt.Errorf("audit key: %s.pub does not match %s.key", base, base)
		}
	case errors.Is(err, fs.ErrNotExist):
		pub, err = plugin.LoadPublicKey(base + ".pub")
		if errors.Is(err, fs.ErrNotExist) {
			if len(exported) > 0 {
				return nil, fmt.Errorf("%w (%s.pub) to verify the %s with", ErrNoAuditKey, base, exported[0].Source)
			}
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
	default:
		return nil, err
	}
	origin := audit.KeyOrigin(pub)
	v, err := audit.NewNoteVerifier(origin, pub)
	if err != nil {
		return nil, err
	}
	// A key that never stored a checkpoint in another store (--store) is
	// not missing one there.
	file, own := checkpointCopy(home, db)
	opts := &audit.VerifyOptions{Origin: origin, Verifier: v, RequireCheckpoint: !firstUse(ctx, db, file, own)}
	switch b, err := ReadCheckpointFile(file); {
	case err == nil:
		opts.External = append(opts.External, audit.ExternalCheckpoint{Source: "checkpoint in " + filepath.Base(file), Note: b})
	case !errors.Is(err, fs.ErrNotExist):
		return nil, err
	}
	opts.External = append(opts.External, exported...)
	return opts, nil
}

// ReadCheckpointFile reads at most audit.MaxSignedCheckpoint+1 bytes of
// p; OpenCheckpoint refuses a longer one.
func ReadCheckpointFile(p string) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, audit.MaxSignedCheckpoint+1))
}
