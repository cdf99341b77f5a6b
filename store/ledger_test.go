package store_test

import (
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/norma-run/norma/approval"
	"github.com/norma-run/norma/store"
)

// TestLedgerClaimsOnce: of many handles on one database (as many processes
// would open it) claiming the same tool_use at once, exactly one gets to
// run it; later claims see it started, then finished with its outcome.
func TestLedgerClaimsOnce(t *testing.T) {
	db, p := openDB(t)
	e := approval.Execution{RunID: "run-1", ToolUseID: "toolu_1", Principals: "user>agent", Tool: "Bash", Started: time.Now()}
	var wg sync.WaitGroup
	var mu sync.Mutex
	fresh := 0
	for range 8 {
		wg.Go(func() {
			d, err := store.Open(t.Context(), p)
			if err != nil {
				t.Error(err)
				return
			}
			defer d.Close()
			_, ok, err := d.BeginExecution(t.Context(), e)
			if err != nil {
				t.Error(err)
			}
			if ok {
				mu.Lock()
				fresh++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if fresh != 1 {
		t.Fatalf("%d claims ran the call, want 1", fresh)
	}
	prior, ok, err := db.BeginExecution(t.Context(), e)
	if err != nil || ok || prior.ToolUseID != e.ToolUseID || !prior.Finished.IsZero() {
		t.Errorf("claim of a started call = %+v, %v, %v; want it unfinished", prior, ok, err)
	}
	done := e
	done.Finished, done.Reason, done.ResultDigest = time.Now(), "ALLOWED", "sha256:ab"
	if err := db.FinishExecution(t.Context(), done); err != nil {
		t.Fatal(err)
	}
	if err := db.FinishExecution(t.Context(), done); err == nil {
		t.Error("a finished execution was finished again")
	}
	prior, ok, err = db.BeginExecution(t.Context(), e)
	if err != nil || ok || prior.Finished.IsZero() || prior.Reason != "ALLOWED" || prior.ResultDigest != "sha256:ab" {
		t.Errorf("claim of a finished call = %+v, %v, %v", prior, ok, err)
	}
	// Another run, or another tool_use, is another execution.
	for _, o := range []approval.Execution{{RunID: "run-2", ToolUseID: "toolu_1", Tool: "Bash"}, {RunID: "run-1", ToolUseID: "toolu_2", Tool: "Bash"}} {
		if _, ok, err := db.BeginExecution(t.Context(), o); err != nil || !ok {
			t.Errorf("BeginExecution(%s/%s) = %v, %v; want fresh", o.RunID, o.ToolUseID, ok, err)
		}
	}
	all, err := db.Executions(t.Context(), "run-1")
	if err != nil || len(all) != 2 {
		t.Errorf("Executions = %+v, %v", all, err)
	}
}

// BenchmarkLedger measures what the ledger adds to one tool call: a claim
// and a finish, two durable transactions.
func BenchmarkLedger(b *testing.B) {
	p := b.TempDir() + "/" + store.FileName
	db, err := store.Open(b.Context(), p)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	for i := 0; b.Loop(); i++ {
		e := approval.Execution{RunID: "run-b", ToolUseID: "toolu_" + strconv.Itoa(i), Tool: "Read", Started: time.Now()}
		if _, ok, err := db.BeginExecution(b.Context(), e); err != nil || !ok {
			b.Fatal(ok, err)
		}
		e.Finished, e.Reason = time.Now(), "ALLOWED"
		if err := db.FinishExecution(b.Context(), e); err != nil {
			b.Fatal(err)
		}
	}
}
