package audit_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"

	"github.com/norma-run/norma/audit"
	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/store"
)

// TestCheckpointSharedStore: two state directories (two keys) append to
// one store and each signs its own checkpoints of the one chain. Each
// verifies its own, counts the other's as unchecked (it does not hold
// that key, and never trusts one found in the database), and checks both
// when told to trust the other key. A checkpoint that claims a trusted
// origin but is signed by another key is invalid.
func TestCheckpointSharedStore(t *testing.T) {
	a, b, mallory := newTestKey(t), newTestKey(t), newTestKey(t)
	path := filepath.Join(t.TempDir(), store.FileName)
	db, err := store.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	n := 0
	for round := range 3 {
		for _, k := range []testKey{a, b} {
			l, err := audit.Open(db, &audit.Options{Checkpointer: k.cp})
			if err != nil {
				t.Fatal(err)
			}
			for range 4 {
				n++
				e := benchEvent(n)
				e.Detail = map[string]string{"round": fmt.Sprint(round)}
				if err := l.Record(t.Context(), e); err != nil {
					t.Fatal(err)
				}
			}
			if err := l.Close(); err != nil { // signs k's checkpoint of the shared head
				t.Fatalf("round %d: close: %v", round, err)
			}
		}
	}
	onlyA := verifyFile(t, path, a.opts)
	if !onlyA.OK() || onlyA.Events != int64(n) || onlyA.Checkpoints != 3 || onlyA.CheckpointSize != int64(n)-4 {
		t.Fatalf("a alone = %+v; want ok, %d events, a's 3 checkpoints", onlyA, n)
	}
	if len(onlyA.Unchecked) != 1 || onlyA.Unchecked[0].Origin != b.cp.Origin || onlyA.Unchecked[0].Checkpoints != 3 || onlyA.Unchecked[0].Largest != int64(n) {
		t.Fatalf("a alone: unchecked = %+v; want b's 3", onlyA.Unchecked)
	}
	both := *a.opts
	both.Trusted = []note.Verifier{b.cp.Verifier}
	if res := verifyFile(t, path, &both); !res.OK() || res.Checkpoints != 6 || res.CheckpointSize != int64(n) || len(res.Unchecked) != 0 {
		t.Fatalf("a trusting b = %+v; want all 6 checked", res)
	}

	// Mallory signs a checkpoint of a truncated head under b's name.
	forged, err := audit.SignCheckpoint(audit.Checkpoint{Origin: b.cp.Origin, Size: int64(n) + 5}, mallory.cp.Signer)
	if err != nil {
		t.Fatal(err)
	}
	insertCheckpoint(t, path, int64(n)+5, forged)
	if res := verifyFile(t, path, &both); res.OK() || res.Reason != capability.ReasonAuditCheckpointInvalid {
		t.Fatalf("forged under a trusted name = %+v; want %s", res, capability.ReasonAuditCheckpointInvalid)
	}
	// Not trusting b, a cannot tell: it says so instead of vouching.
	res := verifyFile(t, path, a.opts)
	if !res.OK() || len(res.Unchecked) != 1 || res.Unchecked[0].Checkpoints != 4 {
		t.Fatalf("a alone after the forgery = %+v", res)
	}
	if strings.Contains(fmt.Sprint(res.Unchecked), "verified") {
		t.Fatal("unchecked checkpoints reported as verified")
	}
}
