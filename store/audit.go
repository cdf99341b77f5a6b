package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"

	"github.com/norma-run/norma/audit"
)

// AppendAudit implements [audit.Backend]. The head is read inside the
// write-locked transaction, so appends from several processes chain.
func (d *DB) AppendAudit(ctx context.Context, link func(audit.Head) ([]audit.Row, error)) error {
	return d.tx(ctx, func(tx *sql.Tx) error {
		h, err := auditHead(ctx, tx)
		if err != nil {
			return err
		}
		rows, err := link(h)
		if err != nil {
			return err
		}
		stmt, err := tx.PrepareContext(ctx, `INSERT INTO audit_events
			(seq, time_ns, type, run_id, plugin, tool, decision, body, hash) VALUES (?,?,?,?,?,?,?,?,?)`)
		if err != nil {
			return err
		}
		defer stmt.Close()
		for _, r := range rows {
			if _, err := stmt.ExecContext(ctx, r.Seq, r.TimeNS, r.Type, r.RunID, r.Plugin, r.Tool, r.Decision, r.Body, r.Hash[:]); err != nil {
				return err
			}
		}
		return nil
	})
}

// AddAuditCheckpoint implements [audit.Backend]: the head and the
// largest stored checkpoint are read inside the write-locked transaction.
// sign reads the log through the pool: in WAL mode those reads see what
// the transaction sees, since it has written nothing yet.
func (d *DB) AddAuditCheckpoint(ctx context.Context, origin string, sign func(audit.Head, *audit.StoredCheckpoint) (*audit.StoredCheckpoint, error)) error {
	return d.tx(ctx, func(tx *sql.Tx) error {
		h, err := auditHead(ctx, tx)
		if err != nil {
			return err
		}
		var latest *audit.StoredCheckpoint
		l := audit.StoredCheckpoint{Origin: origin}
		err = tx.QueryRowContext(ctx, "SELECT size, time_ns, note FROM audit_checkpoints WHERE origin = ? ORDER BY size DESC LIMIT 1", origin).Scan(&l.Size, &l.TimeNS, &l.Note)
		switch {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return err
		default:
			latest = &l
		}
		c, err := sign(h, latest)
		if err != nil || c == nil {
			return err
		}
		_, err = tx.ExecContext(ctx, "INSERT INTO audit_checkpoints (origin, size, time_ns, note) VALUES (?,?,?,?)", origin, c.Size, c.TimeNS, c.Note)
		return err
	})
}

// AuditCheckpoints implements [audit.Backend].
func (d *DB) AuditCheckpoints(ctx context.Context) ([]audit.StoredCheckpoint, error) {
	rows, err := d.db.QueryContext(ctx, "SELECT origin, size, time_ns, note FROM audit_checkpoints ORDER BY size, origin")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []audit.StoredCheckpoint
	for rows.Next() {
		var c audit.StoredCheckpoint
		if err := rows.Scan(&c.Origin, &c.Size, &c.TimeNS, &c.Note); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// auditHead reads the newest link inside tx.
func auditHead(ctx context.Context, tx *sql.Tx) (audit.Head, error) {
	var h audit.Head
	var hash []byte
	err := tx.QueryRowContext(ctx, "SELECT seq, hash FROM audit_events ORDER BY seq DESC LIMIT 1").Scan(&h.Seq, &hash)
	switch {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return h, err
	case len(hash) != audit.HashSize:
		return h, fmt.Errorf("store: audit head %d has a %d-byte hash", h.Seq, len(hash))
	default:
		h.Hash = ChainHash(hash)
	}
	return h, nil
}

// ScanAudit implements [audit.Backend].
func (d *DB) ScanAudit(ctx context.Context, afterSeq, lastSeq int64, fn func(audit.Row) error) error {
	if lastSeq <= 0 {
		lastSeq = math.MaxInt64
	}
	rows, err := d.db.QueryContext(ctx, "SELECT seq, body, hash FROM audit_events WHERE seq > ? AND seq <= ? ORDER BY seq", afterSeq, lastSeq)
	if err != nil {
		return err
	}
	defer rows.Close()
	var body, hash sql.RawBytes
	for rows.Next() {
		var r audit.Row
		if err := rows.Scan(&r.Seq, &body, &hash); err != nil {
			return err
		}
		r.Body = body
		r.Hash = ChainHash(hash)
		if err := fn(r); err != nil {
			return err
		}
	}
	return rows.Err()
}

// QueryAudit implements [audit.Backend].
func (d *DB) QueryAudit(ctx context.Context, f audit.Filter) ([]audit.Row, error) {
	clause, args := AuditSelect(f).SQL(nil, nil, sqlitePlaceholder)
	q := "SELECT seq, time_ns, type, run_id, plugin, tool, decision, body, hash FROM audit_events" + clause
	rows, err := d.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []audit.Row
	for rows.Next() {
		var r audit.Row
		var hash []byte
		if err := rows.Scan(&r.Seq, &r.TimeNS, &r.Type, &r.RunID, &r.Plugin, &r.Tool, &r.Decision, &r.Body, &hash); err != nil {
			return nil, err
		}
		r.Hash = ChainHash(hash)
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if f.Newest {
		for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
			out[i], out[j] = out[j], out[i]
		}
	}
	return out, nil
}
