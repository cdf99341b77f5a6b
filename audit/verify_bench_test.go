package audit_test

import (
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/norma-run/norma/audit"
	"github.com/norma-run/norma/store"
)

// BenchmarkVerify1M verifies a chain of 1,000,000 events in a SQLite
// file. The database is built once, directly through the backend in large
// transactions (building it through group commit would measure fsync).
func BenchmarkVerify1M(b *testing.B) {
	const total, perTx = 1_000_000, 20_000
	ctx := b.Context()
	db, err := store.Open(ctx, filepath.Join(b.TempDir(), store.FileName))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	e := benchEvent(0)
	for done := 0; done < total; done += perTx {
		err := db.AppendAudit(ctx, func(h audit.Head) ([]audit.Row, error) {
			rows := make([]audit.Row, perTx)
			prev := h.Hash
			for i := range rows {
				e.TargetHash = audit.HashTarget(string(rune(done + i)))
				body, err := e.Canonical()
				if err != nil {
					return nil, err
				}
				rows[i] = audit.Row{Seq: h.Seq + int64(i) + 1, Type: e.Type, Plugin: e.Plugin, Tool: e.Tool, Decision: e.Decision, Body: body, Hash: audit.Link(prev, body)}
				prev = rows[i].Hash
			}
			return rows, nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	cpu0 := cpuTime()
	for b.Loop() {
		res, err := audit.VerifyBackend(ctx, db)
		if err != nil || !res.OK() || res.Events != total {
			b.Fatalf("Verify = %+v, %v", res, err)
		}
	}
	b.ReportMetric(float64(total)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
	// CPU seconds (user+system, all threads) per verify: on a shared,
	// overloaded machine this is steadier than the wall time.
	b.ReportMetric((cpuTime()-cpu0).Seconds()/float64(b.N), "cpu-s/op")
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
