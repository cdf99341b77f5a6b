package agent_test

import (
	"path/filepath"
	"testing"

	"github.com/norma-run/norma/agent"
	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/gate/gatetest"
	"github.com/norma-run/norma/store"
)

// TestRunLock: while a session holds run r1 (WithRunLock on the SQLite
// store), a second session of r1 — a resume — fails with RUN_LOCKED
// before it reads the state; once the first is closed the resume opens.
func TestRunLock(t *testing.T) {
	dir := t.TempDir()
	db, err := store.Open(t.Context(), filepath.Join(dir, store.FileName))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ts := newTools(t)
	opts := func(run agent.Option) []agent.Option {
		p := script(t, "turns:\n  - text: hi\n")
		return []agent.Option{agent.WithProvider(p, "m"), agent.WithTools(ts.all...), agent.WithAudit(&gatetest.MemorySink{}),
			agent.WithStateDir(dir), agent.WithRunLock(db), agent.WithLedger(db), run}
	}
	s1, err := agent.NewSession(t.Context(), opts(agent.WithRunID("r1"))...)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s1.Run(t.Context(), "go"); err != nil {
		t.Fatal(err)
	}
	if _, err := agent.NewSession(t.Context(), opts(agent.WithResume("r1"))...); capability.ReasonOf(err) != capability.ReasonRunLocked {
		t.Fatalf("resume while held = %v, want RUN_LOCKED", err)
	}
	if err := s1.Close(); err != nil {
		t.Fatal(err)
	}
	s2, err := agent.NewSession(t.Context(), opts(agent.WithResume("r1"))...)
	if err != nil {
		t.Fatalf("resume after Close: %v", err)
	}
	s2.Close()
	// A failed open gives the lock back: a resume of a run with no state
	// fails, and leaves the run free.
	if _, err := agent.NewSession(t.Context(), opts(agent.WithResume("r2"))...); err == nil {
		t.Fatal("resume of a run without state succeeded")
	}
	u, err := db.LockRun(t.Context(), "r2")
	if err != nil {
		t.Fatalf("the failed resume kept the lock: %v", err)
	}
	u()
}
