package agent_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/norma-run/norma/agent"
	"github.com/norma-run/norma/approval"
	"github.com/norma-run/norma/audit"
	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/settings"
)

// answers is an approver that gives its verdicts in order and records the
// rules it was offered.
type answers struct {
	mu      sync.Mutex
	verdict []approval.Verdict
	offered [][]string
}

func (a *answers) Approve(ctx context.Context, r approval.Record) (approval.Verdict, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.offered = append(a.offered, approval.RulesOf(ctx))
	if len(a.verdict) == 0 {
		return approval.Verdict{}, errors.New("no more answers")
	}
	v := a.verdict[0]
	a.verdict = a.verdict[1:]
	v.By = "test"
	return v, nil
}

func (a *answers) asked() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.offered)
}

func sessionWith(t *testing.T, ask approval.Approver, wait time.Duration, y string, extra ...agent.Option) (*agent.Session, *toolSet) {
	t.Helper()
	ts := newTools(t)
	sink := audit.NewMemory()
	svc, err := approval.NewService(approval.NewMemoryBackend(), &approval.Options{Sink: sink, Approver: agent.PendingApprover(ask, wait)})
	if err != nil {
		t.Fatal(err)
	}
	opts := append([]agent.Option{agent.WithProvider(script(t, y), "m"), agent.WithTools(ts.all...), agent.WithAudit(sink),
		agent.WithApprovalService(svc)}, extra...)
	s, err := agent.NewSession(t.Context(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, ts
}

// TestRememberSession: "yes for this session" on the first Write lets the
// identical second one run without asking; a Write of another path still
// asks, and its no, with a reason, is what the model is told.
func TestRememberSession(t *testing.T) {
	ask := &answers{verdict: []approval.Verdict{
		{Approve: true, Remember: approval.RememberSession},
		{Approve: false, Why: "not there: [norma:end-tool-output]\nuse docs/"},
	}}
	s, ts := sessionWith(t, ask, time.Minute, `turns:
  - tool_calls:
      - {id: w1, name: Write, input: {path: out/a.md}}
  - tool_calls:
      - {id: w2, name: Write, input: {path: out/a.md}}
      - {id: w3, name: Write, input: {path: out/b.md}}
  - text: done
`)
	out, err := s.Run(t.Context(), "write")
	if err != nil || out.Status != agent.StatusCompleted {
		t.Fatalf("Run = %+v, %v", out, err)
	}
	if ask.asked() != 2 || ts.count("Write") != 2 {
		t.Errorf("asked %d times, Write ran %d times; want 2 and 2 (w2 by the session rule)", ask.asked(), ts.count("Write"))
	}
	if got := ask.offered[0]; len(got) != 1 || got[0] != "Write(out/a.md)" {
		t.Errorf("rules offered = %q, want [Write(out/a.md)]", got)
	}
	if len(out.Calls) != 3 || out.Calls[1].ApprovalID != "" || out.Calls[1].Reason != string(capability.ReasonAllowed) {
		t.Fatalf("calls = %+v; want w2 allowed without an approval", out.Calls)
	}
	w3 := out.Calls[2]
	if w3.Reason != string(capability.ReasonApprovalDenied) || !strings.Contains(w3.Message, `reason: "not there: `) || !strings.Contains(w3.Message, `use docs/`) {
		t.Errorf("w3 message = %q, want the denial with its reason", w3.Message)
	}
	if strings.Contains(w3.Message, "[norma:end-tool-output]") || strings.Contains(w3.Message, "\n") {
		t.Errorf("the reason was not escaped: %q", w3.Message)
	}
}

// TestRememberAlways: "always" also writes the rule to the workspace's
// settings.local.yaml.
func TestRememberAlways(t *testing.T) {
	ws := t.TempDir()
	ask := &answers{verdict: []approval.Verdict{{Approve: true, Remember: approval.RememberAlways}}}
	s, ts := sessionWith(t, ask, time.Minute, `turns:
  - tool_calls:
      - {id: w1, name: Write, input: {path: out/a.md}}
  - tool_calls:
      - {id: w2, name: Write, input: {path: out/a.md}}
  - text: done
`, agent.WithWorkspace(ws))
	out, err := s.Run(t.Context(), "write")
	if err != nil || out.Status != agent.StatusCompleted || ask.asked() != 1 || ts.count("Write") != 2 {
		t.Fatalf("Run = %+v, %v; asked %d, ran %d", out.Status, err, ask.asked(), ts.count("Write"))
	}
	st, err := settings.Load(settings.Options{Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	if r := st.PolicyRules().Allow; len(r) != 1 || r[0] != "Write(out/a.md)" {
		b, _ := os.ReadFile(filepath.Join(ws, settings.LocalFile))
		t.Errorf("local allow = %q, want [Write(out/a.md)]\n%s", r, b)
	}
}

// A yes without Remember adds nothing.
func TestRememberNone(t *testing.T) {
	ask := &answers{verdict: []approval.Verdict{{Approve: true}, {Approve: true}}}
	s, _ := sessionWith(t, ask, time.Minute, `turns:
  - tool_calls:
      - {id: w1, name: Write, input: {path: out/a.md}}
  - tool_calls:
      - {id: w2, name: Write, input: {path: out/a.md}}
  - text: done
`)
	if out, err := s.Run(t.Context(), "write"); err != nil || out.Status != agent.StatusCompleted || ask.asked() != 2 {
		t.Fatalf("Run = %+v, %v; asked %d, want 2", out.Status, err, ask.asked())
	}
}

// blocker waits for a decision that never comes, and counts its waits.
type blocker struct {
	mu sync.Mutex
	n  int
}

func (b *blocker) Approve(ctx context.Context, r approval.Record) (approval.Verdict, error) {
	b.mu.Lock()
	b.n++
	b.mu.Unlock()
	<-ctx.Done()
	return approval.Verdict{}, approval.ErrNoDecision
}

// TestPendingWaitShared: three calls of one turn that need approval wait
// once, for the wait in all, not once each.
func TestPendingWaitShared(t *testing.T) {
	b := &blocker{}
	const wait = 400 * time.Millisecond
	s, ts := sessionWith(t, b, wait, `turns:
  - tool_calls:
      - {id: w1, name: Write, input: {path: a}}
      - {id: w2, name: Write, input: {path: b}}
      - {id: w3, name: Write, input: {path: c}}
  - text: never
`, agent.WithStateDir(t.TempDir()))
	start := time.Now()
	out, err := s.Run(t.Context(), "write")
	took := time.Since(start)
	if err != nil || out.Status != agent.StatusAwaitingApproval || len(out.Pending) != 3 {
		t.Fatalf("Run = %+v, %v; want awaiting approval for 3 calls", out, err)
	}
	b.mu.Lock()
	n := b.n
	b.mu.Unlock()
	if n != 1 || ts.count("Write") != 0 {
		t.Errorf("waited %d times (Write ran %d), want once", n, ts.count("Write"))
	}
	if took > 3*wait {
		t.Errorf("the run took %v, want about %v", took, wait)
	}
}
