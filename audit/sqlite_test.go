package audit_test

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/norma-run/norma/audit"
	"github.com/norma-run/norma/store"
)

func openSQLite(t testing.TB) (*store.DB, *audit.Log, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), store.FileName)
	db, err := store.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	l, err := audit.Open(db, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close(); db.Close() })
	return db, l, path
}

// TestConcurrentDecisions: 32 goroutines × 1,000 decisions through group
// commit; every event is there exactly once and the chain verifies.
func TestConcurrentDecisions(t *testing.T) {
	const goroutines, per = 32, 1000
	_, l, _ := openSQLite(t)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range per {
				e := benchEvent(i)
				e.RunID = fmt.Sprintf("run-%d", g)
				e.Detail = map[string]string{"i": fmt.Sprint(i)}
				if err := l.Record(context.Background(), e); err != nil {
					t.Errorf("Record(g=%d, i=%d) = %v", g, i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	st := l.Stats()
	t.Logf("%d events in %d transactions (%.1f per batch)", st.Events, st.Batches, float64(st.Events)/float64(st.Batches))
	ctx := t.Context()
	res, err := l.Verify(ctx)
	if err != nil || !res.OK() || res.Events != goroutines*per {
		t.Fatalf("Verify = %+v, %v; want %d intact events", res, err, goroutines*per)
	}
	for g := range goroutines {
		recs, err := l.Query(ctx, audit.Filter{RunID: fmt.Sprintf("run-%d", g), Limit: 2 * per})
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, r := range recs {
			seen[r.Event.Detail["i"]] = true
		}
		if len(recs) != per || len(seen) != per {
			t.Errorf("run-%d: %d events, %d distinct; want %d", g, len(recs), len(seen), per)
		}
	}
}

// TestTwoWritersOneFile: two handles on one file (as two processes would
// be) append concurrently and still form one chain.
func TestTwoWritersOneFile(t *testing.T) {
	_, l1, path := openSQLite(t)
	db2, err := store.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	l2, _ := audit.Open(db2, nil)
	defer l2.Close()
	var wg sync.WaitGroup
	for _, l := range []*audit.Log{l1, l2, l1, l2} {
		wg.Go(func() {
			for i := range 100 {
				if err := l.Record(context.Background(), benchEvent(i)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	res, err := l1.Verify(t.Context())
	if err != nil || !res.OK() || res.Events != 400 {
		t.Fatalf("Verify = %+v, %v; want 400 intact", res, err)
	}
}

func TestAppendOnly(t *testing.T) {
	db, l, path := openSQLite(t)
	_ = db
	if err := l.Record(t.Context(), benchEvent(1)); err != nil {
		t.Fatal(err)
	}
	raw, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	for _, q := range []string{
		"UPDATE audit_events SET decision = 'deny'",
		"DELETE FROM audit_events",
	} {
		if _, err := raw.Exec(q); err == nil {
			t.Errorf("%s succeeded; want the append-only trigger to abort it", q)
		}
	}
}

// TestVerifyDetectsTampering edits the database behind the log's back: as
// SQL (after dropping the append-only triggers) and as raw bytes in the file.
func TestVerifyDetectsTampering(t *testing.T) {
	tests := []struct {
		name   string
		tamper func(t *testing.T, path string)
		want   int64
	}{
		{"sql update body", func(t *testing.T, path string) {
			execRaw(t, path, "DROP TRIGGER audit_events_no_update",
				`UPDATE audit_events SET body = CAST(replace(body, '"allow"', '"deny"') AS BLOB) WHERE seq = 5`)
		}, 5},
		{"sql delete row", func(t *testing.T, path string) {
			execRaw(t, path, "DROP TRIGGER audit_events_no_delete", "DELETE FROM audit_events WHERE seq = 3")
		}, 3},
		{"sql reorder", func(t *testing.T, path string) {
			execRaw(t, path, "DROP TRIGGER audit_events_no_update",
				"UPDATE audit_events SET body = (SELECT body FROM audit_events WHERE seq = 8) WHERE seq = 7")
		}, 7},
		{"file bytes", func(t *testing.T, path string) {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			needle := []byte("example-org-tamper-target-6")
			i := bytes.Index(b, needle)
			if i < 0 {
				t.Fatal("needle not found in database file")
			}
			b[i] = 'E'
			if err := os.WriteFile(path, b, 0o600); err != nil {
				t.Fatal(err)
			}
		}, 6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), store.FileName)
			db, err := store.Open(t.Context(), path)
			if err != nil {
				t.Fatal(err)
			}
			l, _ := audit.Open(db, nil)
			for i := 1; i <= 10; i++ {
				e := benchEvent(i)
				e.Detail = map[string]string{"note": fmt.Sprintf("example-org-tamper-target-%d", i)}
				if err := l.Record(t.Context(), e); err != nil {
					t.Fatal(err)
				}
			}
			l.Close()
			db.Close() // checkpoints the WAL into the main file
			tt.tamper(t, path)
			db, err = store.Open(t.Context(), path)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			res, err := audit.VerifyBackend(t.Context(), db)
			if err != nil {
				t.Fatal(err)
			}
			if res.FirstBroken != tt.want {
				t.Errorf("Verify = %+v, want FirstBroken %d", res, tt.want)
			}
		})
	}
}

func execRaw(t *testing.T, path string, qs ...string) {
	t.Helper()
	raw, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	for _, q := range qs {
		if _, err := raw.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}
