package metrics

import (
	"bytes"
	"testing"

	"github.com/norma-run/norma/audit/metrics/metricstest"
)

// TestExpositionParses writes label values and help text with every byte
// the format escapes and reads them back with Prometheus's own parser.
func TestExpositionParses(t *testing.T) {
	a := newCounterVec("norma_test_total", "Help with a \\ backslash\nand a newline.", "x", "y")
	b := newCounterVec("norma_bare_total", "No labels.")
	odd := "quote \" backslash \\ newline \n brace } é"
	a.inc(odd, "")
	a.inc(odd, "")
	a.inc("plain", "-")
	var buf bytes.Buffer
	if err := writeText(&buf, []*counterVec{a, b}); err != nil {
		t.Fatal(err)
	}
	got, err := metricstest.Parse(&buf)
	if err != nil {
		t.Fatalf("%v\n%s", err, buf.String())
	}
	want := map[string]float64{
		metricstest.Key("norma_test_total", "x", odd, "y", ""):      2,
		metricstest.Key("norma_test_total", "x", "plain", "y", "-"): 1,
		metricstest.Key("norma_bare_total"):                         0,
	}
	if len(got) != len(want) {
		t.Errorf("samples %v, want %v", got, want)
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%q = %v (present %v), want %v", k, g, ok, v)
		}
	}
}
