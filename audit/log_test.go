package audit_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/norma-run/norma/audit"
)

func TestMemoryChainVerifies(t *testing.T) {
	b := audit.NewMemoryBackend()
	l, err := audit.Open(b, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx := t.Context()
	for i := range 50 {
		if err := l.Record(ctx, benchEvent(i)); err != nil {
			t.Fatal(err)
		}
	}
	res, err := l.Verify(ctx)
	if err != nil || !res.OK() || res.Events != 50 {
		t.Fatalf("Verify = %+v, %v; want 50 events, intact", res, err)
	}
	if !b.Tamper(17, []byte(`{"type":"capability_decision","decision":"allow"}`)) {
		t.Fatal("Tamper(17) found no row")
	}
	res, err = l.Verify(ctx)
	if err != nil || res.FirstBroken != 17 || res.Events != 16 {
		t.Fatalf("Verify after tamper = %+v, %v; want FirstBroken 17 after 16 events", res, err)
	}
}

func TestRecordRejects(t *testing.T) {
	l := audit.NewMemory()
	defer l.Close()
	tests := []struct {
		name string
		e    audit.Event
	}{
		{"empty type", audit.Event{}},
		{"unknown type", audit.Event{Type: "capability_decided"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := l.Record(t.Context(), tt.e); err == nil {
				t.Errorf("Record(%+v) = nil, want error", tt.e)
			}
		})
	}
	l.Close()
	if err := l.Record(t.Context(), benchEvent(1)); !errors.Is(err, audit.ErrClosed) {
		t.Errorf("Record after Close = %v, want ErrClosed", err)
	}
}

func TestSanitize(t *testing.T) {
	const canary = "sk-CANARY-0123456789"
	red := audit.RedactorFunc(func(s string) string { return strings.ReplaceAll(s, canary, "[REDACTED]") })
	l, err := audit.Open(audit.NewMemoryBackend(), &audit.Options{Redactor: red})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	long := strings.Repeat("é", 2000)
	e := audit.Event{
		Type: audit.TypeToolCallFinished, Tool: "http.get", Rule: "Authorization: Bearer " + canary,
		Detail: map[string]string{"url": "https://x.invalid/?token=" + canary, canary: "key", "body": long},
	}
	if err := l.Record(t.Context(), e); err != nil {
		t.Fatal(err)
	}
	recs, err := l.Tail(t.Context(), 1)
	if err != nil || len(recs) != 1 {
		t.Fatalf("Tail = %v, %v", recs, err)
	}
	raw, _ := json.Marshal(recs[0])
	if strings.Contains(string(raw), canary) {
		t.Errorf("stored event contains the canary: %s", raw)
	}
	if got := recs[0].Event.Detail["body"]; len(got) > audit.MaxFieldLen || !strings.HasSuffix(got, "[truncated]") {
		t.Errorf("long field = %d bytes, want <= %d and marked truncated", len(got), audit.MaxFieldLen)
	}
}

func TestQueryAndTail(t *testing.T) {
	l := audit.NewMemory()
	defer l.Close()
	ctx := t.Context()
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	evs := []audit.Event{
		{Type: audit.TypeCapabilityDecision, Time: t0, Plugin: "a", Tool: "x", Decision: "allow"},
		{Type: audit.TypeCapabilityDecision, Time: t0.Add(time.Minute), Plugin: "a", Tool: "y", Decision: "deny"},
		{Type: audit.TypeCapabilityDecision, Time: t0.Add(2 * time.Minute), Plugin: "b", Tool: "x", Decision: "deny"},
		{Type: audit.TypeToolCallStarted, Time: t0.Add(3 * time.Minute), Plugin: "b", Tool: "x"},
	}
	for _, e := range evs {
		if err := l.Record(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name string
		f    audit.Filter
		want []int64
	}{
		{"all", audit.Filter{}, []int64{1, 2, 3, 4}},
		{"plugin", audit.Filter{Plugin: "a"}, []int64{1, 2}},
		{"tool+decision", audit.Filter{Tool: "x", Decision: "deny"}, []int64{3}},
		{"since", audit.Filter{Since: t0.Add(90 * time.Second)}, []int64{3, 4}},
		{"limit oldest", audit.Filter{Limit: 2}, []int64{1, 2}},
		{"limit newest", audit.Filter{Limit: 2, Newest: true}, []int64{3, 4}},
		{"after", audit.Filter{AfterSeq: 3}, []int64{4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			recs, err := l.Query(ctx, tt.f)
			if err != nil {
				t.Fatal(err)
			}
			var got []int64
			for _, r := range recs {
				got = append(got, r.Seq)
			}
			if !equal(got, tt.want) {
				t.Errorf("Query(%+v) = %v, want %v", tt.f, got, tt.want)
			}
		})
	}
	recs, _ := l.Query(ctx, audit.Filter{Plugin: "a", Limit: 1})
	if !recs[0].Event.Time.Equal(t0) || recs[0].Event.Tool != "x" {
		t.Errorf("decoded event = %+v", recs[0].Event)
	}
}

func equal(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestConcurrentMemory(t *testing.T) {
	l := audit.NewMemory()
	defer l.Close()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				if err := l.Record(context.Background(), benchEvent(g*1000+i)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	res, err := l.Verify(t.Context())
	if err != nil || !res.OK() || res.Events != 1600 {
		t.Fatalf("Verify = %+v, %v; want 1600 intact", res, err)
	}
}
