package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/norma-run/norma/approval"
	"github.com/norma-run/norma/audit"
	"github.com/norma-run/norma/plugin"
)

// Store is everything a run persists: the audit chain, approvals and
// their uses, the execution ledger and run locks. *DB is the SQLite
// implementation; package store/postgres is the PostgreSQL one. Callers
// hold a Store, never a concrete type, so that `--store` picks either.
type Store interface {
	audit.Backend
	approval.Backend
	approval.Ledger
	// LockRun gives run runID to this process until unlock is called; a
	// live holder elsewhere makes it fail with a *capability.Error of
	// reason RUN_LOCKED, a dead or stale one is taken over.
	LockRun(ctx context.Context, runID string) (unlock func() error, err error)
	// plugin.ConsentBackend: the consents and grants of plugins, per
	// machine (the enforced grant stays in STATE/plugins/ID).
	plugin.ConsentBackend
	Close() error
}

var _ Store = (*DB)(nil)

// FileName is the database file name inside the state directory.
const FileName = "norma.db"

// BusyTimeout is how long a writer waits for another process's write lock.
const BusyTimeout = 10 * time.Second

// ErrTooNew is returned by [Open] for a database from a newer Norma.
var ErrTooNew = errors.New("store: database schema is newer than this norma")

// DB is a SQLite database. It is safe for concurrent use by many goroutines
// and by several processes on the same file.
type DB struct {
	db   *sql.DB
	path string
}

// Options configures [OpenWith]. A nil *Options means the defaults.
type Options struct {
	// UnsafeSyncNormal runs SQLite with synchronous=NORMAL instead of
	// FULL: a committed transaction survives a crash of the process but
	// may be lost (not corrupted) on power loss or an OS crash. Only for
	// measurements and disposable state.
	UnsafeSyncNormal bool
}

// Open opens (creating when missing, with mode 0600) the database at path
// and migrates it to the current schema.
func Open(ctx context.Context, path string) (*DB, error) {
	return openAt(ctx, path, len(migrations), nil)
}

// OpenWith is [Open] with options.
func OpenWith(ctx context.Context, path string, opts *Options) (*DB, error) {
	return openAt(ctx, path, len(migrations), opts)
}

func openAt(ctx context.Context, path string, version int, opts *Options) (*DB, error) {
	if opts == nil {
		opts = &Options{}
	}
	if path == "" {
		return nil, errors.New("store: empty database path")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	// Create the file ourselves so that it is never world-readable.
	f, err := os.OpenFile(abs, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err) // a *PathError: "open PATH: cause"
	}
	f.Close()
	q := url.Values{}
	q.Set("_txlock", "immediate")
	q.Set("_busy_timeout", fmt.Sprint(BusyTimeout.Milliseconds()))
	q.Set("_journal_mode", "WAL")
	q.Set("_synchronous", "FULL")
	if opts.UnsafeSyncNormal {
		q.Set("_synchronous", "NORMAL")
	}
	q.Set("_foreign_keys", "1")
	dsn := (&url.URL{Scheme: "file", Path: abs, RawQuery: q.Encode()}).String()
	sdb, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", abs, err)
	}
	sdb.SetMaxOpenConns(8)
	sdb.SetMaxIdleConns(8)
	db := &DB{db: sdb, path: abs}
	if err := db.migrate(ctx, version); err != nil {
		sdb.Close()
		return nil, err
	}
	return db, nil
}

// Path returns the absolute path of the database file.
func (d *DB) Path() string { return d.path }

// Identity names the database: "sqlite:" and its path. Two DBs with one
// identity are one database.
func (d *DB) Identity() string { return "sqlite:" + d.path }

// Close closes the database.
func (d *DB) Close() error { return d.db.Close() }

// Version returns the schema version of the database.
func (d *DB) Version(ctx context.Context) (int, error) {
	var v int
	if err := d.db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return 0, fmt.Errorf("store: version: %w", err)
	}
	return v, nil
}

// tx runs fn in one immediate (write-locked) transaction.
func (d *DB) tx(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}
