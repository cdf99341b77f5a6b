package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/norma-run/norma/store"
)

// migration is one schema step. Versions are 1, 2, 3, … in slice order;
// never edit a released migration, append a new one.
type migration struct {
	name string
	sql  string
}

var migrations = []migration{
	{"norma store", `
CREATE FUNCTION norma_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	RAISE EXCEPTION '% is append-only', TG_TABLE_NAME;
END $$;

CREATE TABLE audit_heads (
	tenant text PRIMARY KEY,
	seq    bigint NOT NULL,
	hash   bytea NOT NULL
);
CREATE TABLE audit_events (
	tenant   text NOT NULL,
	seq      bigint NOT NULL,
	time_ns  bigint NOT NULL,
	type     text NOT NULL,
	run_id   text NOT NULL DEFAULT '',
	plugin   text NOT NULL DEFAULT '',
	tool     text NOT NULL DEFAULT '',
	decision text NOT NULL DEFAULT '',
	body     bytea NOT NULL,
	hash     bytea NOT NULL,
	PRIMARY KEY (tenant, seq)
);
CREATE INDEX audit_events_plugin ON audit_events (tenant, plugin, seq);
CREATE INDEX audit_events_run ON audit_events (tenant, run_id, seq);
CREATE INDEX audit_events_time ON audit_events (tenant, time_ns);
CREATE TRIGGER audit_events_append_only BEFORE UPDATE OR DELETE ON audit_events
	FOR EACH ROW EXECUTE FUNCTION norma_append_only();
CREATE TRIGGER audit_events_no_truncate BEFORE TRUNCATE ON audit_events
	FOR EACH STATEMENT EXECUTE FUNCTION norma_append_only();

CREATE TABLE audit_checkpoints (
	tenant  text NOT NULL,
	origin  text NOT NULL,
	size    bigint NOT NULL,
	time_ns bigint NOT NULL,
	note    bytea NOT NULL,
	PRIMARY KEY (tenant, origin, size)
);
CREATE TRIGGER audit_checkpoints_append_only BEFORE UPDATE OR DELETE ON audit_checkpoints
	FOR EACH ROW EXECUTE FUNCTION norma_append_only();
CREATE TRIGGER audit_checkpoints_no_truncate BEFORE TRUNCATE ON audit_checkpoints
	FOR EACH STATEMENT EXECUTE FUNCTION norma_append_only();

CREATE TABLE approvals (
	tenant      text NOT NULL,
	id          text NOT NULL,
	run_id      text NOT NULL,
	action_hash text NOT NULL,
	created_ns  bigint NOT NULL,
	expires_ns  bigint NOT NULL,
	request     bytea NOT NULL,
	state       text NOT NULL,
	decided_by  text NOT NULL DEFAULT '',
	decided_ns  bigint NOT NULL DEFAULT 0,
	why         text NOT NULL DEFAULT '',
	uses        integer NOT NULL DEFAULT 0,
	PRIMARY KEY (tenant, id)
);
CREATE INDEX approvals_action ON approvals (tenant, run_id, action_hash);
CREATE INDEX approvals_state ON approvals (tenant, state, created_ns);

CREATE TABLE approval_uses (
	tenant          text NOT NULL,
	idempotency_key text NOT NULL,
	approval_id     text NOT NULL,
	n               integer NOT NULL,
	run_id          text NOT NULL,
	action_hash     text NOT NULL,
	consumed_ns     bigint NOT NULL,
	finished_ns     bigint NOT NULL DEFAULT 0,
	PRIMARY KEY (tenant, idempotency_key),
	UNIQUE (tenant, approval_id, n),
	FOREIGN KEY (tenant, approval_id) REFERENCES approvals (tenant, id)
);
CREATE INDEX approval_uses_open ON approval_uses (tenant, run_id, finished_ns);

CREATE TABLE run_locks (
	tenant       text NOT NULL,
	run_id       text NOT NULL,
	nonce        text NOT NULL,
	host         text NOT NULL,
	machine      text NOT NULL,
	pid          integer NOT NULL,
	pid_start    text NOT NULL,
	acquired_ns  bigint NOT NULL,
	heartbeat_ns bigint NOT NULL,
	PRIMARY KEY (tenant, run_id)
);

CREATE TABLE tool_executions (
	tenant        text NOT NULL,
	run_id        text NOT NULL,
	tool_use_id   text NOT NULL,
	principals    text NOT NULL DEFAULT '',
	tool          text NOT NULL,
	started_ns    bigint NOT NULL,
	finished_ns   bigint NOT NULL DEFAULT 0,
	is_error      boolean NOT NULL DEFAULT false,
	reason        text NOT NULL DEFAULT '',
	result_digest text NOT NULL DEFAULT '',
	PRIMARY KEY (tenant, run_id, tool_use_id)
);
`},
}

// migrationLock is the key of the advisory lock that serializes
// migrations across processes (any constant; "norma" in ASCII).
const migrationLock = 0x6e6f726d61

// migrate brings the schema to version target, one transaction per step,
// each under the migration lock: the version is read after the lock is
// taken, so of two processes migrating at once the second finds the step
// applied.
func (d *DB) migrate(ctx context.Context, target int) error {
	for {
		done := false
		err := d.tx(ctx, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", int64(migrationLock)); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS norma_schema_migrations (
				version    integer PRIMARY KEY,
				name       text NOT NULL,
				applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
				return err
			}
			var v int
			if err := tx.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM norma_schema_migrations").Scan(&v); err != nil {
				return err
			}
			if v > len(migrations) {
				return fmt.Errorf("%w (version %d, know %d)", store.ErrTooNew, v, len(migrations))
			}
			if v >= target {
				done = true
				return nil
			}
			m := migrations[v]
			if _, err := tx.Exec(ctx, m.sql); err != nil {
				return fmt.Errorf("migration %d (%s): %w", v+1, m.name, err)
			}
			_, err := tx.Exec(ctx, "INSERT INTO norma_schema_migrations (version, name) VALUES ($1, $2)", v+1, m.name)
			return err
		})
		if err != nil {
			if errors.Is(err, store.ErrTooNew) {
				return err
			}
			return fmt.Errorf("migrate: %w", err)
		}
		if done {
			return nil
		}
	}
}

// Version returns the schema version of the database.
func (d *DB) Version(ctx context.Context) (int, error) {
	var v int
	err := d.pool.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM norma_schema_migrations").Scan(&v)
	return v, err
}
