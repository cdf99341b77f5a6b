package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/norma-run/norma/approval"
)

var _ approval.Ledger = (*DB)(nil)

// BeginExecution implements [approval.Ledger]. The insert and the read of
// an existing row happen in one IMMEDIATE transaction, so of any number of
// processes claiming the same tool_use exactly one gets fresh true.
func (d *DB) BeginExecution(ctx context.Context, e approval.Execution) (approval.Execution, bool, error) {
	if e.RunID == "" || e.ToolUseID == "" || e.Tool == "" {
		return approval.Execution{}, false, errors.New("store: an execution needs a run id, a tool_use id and a tool")
	}
	var prior approval.Execution
	fresh := false
	err := d.tx(ctx, func(tx *sql.Tx) error {
		p, err := getExecution(ctx, tx, e.RunID, e.ToolUseID)
		if err == nil {
			prior = p
			return nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO tool_executions (run_id, tool_use_id, principals, tool, started_ns)
			VALUES (?,?,?,?,?)`, e.RunID, e.ToolUseID, e.Principals, e.Tool, TimeNS(e.Started))
		fresh = err == nil
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
	return d.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE tool_executions SET finished_ns = ?, is_error = ?, reason = ?, result_digest = ?
			WHERE run_id = ? AND tool_use_id = ? AND finished_ns = 0`,
			TimeNS(e.Finished), e.IsError, e.Reason, e.ResultDigest, e.RunID, e.ToolUseID)
		if err != nil {
			return fmt.Errorf("store: finish execution: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("store: finish execution %s/%s: %w (or already finished)", e.RunID, e.ToolUseID, approval.ErrNotFound)
		}
		return nil
	})
}

// Executions returns the recorded executions of run runID, oldest first.
func (d *DB) Executions(ctx context.Context, runID string) ([]approval.Execution, error) {
	rows, err := d.db.QueryContext(ctx, "SELECT "+executionCols+" FROM tool_executions WHERE run_id = ? ORDER BY started_ns, tool_use_id", runID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []approval.Execution
	for rows.Next() {
		e, err := scanExecution(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

const executionCols = "run_id, tool_use_id, principals, tool, started_ns, finished_ns, is_error, reason, result_digest"

func scanExecution(s scanner) (approval.Execution, error) {
	var e approval.Execution
	var started, finished int64
	err := s.Scan(&e.RunID, &e.ToolUseID, &e.Principals, &e.Tool, &started, &finished, &e.IsError, &e.Reason, &e.ResultDigest)
	e.Started, e.Finished = NSTime(started), NSTime(finished)
	return e, err
}

func getExecution(ctx context.Context, tx *sql.Tx, runID, toolUseID string) (approval.Execution, error) {
	return scanExecution(tx.QueryRowContext(ctx, "SELECT "+executionCols+" FROM tool_executions WHERE run_id = ? AND tool_use_id = ?", runID, toolUseID))
}
