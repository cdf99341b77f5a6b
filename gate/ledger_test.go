package gate_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/norma-run/norma/approval"
	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/gate"
	"github.com/norma-run/norma/gate/gatetest"
)

type failingLedger struct{}

func (failingLedger) BeginExecution(context.Context, approval.Execution) (approval.Execution, bool, error) {
	return approval.Execution{}, false, errTest
}

func (failingLedger) FinishExecution(context.Context, approval.Execution) error { return errTest }

// TestLedgerRunsOnce: with a ledger, a tool_use runs at most once. The
// same call again (a resume, another process) is answered
// TOOL_ALREADY_RAN; a call the ledger saw start and never end is answered
// TOOL_INTERRUPTED; a ledger that fails refuses the call. In each case the
// handler does not run.
func TestLedgerRunsOnce(t *testing.T) {
	l := approval.NewMemoryLedger()
	f := newFixture(t, func(o *gate.Options, _ *fixture) { o.Ledger = l })
	c := call("Read", `{"path":"docs/a.md"}`)
	wantReason(t, f.g.Execute(t.Context(), c), capability.ReasonAllowed)
	r := f.g.Execute(t.Context(), c)
	wantReason(t, r, capability.ReasonToolAlreadyRan)
	if !strings.Contains(r.Content, "sha256:") || r.Stage != gate.StepAudit {
		t.Errorf("replayed call = %+v", r)
	}
	if n := f.calls.Load(); n != 1 {
		t.Errorf("handler ran %d times, want 1", n)
	}

	started := call("Read", `{"path":"docs/b.md"}`)
	if _, ok, _ := l.BeginExecution(t.Context(), approval.Execution{RunID: started.RunID, ToolUseID: started.ID, Tool: "Read", Started: time.Now()}); !ok {
		t.Fatal("claim")
	}
	wantReason(t, f.g.Execute(t.Context(), started), capability.ReasonToolInterrupted)
	if n := f.calls.Load(); n != 1 {
		t.Errorf("an interrupted call ran again (%d calls)", n)
	}

	down := newFixture(t, func(o *gate.Options, _ *fixture) { o.Ledger = failingLedger{} })
	wantReason(t, down.g.Execute(t.Context(), call("Read", `{"path":"docs/a.md"}`)), capability.ReasonStateUnavailable)
	if down.calls.Load() != 0 {
		t.Error("the handler ran without a ledger record")
	}
}

// TestApprovalBoundToWorkspace: an approval granted for a call in
// workspace A is not used by the same call of the same run in workspace B
// (B asks anew, and nobody answers), and still lets the call run in A.
func TestApprovalBoundToWorkspace(t *testing.T) {
	svc, err := approval.NewService(approval.NewMemoryBackend(), &approval.Options{Sink: &gatetest.MemorySink{}})
	if err != nil {
		t.Fatal(err)
	}
	a, b := t.TempDir(), t.TempDir()
	fa := newFixture(t, func(o *gate.Options, _ *fixture) { o.Approver, o.Workspace = svc, a })
	fb := newFixture(t, func(o *gate.Options, _ *fixture) { o.Approver, o.Workspace = svc, b })
	c := call("Write", `{"path":"src/a.go","text":"hi"}`)
	wantReason(t, fa.g.Execute(t.Context(), c), capability.ReasonApprovalRequired)
	recs, err := svc.List(t.Context(), approval.ListFilter{State: approval.StatePending})
	if err != nil || len(recs) != 1 || recs[0].Workspace != a {
		t.Fatalf("pending = %+v, %v; want one request naming workspace %s", recs, err, a)
	}
	if _, err := svc.Decide(t.Context(), recs[0].ID, true, "user", ""); err != nil {
		t.Fatal(err)
	}
	r := fb.g.Execute(t.Context(), c)
	wantReason(t, r, capability.ReasonApprovalRequired)
	if fb.calls.Load() != 0 || r.ApprovalID != "" {
		t.Errorf("workspace B used the approval of A (%d calls, approval %q)", fb.calls.Load(), r.ApprovalID)
	}
	r = fa.g.Execute(t.Context(), c)
	wantReason(t, r, capability.ReasonAllowed)
	if fa.calls.Load() != 1 || r.ApprovalID != recs[0].ID {
		t.Errorf("workspace A: %d calls, approval %q", fa.calls.Load(), r.ApprovalID)
	}
}
