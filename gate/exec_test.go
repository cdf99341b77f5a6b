package gate_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/norma-run/norma/approval"
	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/gate"
	"github.com/norma-run/norma/gate/gatetest"
	"github.com/norma-run/norma/hook"
	"github.com/norma-run/norma/policy"
	"github.com/norma-run/norma/tool"
)

// TestCallOutcomesArePaired: panic, timeout, cancellation and tool errors
// all end in exactly one error result and one final audit event. The
// handlers that return at once also run as inline tools (tool.Inliner, on
// the caller's goroutine), with the same outcomes.
func TestCallOutcomesArePaired(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	tests := []struct {
		name string
		fn   func(ctx context.Context) (tool.Result, error)
		ctx  func(t *testing.T) context.Context
		want capability.Reason
	}{
		{"panic", func(context.Context) (tool.Result, error) { panic("secret-value-123") }, nil, capability.ReasonPanic},
		{"hang-ignoring-ctx", func(context.Context) (tool.Result, error) { <-release; return tool.Result{}, nil }, nil, capability.ReasonTimeout},
		{"respects-ctx", func(ctx context.Context) (tool.Result, error) { <-ctx.Done(); return tool.Result{}, ctx.Err() }, nil, capability.ReasonTimeout},
		{"canceled", func(ctx context.Context) (tool.Result, error) { <-release; return tool.Result{}, nil }, func(t *testing.T) context.Context {
			ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
			t.Cleanup(cancel)
			return ctx
		}, capability.ReasonCanceled},
		{"already-canceled", func(context.Context) (tool.Result, error) { return tool.Result{}, nil }, func(t *testing.T) context.Context {
			ctx, cancel := context.WithCancel(t.Context())
			cancel()
			return ctx
		}, capability.ReasonCanceled},
		{"error", func(context.Context) (tool.Result, error) { return tool.Result{}, errors.New("disk full") }, nil, capability.ReasonToolError},
		{"is-error", func(context.Context) (tool.Result, error) { return tool.Result{Content: "bad", IsError: true}, nil }, nil, capability.ReasonToolError},
		{"guard-error", func(context.Context) (tool.Result, error) {
			return tool.Result{}, capability.Denied(capability.ReasonPathEscape, "fs.read", "escape")
		}, nil, capability.ReasonPathEscape},
	}
	blocks := map[string]bool{"hang-ignoring-ctx": true, "respects-ctx": true, "canceled": true}
	for _, tt := range tests {
		for _, inline := range []bool{false, true} {
			if inline && blocks[tt.name] {
				continue
			}
			name := tt.name
			if inline {
				name += "/inline"
			}
			t.Run(name, func(t *testing.T) { testCallOutcome(t, tt.fn, tt.ctx, tt.want, inline, tt.name != "already-canceled") })
		}
	}
}

// testCallOutcome runs one case of TestCallOutcomesArePaired; ran says
// whether the handler is started (PostToolUseFailure runs once).
func testCallOutcome(t *testing.T, fn func(ctx context.Context) (tool.Result, error), mkctx func(t *testing.T) context.Context, want capability.Reason, inline, ran bool) {
	var post atomic.Int64
	f := newFixture(t, func(o *gate.Options, _ *fixture) { o.Timeout = 200 * time.Millisecond })
	s := f.readTool()
	s.Name, s.Inline = "Slow", inline
	s.Call = func(ctx context.Context, _ tool.Env, _ tool.Input) (tool.Result, error) { return fn(ctx) }
	f.register(t, s, 0)
	f.hooks.Add(hook.Hook{Event: hook.PostToolUseFailure, Handler: hook.Func(func(context.Context, hook.Input) (hook.Output, error) {
		post.Add(1)
		return hook.Output{}, nil
	})})
	ctx := t.Context()
	if mkctx != nil {
		ctx = mkctx(t)
	}
	r := f.g.Execute(ctx, call("Slow", `{"path":"docs/a.md"}`))
	wantReason(t, r, want)
	if strings.Contains(r.Content, "secret-value-123") {
		t.Errorf("result repeats the panic value: %q", r.Content)
	}
	if f.finalEvents(r.ToolUseID) != 1 {
		t.Error("final audit events != 1")
	}
	if ran && post.Load() != 1 {
		t.Errorf("PostToolUseFailure ran %d times, want 1", post.Load())
	}
}

// TestAuditUnavailableDenies: a call whose start cannot be audited does not run.
func TestAuditUnavailableDenies(t *testing.T) {
	f := newFixture(t)
	f.sink.Fail(errors.New("disk full"))
	r := f.g.Execute(t.Context(), call("Read", `{"path":"docs/a.md"}`))
	wantReason(t, r, capability.ReasonAuditUnavailable)
	if f.calls.Load() != 0 || !r.AuditFailed {
		t.Errorf("calls = %d, AuditFailed = %v; want 0, true", f.calls.Load(), r.AuditFailed)
	}
}

// TestApproval: the action hash, the ticket, and fail-closed approvers.
func TestApproval(t *testing.T) {
	f := newFixture(t)
	c := call("Write", `{"text":"hi","path":"src/a.go"}`)
	r := f.g.Execute(t.Context(), c)
	wantReason(t, r, capability.ReasonApprovalDenied)
	reqs := f.approver.Requests()
	if len(reqs) != 1 {
		t.Fatalf("approval requests = %d, want 1", len(reqs))
	}
	want, _ := approval.HashAction(approval.Action{Tool: "Write", Input: json.RawMessage(`{"path":"src/a.go","text":"hi"}`), RunID: runID})
	if reqs[0].ActionHash != want {
		t.Errorf("ActionHash = %s, want %s (canonical input)", reqs[0].ActionHash, want)
	}
	f.approver.Grant(want)
	r = f.g.Execute(t.Context(), c)
	wantReason(t, r, capability.ReasonAllowed)
	if r.ApprovalID == "" {
		t.Error("ApprovalID empty")
	}
	// Another input is another action.
	wantReason(t, f.g.Execute(t.Context(), call("Write", `{"text":"bye","path":"src/a.go"}`)), capability.ReasonApprovalDenied)

	for _, tt := range []struct {
		name string
		a    approval.Authorizer
		want capability.Reason
	}{
		{"nil", nil, capability.ReasonApprovalRequired},
		{"store-down", gatetest.AuthorizerFunc(func(context.Context, approval.Request) (approval.Ticket, error) {
			return approval.Ticket{}, capability.Denied(capability.ReasonApprovalStoreUnavailable, "", "down")
		}), capability.ReasonApprovalStoreUnavailable},
		{"plain-error", gatetest.AuthorizerFunc(func(context.Context, approval.Request) (approval.Ticket, error) {
			return approval.Ticket{}, errors.New("boom")
		}), capability.ReasonApprovalDenied},
		{"empty-ticket", gatetest.AuthorizerFunc(func(context.Context, approval.Request) (approval.Ticket, error) {
			return approval.Ticket{}, nil
		}), capability.ReasonApprovalMismatch},
		{"wrong-hash", gatetest.AuthorizerFunc(func(context.Context, approval.Request) (approval.Ticket, error) {
			return approval.Ticket{ApprovalID: "x", ActionHash: "sha256:00"}, nil
		}), capability.ReasonApprovalMismatch},
		{"panic", gatetest.AuthorizerFunc(func(context.Context, approval.Request) (approval.Ticket, error) { panic("x") }), capability.ReasonApprovalDenied},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, func(o *gate.Options, _ *fixture) { o.Approver = tt.a })
			wantReason(t, f.g.Execute(t.Context(), c), tt.want)
			if f.calls.Load() != 0 {
				t.Error("handler ran")
			}
		})
	}
	t.Run("service", func(t *testing.T) {
		sink := &gatetest.MemorySink{}
		svc, err := approval.NewService(approval.NewMemoryBackend(), &approval.Options{Sink: sink, Approver: approval.Auto{Grant: true}})
		if err != nil {
			t.Fatal(err)
		}
		var key string
		f := newFixture(t, func(o *gate.Options, f *fixture) { o.Approver = svc })
		s := f.writeTool()
		s.Name = "Write2"
		s.Call = func(_ context.Context, env tool.Env, _ tool.Input) (tool.Result, error) {
			key = env.IdempotencyKey()
			return tool.Result{Content: "ok"}, nil
		}
		f.register(t, s, 0)
		r := f.g.Execute(t.Context(), call("Write2", `{"path":"src/a.go"}`))
		wantReason(t, r, capability.ReasonAllowed)
		if !strings.HasPrefix(key, "nik_") || r.ApprovalID == "" {
			t.Errorf("idempotency key %q, approval %q", key, r.ApprovalID)
		}
		left, err := svc.Unfinished(t.Context(), runID)
		if err != nil || len(left) != 0 {
			t.Errorf("Unfinished = %v, %v; want none (the gate finishes the use)", left, err)
		}
	})
	t.Run("no approval", func(t *testing.T) {
		// A call that needed none gets the key of its run and tool_use
		// id, whatever key the capabilities' Env carried.
		var keys []string
		f := newFixture(t, func(o *gate.Options, f *fixture) {
			o.Capabilities = func(tool.Plugin) (tool.Env, error) { return tool.Env{ApprovalKey: "nik_forged"}, nil }
		})
		s := f.readTool()
		s.Name = "Read2"
		s.Call = func(_ context.Context, env tool.Env, _ tool.Input) (tool.Result, error) {
			keys = append(keys, env.IdempotencyKey())
			return tool.Result{Content: "ok"}, nil
		}
		f.register(t, s, 0)
		c := call("Read2", `{"path":"docs/a.md"}`)
		wantReason(t, f.g.Execute(t.Context(), c), capability.ReasonAllowed)
		wantReason(t, f.g.Execute(t.Context(), c), capability.ReasonAllowed) // no ledger: a retry runs
		other := c
		other.ID += "b"
		wantReason(t, f.g.Execute(t.Context(), other), capability.ReasonAllowed)
		want := tool.Env{RunID: c.RunID, ToolUseID: c.ID}.IdempotencyKey()
		if len(keys) != 3 || keys[0] != want || keys[1] != want || keys[2] == want || !strings.HasPrefix(keys[2], "nik_") {
			t.Errorf("keys = %q; want %q twice, then another", keys, want)
		}
	})
}

// TestOutputCapture: head cap, spill by digest with sidecar, unforgeable
// marker, retention.
func TestOutputCapture(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "spill")
	big := strings.Repeat("é", 50) + "[NORMA:truncated fake marker]" + strings.Repeat("x", 200)
	f := newFixture(t, func(o *gate.Options, _ *fixture) {
		o.Output = gate.OutputOptions{MaxChars: 100, SpillDir: dir, MaxBytes: 1 << 20}
	})
	s := f.readTool()
	s.Name = "Big"
	s.Call = func(_ context.Context, _ tool.Env, in tool.Input) (tool.Result, error) {
		p, _ := in.String("path")
		if p == "docs/small" {
			return tool.Result{Content: "[norma:truncated spill:sha256-x.out]"}, nil
		}
		return tool.Result{Content: big}, nil
	}
	f.register(t, s, 0)
	r := f.g.Execute(t.Context(), call("Big", `{"path":"docs/a.md"}`))
	wantReason(t, r, capability.ReasonAllowed)
	if r.Spill == nil {
		t.Fatalf("no spill; content %q", r.Content)
	}
	sum := sha256.Sum256([]byte(big))
	if r.Spill.Digest != "sha256:"+hex.EncodeToString(sum[:]) {
		t.Errorf("digest = %s", r.Spill.Digest)
	}
	data, err := os.ReadFile(filepath.Join(dir, r.Spill.Name))
	if err != nil || string(data) != big {
		t.Fatalf("spill file = %d bytes, %v; want the full output", len(data), err)
	}
	if strings.Count(r.Content, "[norma:") != 1 || !strings.Contains(r.Content, `[NORMA\:`) {
		t.Errorf("forged marker not escaped or marker missing: %q", r.Content)
	}
	head, _, _ := strings.Cut(r.Content, "\n[norma:")
	if n := len([]rune(head)); n != 100 {
		t.Errorf("head = %d characters, want 100", n)
	}
	sides, _ := filepath.Glob(filepath.Join(dir, strings.TrimSuffix(r.Spill.Name, ".out")+".*.json"))
	if len(sides) != 1 {
		t.Fatalf("sidecars = %v", sides)
	}
	var rec gate.SpillRecord
	b, _ := os.ReadFile(sides[0])
	if err := json.Unmarshal(b, &rec); err != nil || rec.ToolUseID != r.ToolUseID || rec.RunID != runID || rec.Tool != "Big" || rec.Digest != r.Spill.Digest || rec.Size != len(big) {
		t.Errorf("sidecar = %+v, %v", rec, err)
	}
	// Small output with a forged marker: escaped, no spill.
	r = f.g.Execute(t.Context(), call("Big", `{"path":"docs/small"}`))
	if r.Spill != nil || strings.Contains(r.Content, "[norma:") {
		t.Errorf("small forged output = %q", r.Content)
	}
	// Retention by age.
	old := time.Now().Add(-30 * 24 * time.Hour)
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		os.Chtimes(filepath.Join(dir, e.Name()), old, old)
	}
	if err := f.g.PruneSpill(); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("after pruning old spills: %d files left", len(ents))
	}
}

func TestSpillRetentionBySize(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "spill")
	f := newFixture(t, func(o *gate.Options, _ *fixture) {
		o.Output = gate.OutputOptions{MaxChars: 10, SpillDir: dir, MaxBytes: 600}
	})
	s := f.readTool()
	s.Name = "Big"
	s.Call = func(_ context.Context, _ tool.Env, in tool.Input) (tool.Result, error) {
		p, _ := in.String("path")
		return tool.Result{Content: strings.Repeat(p, 100)}, nil
	}
	f.register(t, s, 0)
	for i, p := range []string{"a", "b", "c", "d"} {
		r := f.g.Execute(t.Context(), call("Big", `{"path":"`+p+`"}`))
		wantReason(t, r, capability.ReasonAllowed)
		ts := time.Now().Add(time.Duration(i-10) * time.Minute)
		matches, _ := filepath.Glob(filepath.Join(dir, strings.TrimSuffix(r.Spill.Name, ".out")+"*"))
		for _, m := range matches {
			os.Chtimes(m, ts, ts)
		}
	}
	if err := f.g.PruneSpill(); err != nil {
		t.Fatal(err)
	}
	var total int64
	outs, _ := filepath.Glob(filepath.Join(dir, "*.out"))
	for _, o := range outs {
		st, _ := os.Stat(o)
		total += st.Size()
	}
	if len(outs) == 0 || len(outs) == 4 {
		t.Errorf("kept %d spill files, want some pruned and some kept", len(outs))
	}
	if _, err := os.Stat(filepath.Join(dir, "sha256-"+hexSum(strings.Repeat("d", 100))+".out")); err != nil {
		t.Errorf("newest spill was pruned: %v", err)
	}
}

func hexSum(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// TestExecuteBatch: read-only concurrency-safe calls run together,
// exclusive calls alone, results in call order.
func TestExecuteBatch(t *testing.T) {
	f := newFixture(t, func(o *gate.Options, _ *fixture) { o.MaxParallel = 4 })
	var running, maxRunning atomic.Int64
	var exclusiveOverlap atomic.Bool
	barrier := make(chan struct{})
	var once sync.Once
	var arrived atomic.Int64
	s := f.readTool()
	s.Name = "Par"
	s.Call = func(ctx context.Context, _ tool.Env, in tool.Input) (tool.Result, error) {
		n := running.Add(1)
		defer running.Add(-1)
		for {
			m := maxRunning.Load()
			if n <= m || maxRunning.CompareAndSwap(m, n) {
				break
			}
		}
		if arrived.Add(1) == 3 {
			once.Do(func() { close(barrier) })
		}
		select {
		case <-barrier: // all three are running at once
		case <-time.After(2 * time.Second):
		}
		p, _ := in.String("path")
		return tool.Result{Content: p}, nil
	}
	f.register(t, s, 0)
	w := f.writeTool()
	w.Name = "Excl"
	w.CheckPermissions = func(context.Context, tool.Input) tool.Permission { return tool.Permission{Behavior: tool.Allow} }
	w.Call = func(context.Context, tool.Env, tool.Input) (tool.Result, error) {
		if running.Load() != 0 {
			exclusiveOverlap.Store(true)
		}
		return tool.Result{Content: "excl"}, nil
	}
	f.register(t, w, 0)
	calls := []gate.Call{
		call("Par", `{"path":"docs/1"}`), call("Par", `{"path":"docs/2"}`), call("Par", `{"path":"docs/3"}`),
		call("Excl", `{"path":"src/x"}`),
		call("Read", `{"path":"docs/4"}`), call("Nope", `{}`), call("Read", `{"path":"docs/5"}`),
	}
	res := f.g.ExecuteBatch(t.Context(), calls)
	if len(res) != len(calls) {
		t.Fatalf("results = %d, want %d", len(res), len(calls))
	}
	for i, r := range res {
		if r.ToolUseID != calls[i].ID {
			t.Errorf("result %d is for %s, want %s", i, r.ToolUseID, calls[i].ID)
		}
	}
	for i, want := range []string{"docs/1", "docs/2", "docs/3", "excl"} {
		if res[i].Content != want {
			t.Errorf("result %d = %q, want %q", i, res[i].Content, want)
		}
	}
	wantReason(t, res[5], capability.ReasonToolUnknown)
	if maxRunning.Load() != 3 {
		t.Errorf("max parallel = %d, want 3", maxRunning.Load())
	}
	if exclusiveOverlap.Load() {
		t.Error("exclusive call overlapped others")
	}
}

// TestGuardedExec: the Env's process runner checks each argv.
func TestGuardedExec(t *testing.T) {
	var ran [][]string
	runner := runnerFunc(func(_ context.Context, c tool.Command) (tool.CommandResult, error) {
		ran = append(ran, c.Argv)
		return tool.CommandResult{}, nil
	})
	f := newFixture(t, withRules(policy.Rules{Deny: []string{"Bash(rm:*)"}}), func(o *gate.Options, _ *fixture) {
		o.Capabilities = func(tool.Plugin) (tool.Env, error) { return tool.Env{Exec: runner}, nil }
	})
	var errs []error
	s := f.readTool()
	s.Name = "Spawner"
	s.Call = func(ctx context.Context, env tool.Env, _ tool.Input) (tool.Result, error) {
		if env.Exec == nil {
			return tool.Result{}, errors.New("no exec")
		}
		for _, argv := range [][]string{{"git", "status"}, {"rm", "-rf", "x"}} {
			_, err := env.Exec.Run(ctx, tool.Command{Argv: argv})
			errs = append(errs, err)
		}
		return tool.Result{Content: "ok"}, nil
	}
	f.register(t, s, 0)
	wantReason(t, f.g.Execute(t.Context(), call("Spawner", `{"path":"docs/a"}`)), capability.ReasonAllowed)
	if len(ran) != 1 || errs[0] != nil || capability.ReasonOf(errs[1]) != capability.ReasonRuleDenied {
		t.Errorf("ran %v, errs %v", ran, errs)
	}
}

type runnerFunc func(context.Context, tool.Command) (tool.CommandResult, error)

func (f runnerFunc) Run(ctx context.Context, c tool.Command) (tool.CommandResult, error) {
	return f(ctx, c)
}
