package audit

import (
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"testing"
)

// TestVerifyParallelRanges builds a chain long enough to be verified in
// parallel ranges and breaks it at range boundaries and elsewhere; the
// first broken link is the one a sequential walk would report.
func TestVerifyParallelRanges(t *testing.T) {
	const n, minParallel = 5003, 1000
	if runtime.GOMAXPROCS(0) < 2 {
		t.Log("GOMAXPROCS < 2: ranges are verified one at a time")
	}
	built := func() *MemoryBackend {
		b := NewMemoryBackend()
		err := b.AppendAudit(t.Context(), func(h Head) ([]Row, error) {
			rows := make([]Row, n)
			prev := h.Hash
			for i := range rows {
				body := []byte(`{"i":` + strconv.Itoa(i) + `}`)
				rows[i] = Row{Seq: int64(i) + 1, Body: body, Hash: Link(prev, body)}
				prev = rows[i].Hash
			}
			return rows, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}()
	build := func(*testing.T) *MemoryBackend {
		return &MemoryBackend{rows: slices.Clone(built.rows)}
	}
	parts := int64(min(runtime.GOMAXPROCS(0), maxVerifyParts))
	boundary := n/parts + 1 // first event of the second range
	tests := []struct {
		name   string
		break_ func(b *MemoryBackend)
		want   int64
		events int64
	}{
		{"intact", func(*MemoryBackend) {}, 0, n},
		{"first", func(b *MemoryBackend) { b.Tamper(1, []byte("x")) }, 1, 0},
		{"range start", func(b *MemoryBackend) { b.Tamper(boundary, []byte("x")) }, boundary, boundary - 1},
		{"before range start", func(b *MemoryBackend) { b.Tamper(boundary-1, []byte("x")) }, boundary - 1, boundary - 2},
		{"last", func(b *MemoryBackend) { b.Tamper(n, []byte("x")) }, n, n - 1},
		{"drop anchor", func(b *MemoryBackend) { b.Drop(boundary - 1) }, boundary - 1, boundary - 2},
		{"drop range start", func(b *MemoryBackend) { b.Drop(boundary) }, boundary, boundary - 1},
		{"two breaks", func(b *MemoryBackend) { b.Tamper(n-5, []byte("x")); b.Tamper(77, []byte("y")) }, 77, 76},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := build(t)
			tt.break_(b)
			res, err := verify(t.Context(), b, minParallel)
			if err != nil {
				t.Fatal(err)
			}
			if res.FirstBroken != tt.want || res.Events != tt.events {
				t.Errorf("Verify = %+v, want FirstBroken %d after %d events", res, tt.want, tt.events)
			}
			if tt.want == 0 {
				want := fmt.Sprintf("%x", b.rows[len(b.rows)-1].Hash)
				if res.Head != want {
					t.Errorf("Head = %s, want %s", res.Head, want)
				}
			}
		})
	}
}
