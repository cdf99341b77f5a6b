package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/norma-run/norma/approval"
	"github.com/norma-run/norma/store"
)

const executionCols = "run_id, tool_use_id, principals, tool, started_ns, finished_ns, is_error, reason, result_digest"

func scanExecution(s pgx.Row) (approval.Execution, error) {
	var e approval.Execution
	var started, finished int64
	err := s.Scan(&e.RunID, &e.ToolUseID, &e.Principals, &e.Tool, &started, &finished, &e.IsError, &e.Reason, &e.ResultDigest)
	e.Started, e.Finished = store.NSTime(started), store.NSTime(finished)
	return e, err
}

// BeginExecution implements [approval.Ledger]. The insert is ON CONFLICT
// DO NOTHING on the (tenant, run, tool_use) key, so of any number of
// processes claiming the same tool_use exactly one inserts (fresh true);
// the others read the row it inserted.
func (d *DB) BeginExecution(ctx context.Context, e approval.Execution) (approval.Execution, bool, error) {
	if e.RunID == "" || e.ToolUseID == "" || e.Tool == "" {
		return approval.Execution{}, false, errors.New("store: an execution needs a run id, a tool_use id and a tool")
	}
	var prior approval.Execution
	fresh := false
	err := d.tx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `INSERT INTO tool_executions (tenant, run_id, tool_use_id, principals, tool, started_ns)
			VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (tenant, run_id, tool_use_id) DO NOTHING`,
			d.tenant, e.RunID, e.ToolUseID, e.Principals, e.Tool, store.TimeNS(e.Started))
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 1 {
			fresh = true
			return nil
		}
		prior, err = scanExecution(tx.QueryRow(ctx, "SELECT "+executionCols+" FROM tool_executions WHERE tenant = $1 AND run_id = $2 AND tool_use_id = $3",
			d.tenant, e.RunID, e.ToolUseID))
		return err
	})
	if err != nil {
		return approval.Execution{}, false, fmt.Errorf("store: begin execution: %w", err)
	}
	return prior, fresh, nil
}

// FinishExecution implements [approval.Ledger]. Only a started, unfinished
// execution can be finished, once.
func (d *DB) FinishExecution(ctx context.Context, e approval.Execution) error {
	tag, err := d.pool.Exec(ctx, `UPDATE tool_executions SET finished_ns = $4, is_error = $5, reason = $6, result_digest = $7
		WHERE tenant = $1 AND run_id = $2 AND tool_use_id = $3 AND finished_ns = 0`,
		d.tenant, e.RunID, e.ToolUseID, store.TimeNS(e.Finished), e.IsError, e.Reason, e.ResultDigest)
	if err != nil {
		return fmt.Errorf("store: finish execution: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("store: finish execution %s/%s: %w (or already finished)", e.RunID, e.ToolUseID, approval.ErrNotFound)
	}
	return nil
}

// Executions returns the recorded executions of run runID, oldest first.
func (d *DB) Executions(ctx context.Context, runID string) ([]approval.Execution, error) {
	rows, err := d.pool.Query(ctx, "SELECT "+executionCols+" FROM tool_executions WHERE tenant = $1 AND run_id = $2 ORDER BY started_ns, tool_use_id",
		d.tenant, runID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (approval.Execution, error) { return scanExecution(r) })
}
