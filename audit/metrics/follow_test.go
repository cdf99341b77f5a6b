package metrics_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/norma-run/norma/audit"
	"github.com/norma-run/norma/audit/metrics"
	"github.com/norma-run/norma/store"
)

// TestFollowCountsOtherWriters writes events through two audit logs on
// two connections of one SQLite file (as two processes sharing a store
// do) and follows the file on a third: the follower counts every event
// of both writers, once, including the events written before it started.
func TestFollowCountsOtherWriters(t *testing.T) {
	path := filepath.Join(t.TempDir(), store.FileName)
	open := func() *store.DB {
		db, err := store.Open(t.Context(), path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	w1, w2, r := open(), open(), open()
	logs := make([]*audit.Log, 2)
	for i, db := range []*store.DB{w1, w2} {
		l, err := audit.Open(db, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		logs[i] = l
	}
	record := func(n int) {
		var wg sync.WaitGroup
		for i, l := range logs {
			wg.Go(func() {
				for j := range n {
					e := decision("net.request", "allow", "ALLOWED")
					if j%2 == 1 {
						e = decision("secret.use", "deny", "SECRET_UNDECLARED")
					}
					e.RunID = fmt.Sprintf("run%d", i)
					if err := l.Record(context.Background(), e); err != nil {
						t.Error(err)
					}
				}
			})
		}
		wg.Wait()
	}
	record(10) // before the follower starts: counted too (from the first row)

	m := metrics.New(nil)
	synced := make(chan int64, 100)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		done <- metrics.Follow(ctx, r, m, &metrics.FollowOptions{Poll: 20 * time.Millisecond, Synced: func(s int64) {
			select {
			case synced <- s:
			default:
			}
		}})
	}()
	record(30)
	waitSeq(t, synced, 80)
	cancel()
	if err := <-done; err != context.Canceled {
		t.Fatalf("Follow returned %v, want context.Canceled", err)
	}
	got := scrape(t, m)
	if k := dec("net.request", "allow", "ALLOWED", pid, pv); got[k] != 40 {
		t.Errorf("%s = %v, want 40", k, got[k])
	}
	if k := dec("secret.use", "deny", "SECRET_UNDECLARED", pid, pv); got[k] != 40 {
		t.Errorf("%s = %v, want 40", k, got[k])
	}
}

// TestFollowFromHead starts after the rows already stored.
func TestFollowFromHead(t *testing.T) {
	b := audit.NewMemoryBackend()
	l, err := audit.Open(b, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for range 5 {
		if err := l.Record(t.Context(), ev(audit.TypeApprovalRequested, nil)); err != nil {
			t.Fatal(err)
		}
	}
	m := metrics.New(nil)
	synced := make(chan int64, 100)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go metrics.Follow(ctx, b, m, &metrics.FollowOptions{FromHead: true, Poll: 10 * time.Millisecond, Synced: func(s int64) {
		select {
		case synced <- s:
		default:
		}
	}})
	waitSeq(t, synced, 5)
	if err := l.Record(t.Context(), ev(audit.TypeApprovalRequested, nil)); err != nil {
		t.Fatal(err)
	}
	waitSeq(t, synced, 6)
	if k, got := pl(metrics.MetricApprovalsRequested), scrape(t, m); got[k] != 1 {
		t.Errorf("%s = %v, want 1 (only the event after the head)", k, got[k])
	}
}

// waitSeq waits until the follower has counted the row with sequence
// number seq.
func waitSeq(t *testing.T, synced <-chan int64, seq int64) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case s := <-synced:
			if s >= seq {
				return
			}
		case <-deadline:
			t.Fatalf("the follower did not reach row %d", seq)
		}
	}
}

// watched is a backend that announces appends, as PostgreSQL's
// LISTEN/NOTIFY does.
type watched struct {
	audit.Backend
	ch chan int64
}

func (w watched) FollowAudit(context.Context) (<-chan int64, error) { return w.ch, nil }

// TestFollowWakesOnNotification: with a poll interval of an hour, the
// follower counts a new event as soon as the store announces it.
func TestFollowWakesOnNotification(t *testing.T) {
	b := watched{audit.NewMemoryBackend(), make(chan int64, 1)}
	l, err := audit.Open(b, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	m := metrics.New(nil)
	synced := make(chan int64, 100)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go metrics.Follow(ctx, b, m, &metrics.FollowOptions{Poll: time.Hour, Synced: func(s int64) { synced <- s }})
	waitSeq(t, synced, 0)
	if err := l.Record(t.Context(), ev(audit.TypeApprovalGranted, nil)); err != nil {
		t.Fatal(err)
	}
	b.ch <- 1
	waitSeq(t, synced, 1)
	if k, got := pl(metrics.MetricApprovalsGranted), scrape(t, m); got[k] != 1 {
		t.Errorf("%s = %v, want 1", k, got[k])
	}
}
