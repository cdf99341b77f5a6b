package audit_test

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/norma-run/norma/audit"
	"github.com/norma-run/norma/store"
)

func benchEvent(i int) audit.Event {
	return audit.Event{
		Type: audit.TypeCapabilityDecision, RunID: "run-bench", Principal: "user:alice > agent:main",
		Plugin: "com.example.issue-helper", PluginVersion: "1.4.0", Tool: "issues.comment",
		CapabilityKind: "external.write", Decision: "allow", Reason: "ALLOWED", Layer: "grant",
		Rule: "external_writes.default", ManifestDigest: "sha256:0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0",
		PolicyGeneration: 7, TargetHash: audit.HashTarget(fmt.Sprintf("example-org/demo-repo#%d", i)),
	}
}

// BenchmarkAuditAppend measures durable appends (WAL, synchronous=FULL) with
// group commit under concurrent writers; each Record returns only after its
// batch committed.
//
// sync=full is the default (a returned Record survives power loss);
// sync=normal (store.Options.UnsafeSyncNormal) survives a process crash
// only, and shows the cost of everything but the fsync.
func BenchmarkAuditAppend(b *testing.B) {
	for _, bc := range []struct {
		sync    string
		writers int
	}{{"full", 2}, {"full", 8}, {"full", 64}, {"normal", 8}} {
		// RunParallel starts parallelism × GOMAXPROCS goroutines.
		procs := runtime.GOMAXPROCS(0)
		parallelism := max(1, (bc.writers+procs-1)/procs)
		writers := parallelism * procs
		b.Run(fmt.Sprintf("sync=%s/writers=%d", bc.sync, writers), func(b *testing.B) {
			db, err := store.OpenWith(b.Context(), filepath.Join(b.TempDir(), "norma.db"),
				&store.Options{UnsafeSyncNormal: bc.sync == "normal"})
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			l, err := audit.Open(db, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			ctx := context.Background()
			b.SetParallelism(parallelism)
			b.ReportAllocs()
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				i := 0
				for pb.Next() {
					i++
					if err := l.Record(ctx, benchEvent(i)); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "events/s")
			st := l.Stats()
			b.ReportMetric(float64(st.Events)/float64(max(st.Batches, 1)), "events/batch")
		})
	}
}
