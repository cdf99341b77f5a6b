package metrics

import (
	"bufio"
	"cmp"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// counterVec is a family of counters, one per combination of label
// values: the little of a Prometheus client this package needs. It is
// not client_golang because that module's package initializers (a default
// registry with Go and process collectors, procfs, the protobuf runtime)
// would run at every start of norma, which is also the server that serves
// /metrics (about 1 ms, measured; issue 20). The exposition it writes is
// checked with Prometheus's own text parser (expfmt) in the tests.
type counterVec struct {
	name, help string
	labels     []string
	mu         sync.Mutex
	series     map[string]*series // by the label values joined with sep
}

type series struct {
	values []string
	n      uint64
}

// sep joins label values into a map key; it is no byte of valid UTF-8.
const sep = "\xff"

func newCounterVec(name, help string, labels ...string) *counterVec {
	return &counterVec{name: name, help: help, labels: labels, series: map[string]*series{}}
}

// inc adds one to the counter of values (one per label, in order).
func (c *counterVec) inc(values ...string) {
	if len(values) != len(c.labels) {
		panic("metrics: " + c.name + ": wrong number of label values")
	}
	k := strings.Join(values, sep)
	c.mu.Lock()
	s := c.series[k]
	if s == nil {
		s = &series{values: slices.Clone(values)}
		c.series[k] = s
	}
	s.n++
	c.mu.Unlock()
}

// write writes the family in the Prometheus text exposition format
// (version 0.0.4): HELP, TYPE, then one line per series in label order.
// A family without labels always has its one sample, zero or not.
func (c *counterVec) write(w *bufio.Writer) {
	c.mu.Lock()
	ss := make([]series, 0, len(c.series))
	for _, s := range c.series {
		ss = append(ss, *s)
	}
	c.mu.Unlock()
	if len(c.labels) == 0 && len(ss) == 0 {
		ss = append(ss, series{})
	}
	slices.SortFunc(ss, func(a, b series) int { return cmp.Compare(strings.Join(a.values, sep), strings.Join(b.values, sep)) })
	w.WriteString("# HELP " + c.name + " " + escapeHelp(c.help) + "\n")
	w.WriteString("# TYPE " + c.name + " counter\n")
	for _, s := range ss {
		w.WriteString(c.name)
		if len(c.labels) > 0 {
			w.WriteByte('{')
			for i, l := range c.labels {
				if i > 0 {
					w.WriteByte(',')
				}
				w.WriteString(l + `="` + escapeLabel(s.values[i]) + `"`)
			}
			w.WriteByte('}')
		}
		w.WriteString(" " + strconv.FormatUint(s.n, 10) + "\n")
	}
}

var (
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
	labelEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)
)

func escapeHelp(s string) string  { return helpEscaper.Replace(s) }
func escapeLabel(s string) string { return labelEscaper.Replace(s) }

// writeText writes every family, sorted by name.
func writeText(out io.Writer, fams []*counterVec) error {
	fams = slices.Clone(fams)
	slices.SortFunc(fams, func(a, b *counterVec) int { return cmp.Compare(a.name, b.name) })
	w := bufio.NewWriter(out)
	for _, f := range fams {
		f.write(w)
	}
	return w.Flush()
}
