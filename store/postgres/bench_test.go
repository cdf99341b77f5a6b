package postgres_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/norma-run/norma/audit"
	"github.com/norma-run/norma/internal/pgtest"
	"github.com/norma-run/norma/store/postgres"
)

// BenchmarkAppend measures audit events per second into one chain on
// PostgreSQL: procs stores (as processes, each with its own audit.Log and
// so its own group commit) × 8 goroutines recording at once.
func BenchmarkAppend(b *testing.B) {
	for _, procs := range []int{1, 4, 8} {
		b.Run(fmt.Sprintf("stores=%d", procs), func(b *testing.B) {
			url := pgtest.URL(b)
			var logs []*audit.Log
			for range procs {
				db, err := postgres.Open(b.Context(), url)
				if err != nil {
					b.Fatal(err)
				}
				defer db.Close()
				l, _ := audit.Open(db, nil)
				defer l.Close()
				logs = append(logs, l)
			}
			workers := procs * 8
			per := max(b.N/workers, 1)
			b.ResetTimer()
			start := time.Now()
			var wg sync.WaitGroup
			for w := range workers {
				l := logs[w%procs]
				wg.Go(func() {
					for i := range per {
						if err := l.Record(b.Context(), audit.Event{Type: audit.TypeCapabilityDecision, Decision: "allow",
							Plugin: "p", Detail: map[string]string{"i": fmt.Sprint(i)}}); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			b.ReportMetric(float64(per*workers)/time.Since(start).Seconds(), "events/s")
		})
	}
}
