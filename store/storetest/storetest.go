// Package storetest is the one table of cases every [store.Store]
// passes: SQLite (package store's tests) and PostgreSQL (package
// store/postgres's tests) run the same cases, so that `--store` changes
// where the state lives and nothing of how it behaves.
//
// The cases open two stores on one database wherever it matters: two
// processes (or two machines) share a store, and their writes must
// exclude each other across connections, not only within one.
package storetest

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/norma-run/norma/approval"
	"github.com/norma-run/norma/audit"
	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/store"
)

// Backend makes the databases of the suite.
type Backend struct {
	// New returns the location of a fresh, empty database.
	New func(t *testing.T) string
	// Open opens, migrating, the store at a location from New. Each call
	// is a store of its own (its own connections), as another process's.
	Open func(ctx context.Context, location string) (store.Store, error)
	// SetVersion records schema version v in the database at location, as
	// a newer Norma would.
	SetVersion func(t *testing.T, location string, v int)
}

// Run runs every case against b.
func Run(t *testing.T, b Backend) {
	for _, c := range []struct {
		name string
		fn   func(*testing.T, Backend)
	}{
		{"Approvals", testApprovals},
		{"ConcurrentConsume", testConcurrentConsume},
		{"Ledger", testLedger},
		{"RunLocks", testRunLocks},
		{"AuditConcurrent", testAuditConcurrent},
		{"AuditQuery", testAuditQuery},
		{"Checkpoints", testCheckpoints},
		{"MigrateTwice", testMigrateTwice},
		{"TooNew", testTooNew},
		{"Consents", testConsents},
	} {
		t.Run(c.name, func(t *testing.T) { c.fn(t, b) })
	}
}

// open opens location, closed when t ends.
func open(t *testing.T, b Backend, location string) store.Store {
	t.Helper()
	s, err := b.Open(t.Context(), location)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// two opens two stores on one fresh database.
func two(t *testing.T, b Backend) (store.Store, store.Store) {
	t.Helper()
	loc := b.New(t)
	return open(t, b, loc), open(t, b, loc)
}

func record(id, run string, created time.Time) approval.Record {
	return approval.Record{
		Request: approval.Request{ID: id, RunID: run, ActionHash: "sha256:" + id, Tool: "Bash", Effect: "run",
			Target: "rm -rf build", Created: created, Expires: created.Add(time.Hour)},
		State: approval.StatePending,
	}
}

func testApprovals(t *testing.T, b Backend) {
	ctx := t.Context()
	s1, s2 := two(t, b)
	now := time.Now().UTC().Truncate(time.Microsecond)
	for i, id := range []string{"ap-1", "ap-2", "ap-3"} {
		if err := s1.CreateApproval(ctx, record(id, "run-a", now.Add(time.Duration(i)*time.Second))); err != nil {
			t.Fatal(err)
		}
	}
	if err := s2.CreateApproval(ctx, record("ap-1", "run-a", now)); err == nil {
		t.Error("a second approval with an existing id was stored")
	}
	got, err := s2.GetApproval(ctx, "ap-2")
	if err != nil || got.ID != "ap-2" || got.State != approval.StatePending || got.Target != "rm -rf build" || !got.Created.Equal(now.Add(time.Second)) {
		t.Fatalf("GetApproval from the other store = %+v, %v", got, err)
	}
	if _, err := s2.GetApproval(ctx, "nope"); !errors.Is(err, approval.ErrNotFound) {
		t.Errorf("GetApproval(missing) = %v, want ErrNotFound", err)
	}
	list, err := s2.ListApprovals(ctx, approval.ListFilter{State: approval.StatePending, RunID: "run-a"})
	if err != nil || len(list) != 3 || list[0].ID != "ap-3" || list[2].ID != "ap-1" {
		t.Fatalf("ListApprovals = %v, %v; want ap-3, ap-2, ap-1", ids(list), err)
	}
	if l, _ := s2.ListApprovals(ctx, approval.ListFilter{Limit: 1}); len(l) != 1 {
		t.Errorf("Limit 1: %d records", len(l))
	}
	if l, _ := s2.ListApprovals(ctx, approval.ListFilter{ActionHash: "sha256:ap-1"}); len(l) != 1 || l[0].ID != "ap-1" {
		t.Errorf("by action hash: %v", ids(l))
	}
	decided := now.Add(time.Minute)
	r, err := s2.UpdateApproval(ctx, "ap-1", func(r *approval.Record) (*approval.Use, error) {
		r.State, r.DecidedBy, r.Decided, r.Why = approval.StateGranted, "alice", decided, "looks fine"
		return nil, nil
	})
	if err != nil || r.State != approval.StateGranted {
		t.Fatalf("UpdateApproval = %+v, %v", r, err)
	}
	if got, _ := s1.GetApproval(ctx, "ap-1"); got.DecidedBy != "alice" || got.Why != "looks fine" || !got.Decided.Equal(decided) {
		t.Fatalf("decision not seen by the other store: %+v", got)
	}
	refused := errors.New("refused")
	if _, err := s1.UpdateApproval(ctx, "ap-2", func(r *approval.Record) (*approval.Use, error) {
		r.State = approval.StateDenied
		return nil, refused
	}); err != refused {
		t.Errorf("fn's error = %v, want it unchanged", err)
	}
	if got, _ := s2.GetApproval(ctx, "ap-2"); got.State != approval.StatePending {
		t.Errorf("a failed update was stored: %s", got.State)
	}
	if _, err := s1.UpdateApproval(ctx, "nope", func(*approval.Record) (*approval.Use, error) { return nil, nil }); !errors.Is(err, approval.ErrNotFound) {
		t.Errorf("UpdateApproval(missing) = %v", err)
	}
	if err := s1.FinishUse(ctx, "no-such-key", now); !errors.Is(err, approval.ErrNotFound) {
		t.Errorf("FinishUse(missing) = %v", err)
	}
}

func ids(rs []approval.Record) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.ID)
	}
	return out
}

// testConcurrentConsume: 16 goroutines over two stores race to consume
// one single-use grant; exactly one use is stored.
func testConcurrentConsume(t *testing.T, b Backend) {
	ctx := t.Context()
	s1, s2 := two(t, b)
	now := time.Now()
	r := record("ap-once", "run-c", now)
	r.State, r.DecidedBy, r.Decided = approval.StateGranted, "alice", now
	if err := s1.CreateApproval(ctx, r); err != nil {
		t.Fatal(err)
	}
	var wins atomic.Int32
	var wg sync.WaitGroup
	for i := range 16 {
		s := []store.Store{s1, s2}[i%2]
		wg.Go(func() {
			_, err := s.UpdateApproval(ctx, "ap-once", func(r *approval.Record) (*approval.Use, error) {
				if r.State != approval.StateGranted || r.Uses >= 1 {
					return nil, errors.New("already used")
				}
				r.Uses++
				r.State = approval.StateConsumed
				return &approval.Use{ApprovalID: r.ID, N: r.Uses, IdempotencyKey: approval.IdempotencyKey(r.ID, r.ActionHash, r.Uses),
					RunID: r.RunID, ActionHash: r.ActionHash, Consumed: time.Now()}, nil
			})
			if err == nil {
				wins.Add(1)
			}
		})
	}
	wg.Wait()
	if n := wins.Load(); n != 1 {
		t.Fatalf("%d goroutines consumed a single-use grant, want 1", n)
	}
	uses, err := s2.UnfinishedUses(ctx, "run-c")
	if err != nil || len(uses) != 1 || uses[0].N != 1 {
		t.Fatalf("UnfinishedUses = %+v, %v; want the one use", uses, err)
	}
	if err := s2.FinishUse(ctx, uses[0].IdempotencyKey, time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := s1.FinishUse(ctx, uses[0].IdempotencyKey, time.Now()); err != nil {
		t.Errorf("finishing twice: %v, want nil (idempotent)", err)
	}
	if uses, _ := s1.UnfinishedUses(ctx, "run-c"); len(uses) != 0 {
		t.Errorf("a finished use is unfinished: %+v", uses)
	}
	if got, _ := s1.GetApproval(ctx, "ap-once"); got.Uses != 1 || got.State != approval.StateConsumed {
		t.Errorf("record = %s, %d uses", got.State, got.Uses)
	}
}

// testLedger: of 16 claims of one tool_use over two stores exactly one is
// fresh; the others see it; it finishes once.
func testLedger(t *testing.T, b Backend) {
	ctx := t.Context()
	s1, s2 := two(t, b)
	e := approval.Execution{RunID: "run-l", ToolUseID: "toolu_1", Principals: "model", Tool: "Bash", Started: time.Now()}
	var fresh atomic.Int32
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 16 {
		s := []store.Store{s1, s2}[i%2]
		wg.Go(func() {
			prior, ok, err := s.BeginExecution(ctx, e)
			switch {
			case err != nil:
				errs <- err
			case ok:
				fresh.Add(1)
			case prior.Tool != "Bash" || prior.ToolUseID != "toolu_1":
				errs <- fmt.Errorf("prior = %+v", prior)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := fresh.Load(); n != 1 {
		t.Fatalf("%d claims were fresh, want 1", n)
	}
	if _, _, err := s1.BeginExecution(ctx, approval.Execution{RunID: "run-l"}); err == nil {
		t.Error("an execution without a tool_use id was recorded")
	}
	e.Finished, e.Reason, e.ResultDigest = time.Now(), "ALLOWED", "sha256:00"
	if err := s2.FinishExecution(ctx, e); err != nil {
		t.Fatal(err)
	}
	if err := s1.FinishExecution(ctx, e); !errors.Is(err, approval.ErrNotFound) {
		t.Errorf("finishing twice = %v, want ErrNotFound", err)
	}
	prior, ok, err := s1.BeginExecution(ctx, e)
	if err != nil || ok || prior.Finished.IsZero() || prior.Reason != "ALLOWED" || prior.ResultDigest != "sha256:00" {
		t.Errorf("after finish: %+v, fresh %v, %v", prior, ok, err)
	}
}

// testRunLocks: a run locked through one store is refused through the
// other (RUN_LOCKED) until it is unlocked.
func testRunLocks(t *testing.T, b Backend) {
	ctx := t.Context()
	s1, s2 := two(t, b)
	unlock, err := s1.LockRun(ctx, "run-k")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s2.LockRun(ctx, "run-k"); capability.ReasonOf(err) != capability.ReasonRunLocked {
		t.Fatalf("second LockRun = %v, want RUN_LOCKED", err)
	}
	if u, err := s2.LockRun(ctx, "run-other"); err != nil {
		t.Fatalf("another run: %v", err)
	} else {
		u()
	}
	if err := unlock(); err != nil {
		t.Fatal(err)
	}
	u2, err := s2.LockRun(ctx, "run-k")
	if err != nil {
		t.Fatalf("LockRun after unlock: %v", err)
	}
	if err := u2(); err != nil {
		t.Fatal(err)
	}
	if _, err := s1.LockRun(ctx, ""); err == nil {
		t.Error("an empty run id was locked")
	}
}

// testAuditConcurrent: 8 goroutines on each of two stores, each store
// with its own audit.Log (as two processes), append at once; the result
// is one chain holding every event once, which verifies.
func testAuditConcurrent(t *testing.T, b Backend) {
	ctx := t.Context()
	s1, s2 := two(t, b)
	const perG = 25
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for si, s := range []store.Store{s1, s2} {
		l, err := audit.Open(s, nil)
		if err != nil {
			t.Fatal(err)
		}
		for g := range 8 {
			wg.Go(func() {
				for i := range perG {
					e := audit.Event{Type: audit.TypePluginInstalled, Plugin: "p", RunID: fmt.Sprintf("s%d-g%d", si, g),
						Detail: map[string]string{"i": fmt.Sprint(i)}}
					if err := l.Record(ctx, e); err != nil {
						errs <- err
						return
					}
				}
			})
		}
		defer l.Close()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	res, err := audit.VerifyBackend(ctx, s1)
	if err != nil || !res.OK() || res.Events != 2*8*perG {
		t.Fatalf("Verify = %+v, %v; want %d events chained", res, err, 2*8*perG)
	}
	recs, err := audit.QueryBackend(ctx, s2, audit.Filter{Limit: 10000})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for i, r := range recs {
		if r.Seq != int64(i)+1 {
			t.Fatalf("event %d has seq %d", i+1, r.Seq)
		}
		k := r.Event.RunID + "/" + r.Event.Detail["i"]
		if seen[k] {
			t.Fatalf("event %s stored twice", k)
		}
		seen[k] = true
	}
	if len(seen) != 2*8*perG {
		t.Fatalf("%d distinct events, want %d", len(seen), 2*8*perG)
	}
	if got, _ := audit.QueryBackend(ctx, s1, audit.Filter{RunID: "s1-g3", Limit: 100}); len(got) != perG {
		t.Errorf("query by run: %d events, want %d", len(got), perG)
	}
	if got, _ := audit.QueryBackend(ctx, s1, audit.Filter{Limit: 5, Newest: true}); len(got) != 5 || got[4].Seq != res.Events {
		t.Errorf("newest 5: %d events", len(got))
	}
}

// testAuditQuery: every field of an audit.Filter selects the same rows
// on every store (store.AuditSelect is the one reading of a filter).
func testAuditQuery(t *testing.T, b Backend) {
	ctx := t.Context()
	s := open(t, b, b.New(t))
	l, err := audit.Open(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for i, e := range []audit.Event{
		{Type: audit.TypePluginInstalled, Plugin: "p1", RunID: "r1"},
		{Type: audit.TypeCapabilityDecision, Plugin: "p1", Tool: "t1", Decision: "deny", RunID: "r1"},
		{Type: audit.TypeCapabilityDecision, Plugin: "p2", Tool: "t2", Decision: "allow", RunID: "r2"},
		{Type: audit.TypeToolCallStarted, Plugin: "p2", Tool: "t2", RunID: "r2"},
		{Type: audit.TypePluginRemoved, Plugin: "p'; DROP TABLE audit_events; --", RunID: "r3"},
	} {
		e.Detail = map[string]string{"i": fmt.Sprint(i + 1)}
		if err := l.Record(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	var all []int64
	if got, err := audit.QueryBackend(ctx, s, audit.Filter{}); err == nil {
		for _, r := range got {
			all = append(all, r.Seq)
		}
	}
	for _, c := range []struct {
		name string
		f    audit.Filter
		want []string // Detail["i"] of the matches, in order
	}{
		{"plugin", audit.Filter{Plugin: "p1"}, []string{"1", "2"}},
		{"tool", audit.Filter{Tool: "t2"}, []string{"3", "4"}},
		{"decision", audit.Filter{Decision: "deny"}, []string{"2"}},
		{"type", audit.Filter{Type: audit.TypeCapabilityDecision}, []string{"2", "3"}},
		{"run", audit.Filter{RunID: "r2"}, []string{"3", "4"}},
		{"two fields", audit.Filter{Plugin: "p2", Type: audit.TypeToolCallStarted}, []string{"4"}},
		{"quote in a value", audit.Filter{Plugin: "p'; DROP TABLE audit_events; --"}, []string{"5"}},
		{"since", audit.Filter{Since: start.Add(-time.Minute), RunID: "r1"}, []string{"1", "2"}},
		{"since later", audit.Filter{Since: time.Now().Add(time.Hour)}, nil},
		{"limit", audit.Filter{Plugin: "p2", Limit: 1}, []string{"3"}},
		{"newest", audit.Filter{Plugin: "p2", Limit: 1, Newest: true}, []string{"4"}},
	} {
		got, err := audit.QueryBackend(ctx, s, c.f)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var is []string
		for _, r := range got {
			is = append(is, r.Event.Detail["i"])
		}
		if fmt.Sprint(is) != fmt.Sprint(c.want) {
			t.Errorf("%s: got %v, want %v", c.name, is, c.want)
		}
	}
	if len(all) < 5 {
		t.Fatalf("the log holds %v", all)
	}
	if got, _ := audit.QueryBackend(ctx, s, audit.Filter{AfterSeq: all[len(all)-2]}); len(got) != 1 || got[0].Seq != all[len(all)-1] {
		t.Errorf("after seq: %d rows", len(got))
	}
}

type key struct {
	cp   *audit.Checkpointer
	opts *audit.VerifyOptions
}

func newKey(t *testing.T) key {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	origin := audit.KeyOrigin(pub)
	s, err := audit.NewNoteSigner(origin, priv)
	if err != nil {
		t.Fatal(err)
	}
	v, err := audit.NewNoteVerifier(origin, pub)
	if err != nil {
		t.Fatal(err)
	}
	return key{&audit.Checkpointer{Origin: origin, Signer: s, Verifier: v},
		&audit.VerifyOptions{Origin: origin, Verifier: v, RequireCheckpoint: true}}
}

// testCheckpoints: two state directories (two keys) on two stores of one
// database sign their own checkpoints of the shared chain; each verifies
// its own and lists the other's as unchecked.
func testCheckpoints(t *testing.T, b Backend) {
	ctx := t.Context()
	s1, s2 := two(t, b)
	k1, k2 := newKey(t), newKey(t)
	for round := range 2 {
		for i, s := range []store.Store{s1, s2} {
			k := []key{k1, k2}[i]
			l, err := audit.Open(s, &audit.Options{Checkpointer: k.cp})
			if err != nil {
				t.Fatal(err)
			}
			for j := range 3 {
				if err := l.Record(ctx, audit.Event{Type: audit.TypePluginInstalled, Plugin: fmt.Sprintf("p%d-%d-%d", round, i, j)}); err != nil {
					t.Fatal(err)
				}
			}
			if err := l.Close(); err != nil {
				t.Fatalf("round %d store %d: %v", round, i, err)
			}
		}
	}
	cps, err := s1.AuditCheckpoints(ctx)
	if err != nil || len(cps) != 4 {
		t.Fatalf("AuditCheckpoints = %d, %v; want 4", len(cps), err)
	}
	for i, k := range []key{k1, k2} {
		res, err := audit.VerifyWith(ctx, []store.Store{s2, s1}[i], k.opts)
		if err != nil || !res.OK() || res.Events != 12 || res.Checkpoints != 2 || len(res.Unchecked) != 1 || res.Unchecked[0].Checkpoints != 2 {
			t.Errorf("key %d: VerifyWith = %+v, %v", i+1, res, err)
		}
	}
	// k2 signed the head last: nothing new to store. k1 has not yet.
	if _, stored, err := k2.cp.Checkpoint(ctx, s1); err != nil || stored {
		t.Errorf("k2 again at an unchanged head: stored %v, %v; want not stored", stored, err)
	}
	if _, stored, err := k1.cp.Checkpoint(ctx, s2); err != nil || !stored {
		t.Errorf("k1 at the head k2 signed: stored %v, %v; want stored", stored, err)
	}
}

// testMigrateTwice: opening a migrated database again changes nothing;
// two opening a fresh one at once both succeed.
func testMigrateTwice(t *testing.T, b Backend) {
	ctx := t.Context()
	loc := b.New(t)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Go(func() {
			s, err := b.Open(ctx, loc)
			if err != nil {
				errs <- err
				return
			}
			l, _ := audit.Open(s, nil)
			errs <- l.Record(ctx, audit.Event{Type: audit.TypePluginInstalled, Plugin: "p"})
			l.Close()
			s.Close()
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("concurrent first open: %v", err)
		}
	}
	s := open(t, b, loc)
	if res, err := audit.VerifyBackend(ctx, s); err != nil || !res.OK() || res.Events != 4 {
		t.Fatalf("after opening four times: %+v, %v", res, err)
	}
}

// testTooNew: a database from a newer Norma is refused with ErrTooNew.
func testTooNew(t *testing.T, b Backend) {
	loc := b.New(t)
	s := open(t, b, loc)
	s.Close()
	b.SetVersion(t, loc, 999)
	if s, err := b.Open(t.Context(), loc); !errors.Is(err, store.ErrTooNew) {
		if s != nil {
			s.Close()
		}
		t.Fatalf("Open(newer) = %v, want ErrTooNew", err)
	}
}
