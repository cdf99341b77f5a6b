package approval

import (
	"context"
	"time"
)

// Execution is the ledger's record of one tool_use of a run: the gate
// writes it as started before the tool's handler is called and as finished
// after, with the outcome. It never holds the call's input or output, only
// the output's digest.
type Execution struct {
	RunID     string `json:"runId"`
	ToolUseID string `json:"toolUseId"`
	// Principals is the principal chain that made the call, joined with
	// ">".
	Principals string    `json:"principals,omitempty"`
	Tool       string    `json:"tool"`
	Started    time.Time `json:"started"`
	// Finished is zero while the call runs, and after a crash that
	// interrupted it.
	Finished time.Time `json:"finished,omitzero"`
	IsError  bool      `json:"isError,omitempty"`
	// Reason is the result's reason code (ALLOWED for a success).
	Reason string `json:"reason,omitempty"`
	// ResultDigest is "sha256:" + hex of what the model was given.
	ResultDigest string `json:"resultDigest,omitempty"`
}

// Ledger records the executions of tool_use blocks so that each one runs
// at most once across resumes, crashes and concurrent processes: the
// key (run id, tool_use id) is claimed in one transaction before the
// handler is called, and a claim that finds the key taken runs nothing.
// Package store implements it on SQLite (shared by every process on the
// state directory), [NewMemoryLedger] in memory.
type Ledger interface {
	// BeginExecution records e as started unless an execution with its
	// run id and tool_use id is recorded already: then it records nothing
	// and returns that one with fresh false. The claim is atomic across
	// processes.
	BeginExecution(ctx context.Context, e Execution) (prior Execution, fresh bool, err error)
	// FinishExecution records the outcome of a started execution.
	FinishExecution(ctx context.Context, e Execution) error
}
