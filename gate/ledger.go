package gate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"

	"github.com/norma-run/norma/approval"
	"github.com/norma-run/norma/capability"
)

// claim is the ledger check of the call step, the one place a tool_use is
// claimed: the execution (run id, tool_use id) is recorded as started
// before the handler is called, in one transaction that fails when it was
// recorded before. A tool_use claimed before — by an earlier process of
// the run that crashed or was killed, by a resume, by a concurrent
// process — is not run again: TOOL_INTERRUPTED when its end was never
// recorded (it may have had its effect), TOOL_ALREADY_RAN when it was.
// Without a ledger every call may go on.
func (x *exec) claim(ctx context.Context) bool {
	if x.g.ledger == nil {
		return true
	}
	c := &x.c
	prior, fresh, err := x.g.ledger.BeginExecution(x.detached(ctx), approval.Execution{
		RunID: c.RunID, ToolUseID: c.ID, Principals: x.principalChain(), Tool: c.Tool, Started: x.g.now(),
	})
	switch {
	case err != nil:
		x.g.log.Error("gate: ledger refused the call", "tool", c.Tool, "err", err)
		x.fail(capability.ReasonStateUnavailable, "the call was not run: the run's ledger is unavailable")
	case fresh:
		x.claimed = true
		return true
	case prior.Finished.IsZero():
		x.fail(capability.ReasonToolInterrupted, "this call was started before (by an earlier process of this run) and its end was never recorded; "+
			"it may or may not have run, and it is not run again")
	default:
		outcome := "succeeded"
		if prior.IsError {
			outcome = "ended with " + prior.Reason
		}
		x.fail(capability.ReasonToolAlreadyRan, "this call was handled before and "+outcome+"; its result ("+prior.ResultDigest+") is not kept, and it is not run again")
	}
	x.finishTicket(ctx) // the approval's use is over: this call will not run
	return false
}

// record writes the outcome of a claimed execution to the ledger: its
// reason and the digest of what the model is given.
func (x *exec) record(ctx context.Context) {
	if !x.claimed {
		return
	}
	sum := sha256.Sum256([]byte(x.res.Content))
	reason := x.res.Reason
	if !x.res.IsError {
		reason = capability.ReasonAllowed
	}
	err := x.g.ledger.FinishExecution(x.detached(ctx), approval.Execution{
		RunID: x.c.RunID, ToolUseID: x.c.ID, Principals: x.principalChain(), Tool: x.c.Tool,
		Finished: x.g.now(), IsError: x.res.IsError, Reason: string(reason), ResultDigest: "sha256:" + hex.EncodeToString(sum[:]),
	})
	if err != nil {
		// The call stays "started" in the ledger: a later claim answers
		// TOOL_INTERRUPTED, which is true enough and never runs it twice.
		x.g.log.Error("gate: ledger did not record the end of a call", "tool", x.c.Tool, "err", err)
	}
}
