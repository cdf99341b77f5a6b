package gate_test

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/norma-run/norma/audit"
	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/gate"
	"github.com/norma-run/norma/gate/gatetest"
	"github.com/norma-run/norma/internal/jsonschema"
	"github.com/norma-run/norma/secret"
	"github.com/norma-run/norma/tool"
)

// benchSchema is the small object schema of the benchmarks: a path with a
// pattern, a string with maxLength, an enum.
const benchSchema = `{
  "type":"object","additionalProperties":false,"required":["path","mode"],
  "properties":{
    "path":{"type":"string","pattern":"^[A-Za-z0-9_./-]+$","maxLength":256},
    "title":{"type":"string","maxLength":80},
    "mode":{"enum":["summary","full","raw"]}
  }}`

var benchInput = json.RawMessage(`{"path":"docs/guide/intro.md","title":"Introduction to the guide","mode":"summary"}`)

// noopSpec is a tool whose handler returns at once; it says so (Inline),
// as an in-memory built-in tool does.
func noopSpec() tool.Spec {
	return tool.Spec{
		Name:             "Noop",
		Inline:           true,
		Schema:           json.RawMessage(benchSchema),
		ReadOnly:         func(tool.Input) bool { return true },
		ConcurrencySafe:  func(tool.Input) bool { return true },
		CheckPermissions: func(context.Context, tool.Input) tool.Permission { return tool.Permission{Behavior: tool.Allow} },
		Accesses: func(in tool.Input) ([]tool.Access, error) {
			p, _ := in.String("path")
			return []tool.Access{{Kind: capability.FSRead, Path: p}}, nil
		},
		Call: func(context.Context, tool.Env, tool.Input) (tool.Result, error) {
			return tool.Result{Content: "ok"}, nil
		},
	}
}

func benchGate(b *testing.B) *gate.Gate {
	b.Helper()
	return benchGateWith(b, &gatetest.MemorySink{Max: 1})
}

func benchGateWith(b *testing.B, sink audit.Sink) *gate.Gate {
	b.Helper()
	reg := tool.NewRegistry(nil)
	if err := reg.Register(tool.Registration{Tool: tool.MustBuild(noopSpec())}); err != nil {
		b.Fatal(err)
	}
	goSpec := noopSpec()
	goSpec.Name, goSpec.Inline = "NoopGo", false
	if err := reg.Register(tool.Registration{Tool: tool.MustBuild(goSpec)}); err != nil {
		b.Fatal(err)
	}
	set := testSet(b)
	g, err := gate.New(gate.Options{
		Registry: reg,
		Policy:   func(tool.Plugin) (capability.Decider, error) { return set, nil },
		Audit:    sink,
	})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := reg.OpenRun(runID, user); err != nil {
		b.Fatal(err)
	}
	// Warm the schema cache and check the path works.
	if r := g.Execute(b.Context(), gate.Call{ID: "warm", RunID: runID, Principals: []string{user}, Tool: "Noop", Input: benchInput}); r.IsError {
		b.Fatalf("warm-up call failed: %s %s", r.Reason, r.Content)
	}
	return g
}

// BenchmarkGateNoop is one call through all nine steps: lookup, schema,
// policy, approval (not needed), hooks (none), the call, output capture, no
// post hooks, and two audit events to an in-memory sink.
func BenchmarkGateNoop(b *testing.B) { benchNoop(b, benchGate(b)) }

// benchNoop calls the Noop tool through g, reporting allocations and CPU.
func benchNoop(b *testing.B, g *gate.Gate) {
	c := gate.Call{ID: "toolu_bench", RunID: runID, Principals: []string{user}, Tool: "Noop", Input: benchInput}
	ctx := b.Context()
	b.ReportAllocs()
	cpu := startCPU()
	for b.Loop() {
		if r := g.Execute(ctx, c); r.IsError {
			b.Fatal(r.Content)
		}
	}
	cpu.report(b)
}

// BenchmarkGateNoopLog is BenchmarkGateNoop with the audit log a run
// writes (audit.Log: the secret redactor over every field, the canonical
// encoding, the hash chain, the committer goroutine) over a backend that
// keeps only the chain's head: the durable path's CPU without the disk.
func BenchmarkGateNoopLog(b *testing.B) {
	l, err := audit.Open(&headBackend{}, &audit.Options{Redactor: secret.NewRedactor()})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	benchNoop(b, benchGateWith(b, l))
}

// headBackend is an audit.Backend that appends by keeping the head only;
// the benchmark calls nothing else.
type headBackend struct {
	audit.Backend
	mu   sync.Mutex
	head audit.Head
}

func (h *headBackend) AppendAudit(ctx context.Context, link func(audit.Head) ([]audit.Row, error)) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	rows, err := link(h.head)
	if err == nil && len(rows) > 0 {
		h.head = audit.Head{Seq: rows[len(rows)-1].Seq, Hash: rows[len(rows)-1].Hash}
	}
	return err
}

// BenchmarkGateNoopGoroutine is BenchmarkGateNoop with a handler that
// does not say it never blocks: it runs on its own goroutine, which lets
// Execute return at the deadline even if the handler ignores its context.
func BenchmarkGateNoopGoroutine(b *testing.B) {
	g := benchGate(b)
	c := gate.Call{ID: "toolu_bench", RunID: runID, Principals: []string{user}, Tool: "NoopGo", Input: benchInput}
	ctx := b.Context()
	b.ReportAllocs()
	cpu := startCPU()
	for b.Loop() {
		if r := g.Execute(ctx, c); r.IsError {
			b.Fatal(r.Content)
		}
	}
	cpu.report(b)
}

// BenchmarkSchemaOnly is the unavoidable part of BenchmarkGateNoop:
// decoding the same raw input and validating it with the same compiled
// schema.
func BenchmarkSchemaOnly(b *testing.B) {
	s, err := gate.CompileSchema("Noop", []byte(benchSchema))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	cpu := startCPU()
	for b.Loop() {
		in, err := tool.ParseInput(benchInput)
		if err != nil {
			b.Fatal(err)
		}
		if v := s.Validate(in); v != nil {
			b.Fatal(v)
		}
	}
	cpu.report(b)
}

// BenchmarkSchemaOnlyStdlib is BenchmarkSchemaOnly with the decoding most
// JSON Schema users do (jsonschema.UnmarshalJSON, i.e. encoding/json with
// UseNumber), which the gate does not use: its strict decoder is faster and
// also refuses duplicate keys. For comparison only.
func BenchmarkSchemaOnlyStdlib(b *testing.B) {
	s, err := gate.CompileSchema("Noop", []byte(benchSchema))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	cpu := startCPU()
	for b.Loop() {
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader(benchInput))
		if err != nil {
			b.Fatal(err)
		}
		if err := s.ValidateValue(v); err != nil {
			b.Fatal(err)
		}
	}
	cpu.report(b)
}

// BenchmarkGateParallel runs BenchmarkGateNoop's call from GOMAXPROCS
// goroutines; run with -cpu 1,2 to see throughput follow the cores.
func BenchmarkGateParallel(b *testing.B) {
	g := benchGate(b)
	ctx := b.Context()
	b.ReportAllocs()
	cpu := startCPU()
	defer cpu.report(b)
	b.RunParallel(func(pb *testing.PB) {
		c := gate.Call{ID: "toolu_bench", RunID: runID, Principals: []string{user}, Tool: "Noop", Input: benchInput}
		for pb.Next() {
			if r := g.Execute(ctx, c); r.IsError {
				b.Error(r.Content)
				return
			}
		}
	})
}

// cpuClock measures the process's CPU time (user + system, every thread,
// GC included) across a benchmark loop. On a shared machine wall-clock
// ns/op swings with other load; cpu-ns/op is what the code itself costs,
// and the GateNoop/SchemaOnly ratio is computed from it.
type cpuClock struct{ start time.Duration }

func cpuNow() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func startCPU() cpuClock { return cpuClock{start: cpuNow()} }

func (c cpuClock) report(b *testing.B) {
	if b.N > 0 {
		b.ReportMetric(float64(cpuNow()-c.start)/float64(b.N), "cpu-ns/op")
	}
}
