package postgres

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/norma-run/norma/audit"
	"github.com/norma-run/norma/store"
)

// Notification channels. A payload is "TENANT ID": the tenant first, so
// that a listener keeps its own tenant's.
const (
	approvalsChannel = "norma_approvals"
	auditChannel     = "norma_audit"
)

// lockHead locks the tenant's chain (its head row, created on first use)
// until the end of tx and returns the head, in one round trip: the upsert
// either inserts the empty head or row-locks the existing one, unchanged.
func (d *DB) lockHead(ctx context.Context, tx pgx.Tx) (audit.Head, error) {
	var h audit.Head
	var hash []byte
	if err := tx.QueryRow(ctx, `INSERT INTO audit_heads (tenant, seq, hash) VALUES ($1, 0, $2)
		ON CONFLICT (tenant) DO UPDATE SET tenant = excluded.tenant RETURNING seq, hash`, d.tenant, h.Hash[:]).Scan(&h.Seq, &hash); err != nil {
		return h, err
	}
	if len(hash) != audit.HashSize {
		return h, fmt.Errorf("store: audit head %d has a %d-byte hash", h.Seq, len(hash))
	}
	h.Hash = store.ChainHash(hash)
	return h, nil
}

// AppendAudit implements [audit.Backend]: the tenant's head row is locked
// for the transaction, so appends from every process chain in one order.
func (d *DB) AppendAudit(ctx context.Context, link func(audit.Head) ([]audit.Row, error)) error {
	return d.tx(ctx, func(tx pgx.Tx) error {
		h, err := d.lockHead(ctx, tx)
		if err != nil {
			return err
		}
		rows, err := link(h)
		if err != nil || len(rows) == 0 {
			return err
		}
		for i, r := range rows {
			if r.Seq != h.Seq+int64(i)+1 {
				return fmt.Errorf("store: audit row %d does not follow head %d", r.Seq, h.Seq+int64(i))
			}
		}
		// The rows (as arrays), the new head and the announcement go in
		// one round trip.
		n := len(rows)
		seq, times := make([]int64, n), make([]int64, n)
		typ, run, plugin, tool, decision := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		body, hash := make([][]byte, n), make([][]byte, n)
		for i, r := range rows {
			seq[i], times[i], typ[i], run[i], plugin[i], tool[i], decision[i], body[i] = r.Seq, r.TimeNS, r.Type, r.RunID, r.Plugin, r.Tool, r.Decision, r.Body
			hash[i] = r.Hash[:]
		}
		last := rows[n-1]
		var b pgx.Batch
		b.Queue(`INSERT INTO audit_events (tenant, seq, time_ns, type, run_id, plugin, tool, decision, body, hash)
			SELECT $1, * FROM unnest($2::bigint[], $3::bigint[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::bytea[], $10::bytea[])`,
			d.tenant, seq, times, typ, run, plugin, tool, decision, body, hash)
		b.Queue("UPDATE audit_heads SET seq = $2, hash = $3 WHERE tenant = $1", d.tenant, last.Seq, last.Hash[:])
		b.Queue("SELECT pg_notify($1, $2)", auditChannel, d.tenant+" "+strconv.FormatInt(last.Seq, 10))
		return tx.SendBatch(ctx, &b).Close()
	})
}

// AddAuditCheckpoint implements [audit.Backend] under the same lock as
// AppendAudit. sign reads the log through the pool: with the head locked
// no append commits meanwhile, so it reads the events up to the head.
func (d *DB) AddAuditCheckpoint(ctx context.Context, origin string, sign func(audit.Head, *audit.StoredCheckpoint) (*audit.StoredCheckpoint, error)) error {
	return d.tx(ctx, func(tx pgx.Tx) error {
		h, err := d.lockHead(ctx, tx)
		if err != nil {
			return err
		}
		var latest *audit.StoredCheckpoint
		l := audit.StoredCheckpoint{Origin: origin}
		err = tx.QueryRow(ctx, "SELECT size, time_ns, note FROM audit_checkpoints WHERE tenant = $1 AND origin = $2 ORDER BY size DESC LIMIT 1",
			d.tenant, origin).Scan(&l.Size, &l.TimeNS, &l.Note)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
		case err != nil:
			return err
		default:
			latest = &l
		}
		c, err := sign(h, latest)
		if err != nil || c == nil {
			return err
		}
		_, err = tx.Exec(ctx, "INSERT INTO audit_checkpoints (tenant, origin, size, time_ns, note) VALUES ($1, $2, $3, $4, $5)",
			d.tenant, origin, c.Size, c.TimeNS, c.Note)
		return err
	})
}

// AuditCheckpoints implements [audit.Backend].
func (d *DB) AuditCheckpoints(ctx context.Context) ([]audit.StoredCheckpoint, error) {
	rows, err := d.pool.Query(ctx, "SELECT origin, size, time_ns, note FROM audit_checkpoints WHERE tenant = $1 ORDER BY size, origin", d.tenant)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (audit.StoredCheckpoint, error) {
		var c audit.StoredCheckpoint
		err := r.Scan(&c.Origin, &c.Size, &c.TimeNS, &c.Note)
		return c, err
	})
}

// ScanAudit implements [audit.Backend].
func (d *DB) ScanAudit(ctx context.Context, afterSeq, lastSeq int64, fn func(audit.Row) error) error {
	if lastSeq <= 0 {
		lastSeq = math.MaxInt64
	}
	rows, err := d.pool.Query(ctx, "SELECT seq, body, hash FROM audit_events WHERE tenant = $1 AND seq > $2 AND seq <= $3 ORDER BY seq",
		d.tenant, afterSeq, lastSeq)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var r audit.Row
		raw := rows.RawValues()
		if err := rows.Scan(&r.Seq, nil, nil); err != nil {
			return err
		}
		r.Body = raw[1] // valid until the next row, as the interface allows
		r.Hash = store.ChainHash(raw[2])
		if err := fn(r); err != nil {
			return err
		}
	}
	return rows.Err()
}

// QueryAudit implements [audit.Backend].
func (d *DB) QueryAudit(ctx context.Context, f audit.Filter) ([]audit.Row, error) {
	clause, args := store.AuditSelect(f).SQL([]string{"tenant = $1"}, []any{d.tenant}, placeholder)
	q := "SELECT seq, time_ns, type, run_id, plugin, tool, decision, body, hash FROM audit_events" + clause
	rows, err := d.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (audit.Row, error) {
		var a audit.Row
		var hash []byte
		err := r.Scan(&a.Seq, &a.TimeNS, &a.Type, &a.RunID, &a.Plugin, &a.Tool, &a.Decision, &a.Body, &hash)
		a.Hash = store.ChainHash(hash)
		return a, err
	})
	if err != nil {
		return nil, err
	}
	if f.Newest {
		for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
			out[i], out[j] = out[j], out[i]
		}
	}
	return out, nil
}
