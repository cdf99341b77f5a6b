package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/norma-run/norma/approval"
)

// CreateApproval implements [approval.Backend].
func (d *DB) CreateApproval(ctx context.Context, r approval.Record) error {
	req, err := json.Marshal(r.Request)
	if err != nil {
		return err
	}
	return d.tx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO approvals
			(id, run_id, action_hash, created_ns, expires_ns, request, state, decided_by, decided_ns, why, uses)
			VALUES (?,?,?,?,?,?,?,?,?,?,?)`,
			r.ID, r.RunID, r.ActionHash, TimeNS(r.Created), TimeNS(r.Expires), req,
			string(r.State), r.DecidedBy, TimeNS(r.Decided), r.Why, r.Uses)
		return err
	})
}

const approvalCols = "request, state, decided_by, decided_ns, why, uses"

type scanner interface{ Scan(...any) error }

func scanApproval(s scanner) (approval.Record, error) {
	var r approval.Record
	var req []byte
	var state string
	var decided int64
	if err := s.Scan(&req, &state, &r.DecidedBy, &decided, &r.Why, &r.Uses); err != nil {
		return r, err
	}
	if err := json.Unmarshal(req, &r.Request); err != nil {
		return r, fmt.Errorf("store: decode approval: %w", err)
	}
	r.State = approval.State(state)
	r.Decided = NSTime(decided)
	return r, nil
}

func getApproval(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, id string) (approval.Record, error) {
	r, err := scanApproval(q.QueryRowContext(ctx, "SELECT "+approvalCols+" FROM approvals WHERE id = ?", id))
	if errors.Is(err, sql.ErrNoRows) {
		return r, fmt.Errorf("%w: %q", approval.ErrNotFound, id)
	}
	return r, err
}

// GetApproval implements [approval.Backend].
func (d *DB) GetApproval(ctx context.Context, id string) (approval.Record, error) {
	return getApproval(ctx, d.db, id)
}

// ListApprovals implements [approval.Backend].
func (d *DB) ListApprovals(ctx context.Context, f approval.ListFilter) ([]approval.Record, error) {
	clause, args := ApprovalSelect(f).SQL(nil, nil, sqlitePlaceholder)
	rows, err := d.db.QueryContext(ctx, "SELECT "+approvalCols+" FROM approvals"+clause, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []approval.Record
	for rows.Next() {
		r, err := scanApproval(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// UpdateApproval implements [approval.Backend]. The transaction is
// IMMEDIATE, so the read-check-write in fn excludes every other writer,
// in this process and in others.
func (d *DB) UpdateApproval(ctx context.Context, id string, fn func(*approval.Record) (*approval.Use, error)) (approval.Record, error) {
	var out approval.Record
	err := d.tx(ctx, func(tx *sql.Tx) error {
		r, err := getApproval(ctx, tx, id)
		if err != nil {
			return err
		}
		u, err := fn(&r)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE approvals SET state = ?, decided_by = ?, decided_ns = ?, why = ?, uses = ? WHERE id = ?`,
			string(r.State), r.DecidedBy, TimeNS(r.Decided), r.Why, r.Uses, id); err != nil {
			return err
		}
		if u != nil {
			if _, err := tx.ExecContext(ctx, `INSERT INTO approval_uses
				(idempotency_key, approval_id, n, run_id, action_hash, consumed_ns) VALUES (?,?,?,?,?,?)`,
				u.IdempotencyKey, u.ApprovalID, u.N, u.RunID, u.ActionHash, TimeNS(u.Consumed)); err != nil {
				return err
			}
		}
		out = r
		return nil
	})
	return out, err
}

// FinishUse implements [approval.Backend].
func (d *DB) FinishUse(ctx context.Context, key string, at time.Time) error {
	return d.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE approval_uses SET finished_ns = ? WHERE idempotency_key = ? AND finished_ns = 0`, TimeNS(at), key)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			var one int
			if err := tx.QueryRowContext(ctx, "SELECT 1 FROM approval_uses WHERE idempotency_key = ?", key).Scan(&one); err != nil {
				if errors.Is(err, sql.ErrNoRows) {
					return fmt.Errorf("%w: use %q", approval.ErrNotFound, key)
				}
				return err
			}
		}
		return nil
	})
}

// UnfinishedUses implements [approval.Backend].
func (d *DB) UnfinishedUses(ctx context.Context, runID string) ([]approval.Use, error) {
	rows, err := d.db.QueryContext(ctx, `SELECT idempotency_key, approval_id, n, run_id, action_hash, consumed_ns
		FROM approval_uses WHERE run_id = ? AND finished_ns = 0 ORDER BY consumed_ns, idempotency_key`, runID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []approval.Use
	for rows.Next() {
		var u approval.Use
		var consumed int64
		if err := rows.Scan(&u.IdempotencyKey, &u.ApprovalID, &u.N, &u.RunID, &u.ActionHash, &consumed); err != nil {
			return nil, err
		}
		u.Consumed = NSTime(consumed)
		out = append(out, u)
	}
	return out, rows.Err()
}
