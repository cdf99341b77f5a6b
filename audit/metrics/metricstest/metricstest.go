// Package metricstest reads what a /metrics endpoint serves, with
// Prometheus's own text parser, for tests.
package metricstest

import (
	"io"
	"slices"
	"strings"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Parse parses the Prometheus text exposition format and returns every
// counter and gauge sample by [Key].
func Parse(r io.Reader) (map[string]float64, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for name, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var kv []string
			for _, l := range m.GetLabel() {
				kv = append(kv, l.GetName(), l.GetValue())
			}
			v := m.GetCounter().GetValue()
			if m.Gauge != nil {
				v = m.GetGauge().GetValue()
			}
			out[Key(name, kv...)] = v
		}
	}
	return out, nil
}

// Key names one sample: the metric name and its labels, given as name,
// value pairs in any order, as name{a="x",b="y"} with the labels sorted.
func Key(name string, labels ...string) string {
	var ls []string
	for i := 0; i+1 < len(labels); i += 2 {
		ls = append(ls, labels[i]+"="+`"`+labels[i+1]+`"`)
	}
	slices.Sort(ls)
	return name + "{" + strings.Join(ls, ",") + "}"
}
