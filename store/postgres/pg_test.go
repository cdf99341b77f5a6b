package postgres_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/norma-run/norma/approval"
	"github.com/norma-run/norma/audit"
	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/internal/pgtest"
	"github.com/norma-run/norma/store"
	"github.com/norma-run/norma/store/postgres"
)

func openPG(t *testing.T, url string) *postgres.DB {
	t.Helper()
	db, err := postgres.Open(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func withTenant(url, tenant string) string {
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	return url + sep + "tenant=" + tenant
}

func pending(id string) approval.Record {
	now := time.Now()
	return approval.Record{Request: approval.Request{ID: id, RunID: "run-w", ActionHash: "sha256:" + id, Tool: "Bash",
		Created: now, Expires: now.Add(time.Hour)}, State: approval.StatePending}
}

// TestTenants: tenants of one database share nothing: each has its own
// chain (numbered from 1, verifying alone), approvals and run locks.
func TestTenants(t *testing.T) {
	ctx := t.Context()
	url := pgtest.URL(t)
	a, b, def := openPG(t, withTenant(url, "team-a")), openPG(t, withTenant(url, "team-b")), openPG(t, url)
	if a.Tenant() != "team-a" || def.Tenant() != postgres.DefaultTenant {
		t.Fatalf("tenants %q, %q", a.Tenant(), def.Tenant())
	}
	for i, s := range []*postgres.DB{a, b, def} {
		l, _ := audit.Open(s, nil)
		for j := range 3 + i {
			if err := l.Record(ctx, audit.Event{Type: audit.TypePluginInstalled, Plugin: fmt.Sprintf("p%d", j)}); err != nil {
				t.Fatal(err)
			}
		}
		l.Close()
	}
	for i, s := range []*postgres.DB{a, b, def} {
		res, err := audit.VerifyBackend(ctx, s)
		if err != nil || !res.OK() || res.Events != int64(3+i) {
			t.Errorf("tenant %s: %+v, %v; want %d events", s.Tenant(), res, err, 3+i)
		}
	}
	if err := a.CreateApproval(ctx, pending("ap-t")); err != nil {
		t.Fatal(err)
	}
	if _, err := b.GetApproval(ctx, "ap-t"); !errors.Is(err, approval.ErrNotFound) {
		t.Errorf("team-b reads team-a's approval: %v", err)
	}
	if err := b.CreateApproval(ctx, pending("ap-t")); err != nil {
		t.Errorf("the same id in another tenant: %v", err)
	}
	unlock, err := a.LockRun(ctx, "run-1")
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	if u, err := b.LockRun(ctx, "run-1"); err != nil {
		t.Errorf("team-b's run-1 is locked by team-a's: %v", err)
	} else {
		u()
	}
	for _, bad := range []string{"", "a b", "../x", strings.Repeat("x", 64), "-x"} {
		if _, err := postgres.Open(ctx, withTenant(url, bad)); err == nil || !strings.Contains(err.Error(), "tenant") {
			t.Errorf("tenant %q: %v", bad, err)
		}
	}
}

// TestWaiterWakes: a run waiting on a request (approval.Waiter) over one
// connection wakes as soon as another connection decides it, long before
// its poll interval.
func TestWaiterWakes(t *testing.T) {
	ctx := t.Context()
	url := pgtest.URL(t)
	runner, approver := openPG(t, url), openPG(t, url)
	if err := runner.CreateApproval(ctx, pending("ap-w")); err != nil {
		t.Fatal(err)
	}
	const poll = time.Minute
	type result struct {
		v   approval.Verdict
		err error
		at  time.Time
	}
	done := make(chan result, 1)
	go func() {
		v, err := approval.Waiter{Store: runner, Poll: poll, WatchedPoll: poll}.Approve(ctx, pending("ap-w"))
		done <- result{v, err, time.Now()}
	}()
	time.Sleep(300 * time.Millisecond) // the waiter has read "pending" and sleeps
	select {
	case r := <-done:
		t.Fatalf("the waiter returned before the decision: %+v", r)
	default:
	}
	decided := time.Now()
	if _, err := approver.UpdateApproval(ctx, "ap-w", func(r *approval.Record) (*approval.Use, error) {
		r.State, r.DecidedBy, r.Decided, r.Why = approval.StateGranted, "alice", time.Now(), "ok"
		return nil, nil
	}); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-done:
		if r.err != nil || !r.v.Approve || r.v.By != "alice" {
			t.Fatalf("verdict = %+v, %v", r.v, r.err)
		}
		woke := r.at.Sub(decided)
		t.Logf("woke %v after the decision (poll interval %v)", woke, poll)
		if woke > 5*time.Second {
			t.Fatalf("woke %v after the decision; the announcement did not wake it", woke)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the waiter did not wake within 20s of the decision (its poll is 1m)")
	}
}

// TestFollowAudit: a follower is told the new head after appends by
// another store.
func TestFollowAudit(t *testing.T) {
	ctx := t.Context()
	url := pgtest.URL(t)
	writer, follower := openPG(t, url), openPG(t, url)
	heads, err := follower.FollowAudit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	l, _ := audit.Open(writer, nil)
	defer l.Close()
	for i := range 3 {
		if err := l.Record(ctx, audit.Event{Type: audit.TypePluginInstalled, Plugin: fmt.Sprint(i)}); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.After(10 * time.Second)
	for {
		select {
		case h, ok := <-heads:
			if !ok {
				t.Fatal("the follow channel closed")
			}
			if h == 3 {
				recs, err := audit.QueryBackend(ctx, follower, audit.Filter{AfterSeq: 0})
				if err != nil || len(recs) != 3 {
					t.Fatalf("after head 3: %d events, %v", len(recs), err)
				}
				return
			}
		case <-deadline:
			t.Fatal("no announcement of head 3 within 10s")
		}
	}
}

// TestBadURL: a URL that does not connect or does not parse is refused
// with an error that never holds its password.
func TestBadURL(t *testing.T) {
	const pw = "s3cr3t-pa55"
	for _, u := range []string{
		"postgres://norma:" + pw + "@127.0.0.1:1/norma?sslmode=disable&connect_timeout=2",
		"postgres://norma:" + pw + "@127.0.0.1:1/norma?sslmode=bogus",
		"postgres://norma@127.0.0.1:1/norma?sslmode=disable&password=" + pw + "&connect_timeout=2",
		"mysql://norma:" + pw + "@db/x",
	} {
		db, err := postgres.Open(t.Context(), u)
		if err == nil {
			db.Close()
			t.Errorf("%s: opened", store.Redact(u))
			continue
		}
		if strings.Contains(err.Error(), pw) {
			t.Errorf("the error holds the password: %v", err)
		}
	}
}

// TestStaleLock: a lock whose holder on this machine is gone (no such
// pid), or whose holder elsewhere stopped renewing it, is taken over; a
// live holder elsewhere is not.
func TestStaleLock(t *testing.T) {
	ctx := t.Context()
	url := pgtest.URL(t)
	db := openPG(t, url)
	me := store.Self()
	now := time.Now().UnixNano()
	old := time.Now().Add(-store.LockStaleAfter - time.Minute).UnixNano()
	for _, c := range []struct {
		run, machine, pidStart string
		heartbeat              int64
		stale                  bool
	}{
		{"dead-here", me.Machine, "no-such-start", now, true},
		{"live-elsewhere", "other-boot/pid:[1]", "1", now, false},
		{"silent-elsewhere", "other-boot/pid:[1]", "1", old, true},
	} {
		execSQL(t, url, `INSERT INTO run_locks (tenant, run_id, nonce, host, machine, pid, pid_start, acquired_ns, heartbeat_ns)
			VALUES ('default', $1, 'n', 'h', $2, 999999, $3, $4, $4)`, c.run, c.machine, c.pidStart, c.heartbeat)
		unlock, err := db.LockRun(ctx, c.run)
		if c.stale {
			if err != nil {
				t.Errorf("%s: stale lock not taken over: %v", c.run, err)
			} else {
				unlock()
			}
			continue
		}
		if capability.ReasonOf(err) != capability.ReasonRunLocked {
			t.Errorf("%s: LockRun = %v, want RUN_LOCKED", c.run, err)
		}
	}
}

// TestAppendOnly: the database itself refuses to change or delete
// events and checkpoints.
func TestAppendOnly(t *testing.T) {
	ctx := t.Context()
	url := pgtest.URL(t)
	db := openPG(t, url)
	l, _ := audit.Open(db, nil)
	l.Record(ctx, audit.Event{Type: audit.TypePluginInstalled, Plugin: "p"})
	l.Close()
	for _, sql := range []string{
		"UPDATE audit_events SET decision = 'allow'",
		"DELETE FROM audit_events",
		"TRUNCATE audit_events",
	} {
		conn := openRaw(t, url)
		if _, err := conn.Exec(ctx, sql); err == nil || !strings.Contains(err.Error(), "append-only") {
			t.Errorf("%s: %v, want append-only", sql, err)
		}
	}
	if res, err := audit.VerifyBackend(ctx, db); err != nil || !res.OK() || res.Events != 1 {
		t.Fatalf("after the attempts: %+v, %v", res, err)
	}
}

// TestKillServer: the server is killed with SIGKILL (postmaster and every
// backend) while 4 goroutines append; after it comes back every event
// whose Record returned nil is there, once, and the chain verifies.
func TestKillServer(t *testing.T) {
	srv := pgtest.Cluster(t)
	url := srv.Database(t)
	ctx := t.Context()
	db, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	l, _ := audit.Open(db, nil)
	var mu sync.Mutex
	acked := map[string]bool{}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := 0; ; i++ {
				id := fmt.Sprintf("g%d-%d", g, i)
				if err := l.Record(ctx, audit.Event{Type: audit.TypePluginInstalled, Plugin: "p", Detail: map[string]string{"id": id}}); err != nil {
					return // the server is gone
				}
				mu.Lock()
				acked[id] = true
				mu.Unlock()
			}
		})
	}
	time.Sleep(700 * time.Millisecond)
	srv.Kill()
	wg.Wait()
	l.Close()
	db.Close()
	if len(acked) == 0 {
		t.Fatal("nothing was appended before the kill")
	}
	srv.Start()
	db2 := openPG(t, url)
	res, err := audit.VerifyBackend(ctx, db2)
	if err != nil || !res.OK() {
		t.Fatalf("after the crash: %+v, %v", res, err)
	}
	recs, err := audit.QueryBackend(ctx, db2, audit.Filter{Limit: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	stored := map[string]bool{}
	for _, r := range recs {
		stored[r.Event.Detail["id"]] = true
	}
	for id := range acked {
		if !stored[id] {
			t.Errorf("event %s was acknowledged and is lost", id)
		}
	}
	t.Logf("%d events acknowledged before the kill, %d stored (some committed as the server died)", len(acked), len(recs))
}
