package audit

import (
	"maps"
	"strconv"
	"strings"
	"testing"
)

// TestSanitizeDetail: a map that cleaning leaves alone is used as is (no
// copy per event); one with a secret, an overlong value or more than
// MaxDetail entries is copied and cleaned, and the caller's map is never
// modified.
func TestSanitizeDetail(t *testing.T) {
	const canary = "sk-CANARY-0123456789"
	red := RedactorFunc(func(s string) string { return strings.ReplaceAll(s, canary, "[REDACTED]") })
	many := map[string]string{}
	for i := range MaxDetail + 5 {
		many["k"+strconv.Itoa(100+i)] = "v"
	}
	tests := []struct {
		name     string
		in       map[string]string
		same     bool
		wantLen  int
		wantKeys map[string]string // entries the result must hold
	}{
		{"clean", map[string]string{"toolUseId": "toolu_1", "stage": "policy"}, true, 2, map[string]string{"toolUseId": "toolu_1"}},
		{"secret value", map[string]string{"toolUseId": "toolu_1", "url": "https://x.invalid/?t=" + canary}, false, 2, map[string]string{"url": "https://x.invalid/?t=[REDACTED]"}},
		{"secret key", map[string]string{canary: "v"}, false, 1, map[string]string{"[REDACTED]": "v"}},
		{"long value", map[string]string{"body": strings.Repeat("x", MaxFieldLen+1)}, false, 1, nil},
		{"too many", many, false, MaxDetail + 1, map[string]string{"_truncated": "true", "k100": "v"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := maps.Clone(tt.in)
			e := sanitize(Event{Type: TypeToolCallStarted, Detail: tt.in}, red)
			if !maps.Equal(tt.in, before) {
				t.Fatal("the caller's map was modified")
			}
			same := len(tt.in) > 0 && len(e.Detail) > 0 && isSameMap(tt.in, e.Detail)
			if same != tt.same || len(e.Detail) != tt.wantLen {
				t.Errorf("same map = %v (want %v), %d entries (want %d)", same, tt.same, len(e.Detail), tt.wantLen)
			}
			for k, v := range tt.wantKeys {
				if e.Detail[k] != v {
					t.Errorf("Detail[%q] = %q, want %q", k, e.Detail[k], v)
				}
			}
			for k, v := range e.Detail {
				if strings.Contains(k+v, canary) || len(v) > MaxFieldLen {
					t.Errorf("uncleaned entry %q: %d bytes", k, len(v))
				}
			}
		})
	}
}

// isSameMap reports whether a and b are one map: a write to one shows in
// the other. The probe is removed again.
func isSameMap(a, b map[string]string) bool {
	const probe = "\x00probe"
	a[probe] = "x"
	_, ok := b[probe]
	delete(a, probe)
	return ok
}

// BenchmarkEncodeEvent is the CPU part of Log.Record before the commit:
// sanitize (redaction) and the canonical encoding of a gate event.
func BenchmarkEncodeEvent(b *testing.B) {
	red := RedactorFunc(func(s string) string { return s })
	e := Event{
		Type: TypeToolCallStarted, RunID: "run-bench", Principal: "user:alice", Tool: "Read",
		CapabilityKind: "fs.read", Decision: "allow", Reason: "ALLOWED", Layer: "rules", Rule: "allow:Read",
		TargetHash: HashTarget("fs.read workspace://docs/guide/intro.md"), Detail: map[string]string{"toolUseId": "toolu_bench"},
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := sanitize(e, red).Canonical(); err != nil {
			b.Fatal(err)
		}
	}
}
