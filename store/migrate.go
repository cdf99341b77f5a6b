package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// migration is one schema step. Versions are 1, 2, 3, … in slice order;
// never edit a released migration, append a new one.
type migration struct {
	name string
	sql  string
}

var migrations = []migration{
	{"audit events", `
CREATE TABLE audit_events (
	seq      INTEGER PRIMARY KEY,
	time_ns  INTEGER NOT NULL,
	type     TEXT NOT NULL,
	run_id   TEXT NOT NULL DEFAULT '',
	plugin   TEXT NOT NULL DEFAULT '',
	tool     TEXT NOT NULL DEFAULT '',
	decision TEXT NOT NULL DEFAULT '',
	body     BLOB NOT NULL,
	hash     BLOB NOT NULL
) STRICT;
CREATE INDEX audit_events_plugin ON audit_events(plugin, seq);
CREATE INDEX audit_events_time ON audit_events(time_ns);
CREATE TRIGGER audit_events_no_update BEFORE UPDATE ON audit_events
BEGIN SELECT RAISE(ABORT, 'audit log is append-only'); END;
CREATE TRIGGER audit_events_no_delete BEFORE DELETE ON audit_events
BEGIN SELECT RAISE(ABORT, 'audit log is append-only'); END;
`},
	{"approvals", `
CREATE TABLE approvals (
	id          TEXT PRIMARY KEY,
	run_id      TEXT NOT NULL,
	action_hash TEXT NOT NULL,
	created_ns  INTEGER NOT NULL,
	expires_ns  INTEGER NOT NULL,
	request     BLOB NOT NULL,
	state       TEXT NOT NULL,
	decided_by  TEXT NOT NULL DEFAULT '',
	decided_ns  INTEGER NOT NULL DEFAULT 0,
	why         TEXT NOT NULL DEFAULT '',
	uses        INTEGER NOT NULL DEFAULT 0
) STRICT;
CREATE INDEX approvals_action ON approvals(run_id, action_hash);
CREATE INDEX approvals_state ON approvals(state, created_ns);
`},
	{"approval uses", `
CREATE TABLE approval_uses (
	idempotency_key TEXT PRIMARY KEY,
	approval_id     TEXT NOT NULL REFERENCES approvals(id),
	n               INTEGER NOT NULL,
	run_id          TEXT NOT NULL,
	action_hash     TEXT NOT NULL,
	consumed_ns     INTEGER NOT NULL,
	finished_ns     INTEGER NOT NULL DEFAULT 0,
	UNIQUE (approval_id, n)
) STRICT;
CREATE INDEX approval_uses_open ON approval_uses(run_id, finished_ns);
`},
	{"run locks and tool executions", `
CREATE TABLE run_locks (
	run_id       TEXT PRIMARY KEY,
	nonce        TEXT NOT NULL,
	host         TEXT NOT NULL,
	machine      TEXT NOT NULL,
	pid          INTEGER NOT NULL,
	pid_start    TEXT NOT NULL,
	acquired_ns  INTEGER NOT NULL,
	heartbeat_ns INTEGER NOT NULL
) STRICT;
CREATE TABLE tool_executions (
	run_id        TEXT NOT NULL,
	tool_use_id   TEXT NOT NULL,
	principals    TEXT NOT NULL DEFAULT '',
	tool          TEXT NOT NULL,
	started_ns    INTEGER NOT NULL,
	finished_ns   INTEGER NOT NULL DEFAULT 0,
	is_error      INTEGER NOT NULL DEFAULT 0,
	reason        TEXT NOT NULL DEFAULT '',
	result_digest TEXT NOT NULL DEFAULT '',
	PRIMARY KEY (run_id, tool_use_id)
) STRICT;
`},
	{"audit checkpoints", `
CREATE TABLE audit_checkpoints (
	size    INTEGER PRIMARY KEY,
	time_ns INTEGER NOT NULL,
	note    BLOB NOT NULL
) STRICT;
CREATE TRIGGER audit_checkpoints_no_update BEFORE UPDATE ON audit_checkpoints
BEGIN SELECT RAISE(ABORT, 'audit checkpoints are append-only'); END;
CREATE TRIGGER audit_checkpoints_no_delete BEFORE DELETE ON audit_checkpoints
BEGIN SELECT RAISE(ABORT, 'audit checkpoints are append-only'); END;
`},
	// State directories sharing one database each sign their own
	// checkpoints: they are keyed by the signer's origin (the note's
	// first line) and size.
	{"audit checkpoints by origin", `
CREATE TABLE audit_checkpoints_by_origin (
	origin  TEXT NOT NULL,
	size    INTEGER NOT NULL,
	time_ns INTEGER NOT NULL,
	note    BLOB NOT NULL,
	PRIMARY KEY (origin, size)
) STRICT;
INSERT INTO audit_checkpoints_by_origin (origin, size, time_ns, note)
	SELECT CAST(substr(note, 1, max(instr(note, x'0a') - 1, 0)) AS TEXT), size, time_ns, note FROM audit_checkpoints;
DROP TABLE audit_checkpoints;
ALTER TABLE audit_checkpoints_by_origin RENAME TO audit_checkpoints;
CREATE TRIGGER audit_checkpoints_no_update BEFORE UPDATE ON audit_checkpoints
BEGIN SELECT RAISE(ABORT, 'audit checkpoints are append-only'); END;
CREATE TRIGGER audit_checkpoints_no_delete BEFORE DELETE ON audit_checkpoints
BEGIN SELECT RAISE(ABORT, 'audit checkpoints are append-only'); END;
`},
	{"plugin consents", `
CREATE TABLE plugin_consents (
	seq               INTEGER PRIMARY KEY,
	plugin            TEXT NOT NULL,
	version           TEXT NOT NULL DEFAULT '',
	manifest_digest   TEXT NOT NULL DEFAULT '',
	permission_digest TEXT NOT NULL DEFAULT '',
	grant_digest      TEXT NOT NULL DEFAULT '',
	generation        INTEGER NOT NULL DEFAULT 0,
	action            TEXT NOT NULL,
	granted           BLOB NOT NULL,
	who               TEXT NOT NULL DEFAULT '',
	host              TEXT NOT NULL DEFAULT '',
	time_ns           INTEGER NOT NULL
) STRICT;
CREATE INDEX plugin_consents_plugin ON plugin_consents(plugin, host, seq);
CREATE TRIGGER plugin_consents_no_update BEFORE UPDATE ON plugin_consents
BEGIN SELECT RAISE(ABORT, 'consent records are append-only'); END;
CREATE TRIGGER plugin_consents_no_delete BEFORE DELETE ON plugin_consents
BEGIN SELECT RAISE(ABORT, 'consent records are append-only'); END;
`},
}

// migrate brings the schema to version target, one transaction per step.
// The version is re-read inside each write-locked transaction, so two
// processes opening a new database at once do not both apply a step.
//
// A database being created by another process at the same moment may
// answer SQLITE_BUSY before the busy handler applies (setting WAL mode
// on a new file takes an exclusive lock): such a step is retried, with a
// growing pause, for up to BusyTimeout (agents start hooks in parallel,
// and the first ones of a new state directory meet here).
func (d *DB) migrate(ctx context.Context, target int) error {
	start := time.Now()
	for attempt := 1; ; attempt++ {
		err := d.migrateOnce(ctx, target)
		if err == nil || !busy(err) || time.Since(start) > BusyTimeout {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(time.Duration(min(attempt, 10)) * 10 * time.Millisecond):
		}
	}
}

// busy reports whether err is SQLite's SQLITE_BUSY (any extended code).
func busy(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_BUSY
}

// migrateOnce is one attempt of migrate.
func (d *DB) migrateOnce(ctx context.Context, target int) error {
	for {
		done := false
		err := d.tx(ctx, func(tx *sql.Tx) error {
			var v int
			if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
				return err
			}
			if v > len(migrations) {
				return fmt.Errorf("%w (version %d, know %d)", ErrTooNew, v, len(migrations))
			}
			if v >= target {
				done = true
				return nil
			}
			m := migrations[v]
			if _, err := tx.ExecContext(ctx, m.sql); err != nil {
				return fmt.Errorf("migration %d (%s): %w", v+1, m.name, err)
			}
			_, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", v+1))
			return err
		})
		if err != nil {
			return fmt.Errorf("store: migrate %s: %w", d.path, err)
		}
		if done {
			return nil
		}
	}
}
