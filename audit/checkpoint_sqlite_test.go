package audit_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"database/sql"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/norma-run/norma/audit"
	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/store"
)

// testKey is a checkpoint key: the Checkpointer that signs with it and
// the options that verify with it.
type testKey struct {
	cp   *audit.Checkpointer
	opts *audit.VerifyOptions
}

func newTestKey(t testing.TB) testKey {
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
	return testKey{
		cp:   &audit.Checkpointer{Origin: origin, Signer: s, Verifier: v},
		opts: &audit.VerifyOptions{Origin: origin, Verifier: v, RequireCheckpoint: true},
	}
}

// checkpointedLog is a SQLite log of n events with a checkpoint after
// each size in at (written as the end of a run writes them: by closing a
// Log that has a Checkpointer). The database is closed, so that the
// tests tamper with the file as an attacker would.
func checkpointedLog(t *testing.T, k testKey, n int, at ...int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), store.FileName)
	db, err := store.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	i := 0
	for _, size := range append(at, n) {
		l, err := audit.Open(db, &audit.Options{Checkpointer: k.cp})
		if err != nil {
			t.Fatal(err)
		}
		for ; i < size; i++ {
			e := benchEvent(i + 1)
			e.Detail = map[string]string{"i": fmt.Sprint(i + 1)}
			if err := l.Record(t.Context(), e); err != nil {
				t.Fatal(err)
			}
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

func verifyFile(t *testing.T, path string, opts *audit.VerifyOptions) audit.VerifyResult {
	t.Helper()
	db, err := store.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	res, err := audit.VerifyWith(t.Context(), db, opts)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// truncate deletes the newest events after keep with SQL, as someone with
// the database file would (the append-only trigger is dropped first).
func truncate(t *testing.T, path string, keep int) {
	execRaw(t, path, "DROP TRIGGER audit_events_no_delete", fmt.Sprintf("DELETE FROM audit_events WHERE seq > %d", keep))
}

// rewriteChain replaces decision "allow" by "deny" in event seq and
// recomputes every hash from there on: the unkeyed chain verifies again.
func rewriteChain(t *testing.T, path string, seq int64) {
	t.Helper()
	raw, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.Exec("DROP TRIGGER audit_events_no_update"); err != nil {
		t.Fatal(err)
	}
	type row struct {
		seq  int64
		body []byte
	}
	rs, err := raw.Query("SELECT seq, body FROM audit_events ORDER BY seq")
	if err != nil {
		t.Fatal(err)
	}
	var rows []row
	for rs.Next() {
		var r row
		if err := rs.Scan(&r.seq, &r.body); err != nil {
			t.Fatal(err)
		}
		rows = append(rows, r)
	}
	rs.Close()
	var prev [audit.HashSize]byte
	for _, r := range rows {
		if r.seq == seq {
			b := strings.Replace(string(r.body), `"decision":"allow"`, `"decision":"deny"`, 1)
			if b == string(r.body) {
				t.Fatalf("event %d has no allow decision: %s", seq, r.body)
			}
			r.body = []byte(b)
		}
		h := audit.Link(prev, r.body)
		if _, err := raw.Exec("UPDATE audit_events SET body = ?, hash = ?, decision = 'deny' WHERE seq = ?", r.body, h[:], r.seq); err != nil {
			t.Fatal(err)
		}
		prev = h
	}
}

// TestCheckpointDetectsTruncation deletes the newest events with SQL. The
// chain alone still verifies (the attack works against it); the signed
// checkpoint names the missing range.
func TestCheckpointDetectsTruncation(t *testing.T) {
	for _, tt := range []struct {
		name      string
		n, keep   int
		at        []int
		wantRange string
	}{
		{"newest 5 of 20", 20, 15, nil, "events 16..20 are missing"},
		{"newest 1", 20, 19, []int{10}, "events 20..20 are missing"},
		{"all", 12, 0, []int{4}, "events 1..12 are missing"},
		{"back to an older checkpoint", 20, 10, []int{10}, "events 11..20 are missing"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			k := newTestKey(t)
			path := checkpointedLog(t, k, tt.n, tt.at...)
			if res := verifyFile(t, path, k.opts); !res.OK() || res.CheckpointSize != int64(tt.n) {
				t.Fatalf("before the attack: %+v", res)
			}
			truncate(t, path, tt.keep)
			if res := verifyFile(t, path, nil); !res.OK() || res.Events != int64(tt.keep) {
				t.Fatalf("chain only after truncation = %+v; want it to pass (that is the attack)", res)
			}
			res := verifyFile(t, path, k.opts)
			if res.OK() || res.Reason != capability.ReasonAuditEventsMissing || res.FirstBroken != int64(tt.keep+1) ||
				!strings.Contains(res.Problem, tt.wantRange) {
				t.Errorf("VerifyWith = %+v; want %s, %q", res, capability.ReasonAuditEventsMissing, tt.wantRange)
			}
		})
	}
}

// TestCheckpointDetectsRewrittenChain rewrites one event and recomputes
// the whole unkeyed chain; the checkpoints that cover the event no longer
// match, and the message brackets the rewritten event between the last
// checkpoint that matches and the first that does not.
func TestCheckpointDetectsRewrittenChain(t *testing.T) {
	k := newTestKey(t)
	path := checkpointedLog(t, k, 30, 5, 10, 20)
	rewriteChain(t, path, 13)
	if res := verifyFile(t, path, nil); !res.OK() || res.Events != 30 {
		t.Fatalf("chain only after the rewrite = %+v; want it to pass (that is the attack)", res)
	}
	res := verifyFile(t, path, k.opts)
	if res.OK() || res.Reason != capability.ReasonAuditCheckpointMismatch || res.FirstBroken != 20 ||
		!strings.Contains(res.Problem, "an event in 11..20 was rewritten") {
		t.Errorf("VerifyWith = %+v; want %s at 20, event in 11..20", res, capability.ReasonAuditCheckpointMismatch)
	}
}

// TestCheckpointForged: checkpoints the attacker writes into the database
// without the key are refused, whatever they claim.
func TestCheckpointForged(t *testing.T) {
	k := newTestKey(t)
	other := newTestKey(t)
	sameName := *other.cp
	sameName.Origin = k.cp.Origin // another key under the log's name
	sign := func(cp *audit.Checkpointer, c audit.Checkpoint) []byte {
		s, err := audit.SignCheckpoint(c, cp.Signer)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	head := func(t *testing.T, path string, size int64) [audit.HashSize]byte {
		t.Helper()
		db, err := store.Open(t.Context(), path)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		rows, err := db.QueryAudit(t.Context(), audit.Filter{AfterSeq: size - 1, Limit: 1})
		if err != nil || len(rows) != 1 {
			t.Fatalf("event %d: %v", size, err)
		}
		return rows[0].Hash
	}
	for _, tt := range []struct {
		name   string
		attack func(t *testing.T, path string)
		want   string
	}{
		{"another key, truncated", func(t *testing.T, path string) {
			// Truncate to 15, delete the real checkpoints, and sign the
			// truncated head with a key of one's own.
			truncate(t, path, 15)
			h := head(t, path, 15)
			execRaw(t, path, "DROP TRIGGER audit_checkpoints_no_delete", "DELETE FROM audit_checkpoints")
			insertCheckpoint(t, path, 15, sign(other.cp, audit.Checkpoint{Origin: k.cp.Origin, Size: 15, Hash: h}))
		}, "not signed by this state directory's audit key"},
		{"another key under the log's name", func(t *testing.T, path string) {
			insertCheckpoint(t, path, 25, sign(&sameName, audit.Checkpoint{Origin: k.cp.Origin, Size: 20, Hash: head(t, path, 20)}))
		}, "not signed by this state directory's audit key"},
		{"garbage", func(t *testing.T, path string) {
			insertCheckpoint(t, path, 25, []byte("github.com/x\n20\nAAAA\n\n— x abc\n"))
		}, "not a signed note"},
		{"a real one stored under another size", func(t *testing.T, path string) {
			// The checkpoint of 10 events copied to size 30 so that the
			// writer skips the next one.
			raw, err := sql.Open("sqlite", "file:"+path)
			if err != nil {
				t.Fatal(err)
			}
			defer raw.Close()
			var n []byte
			if err := raw.QueryRow("SELECT note FROM audit_checkpoints WHERE size = 10").Scan(&n); err != nil {
				t.Fatal(err)
			}
			insertCheckpoint(t, path, 30, n)
		}, "stored as covering 30 events but signed for 10"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := checkpointedLog(t, k, 20, 10)
			tt.attack(t, path)
			res := verifyFile(t, path, k.opts)
			if res.OK() || res.Reason != capability.ReasonAuditCheckpointInvalid || !strings.Contains(res.Problem, tt.want) {
				t.Errorf("VerifyWith = %+v; want %s, %q", res, capability.ReasonAuditCheckpointInvalid, tt.want)
			}
		})
	}
}

// TestCheckpointRefusesTamperedLog: the writer never signs over a log
// that does not extend its newest checkpoint, so the end of the next run
// cannot bless an attack; nothing is stored.
func TestCheckpointRefusesTamperedLog(t *testing.T) {
	for _, tt := range []struct {
		name   string
		attack func(t *testing.T, path string)
		want   capability.Reason
	}{
		{"truncated", func(t *testing.T, path string) { truncate(t, path, 14) }, capability.ReasonAuditEventsMissing},
		{"rewritten", func(t *testing.T, path string) { rewriteChain(t, path, 3) }, capability.ReasonAuditCheckpointMismatch},
		{"edited after the checkpoint", func(t *testing.T, path string) {
			execRaw(t, path, "DROP TRIGGER audit_events_no_update",
				`UPDATE audit_events SET body = CAST(replace(body, '"allow"', '"deny"') AS BLOB) WHERE seq = 18`)
		}, capability.ReasonAuditChainBroken},
		{"forged newest", func(t *testing.T, path string) {
			// Garbage filed as the newest checkpoint of the log's own origin.
			insertCheckpointAs(t, path, storedOrigin(t, path), 19, []byte("not a note"))
		}, capability.ReasonAuditCheckpointInvalid},
		{"every checkpoint deleted", func(t *testing.T, path string) {
			truncate(t, path, 12)
			execRaw(t, path, "DROP TRIGGER audit_checkpoints_no_delete", "DELETE FROM audit_checkpoints")
		}, capability.ReasonAuditCheckpointMissing},
	} {
		t.Run(tt.name, func(t *testing.T) {
			k := newTestKey(t)
			path := checkpointedLog(t, k, 15, 15)
			db, err := store.Open(t.Context(), path)
			if err != nil {
				t.Fatal(err)
			}
			l, _ := audit.Open(db, nil)
			for i := range 5 {
				if err := l.Record(t.Context(), benchEvent(16+i)); err != nil {
					t.Fatal(err)
				}
			}
			l.Close()
			db.Close()
			tt.attack(t, path)
			db, err = store.Open(t.Context(), path)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			before, _ := db.AuditCheckpoints(t.Context())
			cp := *k.cp
			cp.RequireStored = true // the key is older than this process
			k.cp = &cp
			l, _ = audit.Open(db, &audit.Options{Checkpointer: k.cp})
			err = l.Close()
			if capability.ReasonOf(err) != tt.want {
				t.Errorf("Close = %v; want %s", err, tt.want)
			}
			if _, _, err := k.cp.Checkpoint(t.Context(), db); capability.ReasonOf(err) != tt.want {
				t.Errorf("Checkpoint = %v; want %s", err, tt.want)
			}
			after, _ := db.AuditCheckpoints(t.Context())
			if len(after) != len(before) {
				t.Errorf("%d checkpoints stored before, %d after; want none added", len(before), len(after))
			}
		})
	}
}

// insertCheckpoint files signed under size and the origin it claims (its
// first line), as an attacker with write access to the database would.
func insertCheckpoint(t *testing.T, path string, size int64, signed []byte) {
	t.Helper()
	origin, _, _ := strings.Cut(string(signed), "\n")
	insertCheckpointAs(t, path, origin, size, signed)
}

// storedOrigin is the origin of a checkpoint stored in path.
func storedOrigin(t *testing.T, path string) string {
	t.Helper()
	raw, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var o string
	if err := raw.QueryRow("SELECT origin FROM audit_checkpoints LIMIT 1").Scan(&o); err != nil {
		t.Fatal(err)
	}
	return o
}

func insertCheckpointAs(t *testing.T, path, origin string, size int64, signed []byte) {
	t.Helper()
	raw, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.Exec("INSERT INTO audit_checkpoints (origin, size, time_ns, note) VALUES (?, ?, 1, ?)", origin, size, signed); err != nil {
		t.Fatal(err)
	}
}

// TestCheckpointExported: a checkpoint exported before the attack detects
// truncation even when every stored checkpoint was deleted too; without
// it the deletion of the checkpoints is what shows.
func TestCheckpointExported(t *testing.T) {
	k := newTestKey(t)
	path := checkpointedLog(t, k, 20, 8)
	db, err := store.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	exported, stored, err := k.cp.Checkpoint(t.Context(), db)
	db.Close()
	if err != nil || stored {
		t.Fatalf("Checkpoint = stored %v, %v; want the head's checkpoint, already stored at the last close", stored, err)
	}
	truncate(t, path, 12)
	execRaw(t, path, "DROP TRIGGER audit_checkpoints_no_delete", "DELETE FROM audit_checkpoints")

	withFile := *k.opts
	withFile.External = []audit.ExternalCheckpoint{{Source: "checkpoint in exported.txt", Note: exported}}
	res := verifyFile(t, path, &withFile)
	if res.Reason != capability.ReasonAuditEventsMissing || !strings.Contains(res.Problem, "events 13..20 are missing: the checkpoint in exported.txt covers 20 events") {
		t.Errorf("with the exported checkpoint: %+v", res)
	}
	if res := verifyFile(t, path, k.opts); res.Reason != capability.ReasonAuditCheckpointMissing {
		t.Errorf("without it: %+v; want %s", res, capability.ReasonAuditCheckpointMissing)
	}
	noRequire := *k.opts
	noRequire.RequireCheckpoint = false
	if res := verifyFile(t, path, &noRequire); !res.OK() {
		t.Errorf("a log that never had a checkpoint: %+v; want ok", res)
	}
}

// TestCheckpointAtClose: closing a Log signs its head once; a Log that
// appended nothing new stores nothing.
func TestCheckpointAtClose(t *testing.T) {
	k := newTestKey(t)
	path := checkpointedLog(t, k, 7)
	db, err := store.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	l, err := audit.Open(db, &audit.Options{Checkpointer: k.cp})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	cps, err := db.AuditCheckpoints(t.Context())
	if err != nil || len(cps) != 1 || cps[0].Size != 7 {
		t.Fatalf("AuditCheckpoints = %+v, %v; want one of 7 events", cps, err)
	}
	c, err := audit.OpenCheckpoint(cps[0].Note, k.opts.Verifier, k.opts.Origin)
	if err != nil || c.Size != 7 {
		t.Fatalf("OpenCheckpoint = %+v, %v", c, err)
	}
	res, err := audit.VerifyWith(t.Context(), db, k.opts)
	if err != nil || !res.OK() || res.Checkpoints != 1 || res.CheckpointSize != 7 || res.Head != fmt.Sprintf("%x", c.Hash) {
		t.Errorf("VerifyWith = %+v, %v", res, err)
	}
}

// BenchmarkCheckpoint is the cost a run's end adds to closing the log:
// sign the head and store it in one durable transaction ("new head"), or
// sign it and find it already stored ("unchanged").
func BenchmarkCheckpoint(b *testing.B) {
	for _, newHead := range []bool{true, false} {
		name := "unchanged"
		if newHead {
			name = "new head"
		}
		b.Run(name, func(b *testing.B) {
			k := newTestKey(b)
			db, l, _ := openSQLite(b)
			if err := l.Record(b.Context(), benchEvent(1)); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if newHead {
					b.StopTimer()
					if err := l.Record(b.Context(), benchEvent(1)); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
				if _, _, err := k.cp.Checkpoint(b.Context(), db); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestCheckpointConcurrentWriters: two handles on one file (as two
// processes) append and checkpoint at once while a third verifies; every
// checkpoint verifies, and the copies published outside the database
// arrive in size order.
func TestCheckpointConcurrentWriters(t *testing.T) {
	k := newTestKey(t)
	_, l1, path := openSQLite(t)
	db1, err := store.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer db1.Close()
	db2, err := store.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	l2, _ := audit.Open(db2, nil)
	defer l2.Close()
	var mu sync.Mutex
	var published []int64
	cp := *k.cp
	cp.Publish = func(signed []byte) error {
		c, err := audit.OpenCheckpoint(signed, k.opts.Verifier, k.opts.Origin)
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		published = append(published, c.Size)
		return nil
	}
	// The first checkpoint, as the key's creation writes it.
	if _, _, err := cp.Checkpoint(t.Context(), db1); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g, w := range []struct {
		l  *audit.Log
		db *store.DB
	}{{l1, db1}, {l2, db2}, {l1, db2}, {l2, db1}} {
		wg.Go(func() {
			for i := range 40 {
				if err := w.l.Record(t.Context(), benchEvent(g*100+i)); err != nil {
					t.Error(err)
					return
				}
				if i%10 == 9 {
					if _, _, err := cp.Checkpoint(t.Context(), w.db); err != nil {
						t.Error(err)
						return
					}
				}
			}
		})
	}
	// A verify while they write sees no truncation in a checkpoint stored
	// after it read the chain.
	stop := make(chan struct{})
	verified := make(chan int)
	go func() {
		n := 0
		defer func() { verified <- n }()
		for {
			select {
			case <-stop:
				return
			default:
			}
			res, err := audit.VerifyWith(t.Context(), db2, k.opts)
			if err != nil || !res.OK() {
				t.Errorf("VerifyWith during writes = %+v, %v", res, err)
				return
			}
			n++
		}
	}()
	wg.Wait()
	close(stop)
	t.Logf("%d verifies during the writes", <-verified)
	if _, _, err := cp.Checkpoint(t.Context(), db1); err != nil {
		t.Fatal(err)
	}
	res, err := audit.VerifyWith(t.Context(), db1, k.opts)
	if err != nil || !res.OK() || res.Events != 160 || res.CheckpointSize != 160 || res.Checkpoints < 2 {
		t.Fatalf("VerifyWith = %+v, %v", res, err)
	}
	if !slices.IsSorted(published) || len(published) != res.Checkpoints {
		t.Errorf("published sizes %v (%d), %d checkpoints stored; want increasing, one per stored", published, len(published), res.Checkpoints)
	}
}
