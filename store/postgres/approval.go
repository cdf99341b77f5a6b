package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/norma-run/norma/approval"
	"github.com/norma-run/norma/store"
)

// notifyApproval announces, in tx, that approval id changed.
func (d *DB) notifyApproval(ctx context.Context, tx pgx.Tx, id string) error {
	_, err := tx.Exec(ctx, "SELECT pg_notify($1, $2)", approvalsChannel, d.tenant+" "+id)
	return err
}

// CreateApproval implements [approval.Backend].
func (d *DB) CreateApproval(ctx context.Context, r approval.Record) error {
	req, err := json.Marshal(r.Request)
	if err != nil {
		return err
	}
	return d.tx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO approvals
			(tenant, id, run_id, action_hash, created_ns, expires_ns, request, state, decided_by, decided_ns, why, uses)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
			d.tenant, r.ID, r.RunID, r.ActionHash, store.TimeNS(r.Created), store.TimeNS(r.Expires), req,
			string(r.State), r.DecidedBy, store.TimeNS(r.Decided), r.Why, r.Uses); err != nil {
			return fmt.Errorf("store: create approval %s: %w", r.ID, err)
		}
		return d.notifyApproval(ctx, tx, r.ID)
	})
}

const approvalCols = "request, state, decided_by, decided_ns, why, uses"

func scanApproval(s pgx.Row) (approval.Record, error) {
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
	r.Decided = store.NSTime(decided)
	return r, nil
}

type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

func (d *DB) getApproval(ctx context.Context, q querier, id, suffix string) (approval.Record, error) {
	r, err := scanApproval(q.QueryRow(ctx, "SELECT "+approvalCols+" FROM approvals WHERE tenant = $1 AND id = $2"+suffix, d.tenant, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return r, fmt.Errorf("%w: %q", approval.ErrNotFound, id)
	}
	return r, err
}

// GetApproval implements [approval.Backend].
func (d *DB) GetApproval(ctx context.Context, id string) (approval.Record, error) {
	return d.getApproval(ctx, d.pool, id, "")
}

// ListApprovals implements [approval.Backend].
func (d *DB) ListApprovals(ctx context.Context, f approval.ListFilter) ([]approval.Record, error) {
	clause, args := store.ApprovalSelect(f).SQL([]string{"tenant = $1"}, []any{d.tenant}, placeholder)
	rows, err := d.pool.Query(ctx, "SELECT "+approvalCols+" FROM approvals"+clause, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (approval.Record, error) { return scanApproval(r) })
}

// UpdateApproval implements [approval.Backend]. The row is read FOR
// UPDATE, so the read-check-write in fn excludes every other writer of
// it, in this process and in others; the change is announced in the same
// transaction.
func (d *DB) UpdateApproval(ctx context.Context, id string, fn func(*approval.Record) (*approval.Use, error)) (approval.Record, error) {
	var out approval.Record
	err := d.tx(ctx, func(tx pgx.Tx) error {
		r, err := d.getApproval(ctx, tx, id, " FOR UPDATE")
		if err != nil {
			return err
		}
		u, err := fn(&r)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE approvals SET state = $3, decided_by = $4, decided_ns = $5, why = $6, uses = $7
			WHERE tenant = $1 AND id = $2`, d.tenant, id, string(r.State), r.DecidedBy, store.TimeNS(r.Decided), r.Why, r.Uses); err != nil {
			return err
		}
		if u != nil {
			if _, err := tx.Exec(ctx, `INSERT INTO approval_uses
				(tenant, idempotency_key, approval_id, n, run_id, action_hash, consumed_ns) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
				d.tenant, u.IdempotencyKey, u.ApprovalID, u.N, u.RunID, u.ActionHash, store.TimeNS(u.Consumed)); err != nil {
				return err
			}
		}
		out = r
		return d.notifyApproval(ctx, tx, id)
	})
	return out, err
}

// FinishUse implements [approval.Backend].
func (d *DB) FinishUse(ctx context.Context, key string, at time.Time) error {
	return d.tx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE approval_uses SET finished_ns = $3 WHERE tenant = $1 AND idempotency_key = $2 AND finished_ns = 0`,
			d.tenant, key, store.TimeNS(at))
		if err != nil || tag.RowsAffected() > 0 {
			return err
		}
		var one int
		err = tx.QueryRow(ctx, "SELECT 1 FROM approval_uses WHERE tenant = $1 AND idempotency_key = $2", d.tenant, key).Scan(&one)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("%w: use %q", approval.ErrNotFound, key)
		}
		return err
	})
}

// UnfinishedUses implements [approval.Backend].
func (d *DB) UnfinishedUses(ctx context.Context, runID string) ([]approval.Use, error) {
	rows, err := d.pool.Query(ctx, `SELECT idempotency_key, approval_id, n, run_id, action_hash, consumed_ns
		FROM approval_uses WHERE tenant = $1 AND run_id = $2 AND finished_ns = 0 ORDER BY consumed_ns, idempotency_key`, d.tenant, runID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (approval.Use, error) {
		var u approval.Use
		var consumed int64
		err := r.Scan(&u.IdempotencyKey, &u.ApprovalID, &u.N, &u.RunID, &u.ActionHash, &consumed)
		u.Consumed = store.NSTime(consumed)
		return u, err
	})
}
