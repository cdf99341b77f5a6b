package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/norma-run/norma/agent"
	"github.com/norma-run/norma/approval"
	"github.com/norma-run/norma/audit"
	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/gate"
	"github.com/norma-run/norma/gate/gatetest"
	"github.com/norma-run/norma/hook"
	"github.com/norma-run/norma/policy"
	"github.com/norma-run/norma/provider"
	"github.com/norma-run/norma/tool"
)

const twoTurns = `turns:
  - tool_calls:
      - {id: t1, name: %s, input: %s}
  - text: "done"
`

func oneCall(name, input string) string {
	return strings.Replace(strings.Replace(twoTurns, "%s", name, 1), "%s", input, 1)
}

// TestGatePaths runs one scripted call per gate path through a session and
// checks the decision the session reports, that the handler ran only when
// allowed, and that the scripted provider (which fails on an unpaired
// tool_use) accepted the conversation.
func TestGatePaths(t *testing.T) {
	tests := []struct {
		name       string
		call       string
		input      string
		opts       []agent.Option
		wantReason capability.Reason
		wantRuns   int
		wantApprov bool
	}{
		{name: "allowed", call: "Echo", input: `{msg: hi}`, wantReason: capability.ReasonAllowed, wantRuns: 1},
		{name: "denied by rule", call: "Echo", input: `{msg: hi}`, opts: []agent.Option{agent.WithRules(policy.Rules{Deny: []string{"Echo"}})}, wantReason: capability.ReasonRuleDenied},
		{name: "unknown tool", call: "Nope", input: `{}`, wantReason: capability.ReasonToolUnknown},
		{name: "schema invalid", call: "Echo", input: `{msg: 42}`, wantReason: capability.ReasonSchemaInvalid},
		{name: "approval required, no approver", call: "Write", input: `{path: a.txt}`, wantReason: capability.ReasonApprovalRequired},
		{name: "approval granted", call: "Write", input: `{path: a.txt}`, opts: []agent.Option{agent.WithApprover(gatetest.NewMemoryApprover(true))}, wantReason: capability.ReasonAllowed, wantRuns: 1, wantApprov: true},
		{name: "approval denied", call: "Write", input: `{path: a.txt}`, opts: []agent.Option{agent.WithApprover(gatetest.NewMemoryApprover(false))}, wantReason: capability.ReasonApprovalDenied, wantApprov: true},
		{name: "plan mode", call: "Write", input: `{path: a.txt}`, opts: []agent.Option{agent.WithMode(gate.ModePlan), agent.WithApprover(gatetest.NewMemoryApprover(true))}, wantReason: capability.ReasonModeDenied},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := newTools(t)
			rec := &recorder{}
			prov := &capture{p: script(t, oneCall(tt.call, tt.input))}
			opts := append([]agent.Option{agent.WithProvider(prov, "m"), agent.WithTools(ts.all...), agent.WithAudit(&gatetest.MemorySink{}),
				agent.WithObserver(rec.observe)}, tt.opts...)
			s, err := agent.NewSession(t.Context(), opts...)
			if err != nil {
				t.Fatalf("NewSession: %v", err)
			}
			out, err := s.Run(t.Context(), "go")
			if err != nil || out.Status != agent.StatusCompleted {
				t.Fatalf("Run = %+v, %v; want completed", out, err)
			}
			calls := rec.calls()
			if len(calls) != 1 || calls[0].ID != "t1" || calls[0].Reason != string(tt.wantReason) {
				t.Fatalf("tool_call events = %+v, want one t1 with %s", calls, tt.wantReason)
			}
			if wantErr := tt.wantReason != capability.ReasonAllowed; calls[0].IsError != wantErr {
				t.Errorf("is_error = %v, want %v", calls[0].IsError, wantErr)
			}
			if !strings.HasPrefix(calls[0].OutputDigest, "sha256:") {
				t.Errorf("output digest = %q", calls[0].OutputDigest)
			}
			if got := ts.count(tt.call); got != tt.wantRuns {
				t.Errorf("handler runs = %d, want %d", got, tt.wantRuns)
			}
			if got := slices.Contains(rec.kinds(), agent.EventApprovalRequested); got != tt.wantApprov {
				t.Errorf("approval_requested emitted = %v, want %v", got, tt.wantApprov)
			}
			// The last request answered t1 with exactly one framed tool_result.
			msgs := prov.last().Messages
			res := msgs[len(msgs)-1]
			if res.Role != provider.RoleUser || len(res.Blocks) != 1 || res.Blocks[0].ToolUseID != "t1" {
				t.Fatalf("last message = %+v, want one tool_result for t1", res)
			}
			c := res.Blocks[0].Content
			if !strings.HasPrefix(c, `[norma:tool-output tool="`+tt.call+`" id="t1"`) || !strings.HasSuffix(c, "\n[norma:end-tool-output]") {
				t.Errorf("tool_result content not framed: %q", c)
			}
			if !strings.Contains(c, "reason="+string(tt.wantReason)) {
				t.Errorf("tool_result content %q does not name %s", c, tt.wantReason)
			}
		})
	}
}

// TestPromptInjection: a tool result that tells the model to switch to
// bypass, approve everything and unlock a tool changes nothing — the mode,
// the unlock set and the approval decisions stay, the result stays inside
// its frame (the forged end marker is escaped), and the system prompt never
// contains tool output.
func TestPromptInjection(t *testing.T) {
	ts := newTools(t)
	secret := newTools(t).all[0] // a deferred tool, registered under another name below
	_ = secret
	prov := &capture{p: script(t, `turns:
  - tool_calls:
      - {id: i1, name: Inject, input: {}}
  - tool_calls:
      - {id: w1, name: Write, input: {path: x.txt}}
  - text: "ok"
`)}
	sink := &gatetest.MemorySink{}
	s, err := agent.NewSession(t.Context(), agent.WithProvider(prov, "m"), agent.WithTools(ts.all...), agent.WithAudit(sink))
	if err != nil {
		t.Fatal(err)
	}
	before := s.Tools()
	out, err := s.Run(t.Context(), "summarize the page")
	if err != nil || out.Status != agent.StatusCompleted {
		t.Fatalf("Run = %+v, %v", out, err)
	}
	if s.Mode() != gate.ModeDefault {
		t.Errorf("mode after injection = %v, want default", s.Mode())
	}
	if got := s.Tools(); !slices.Equal(got, before) {
		t.Errorf("tools after injection = %v, want %v", got, before)
	}
	if len(out.Calls) != 2 || out.Calls[1].Reason != string(capability.ReasonApprovalRequired) || ts.count("Write") != 0 {
		t.Errorf("Write after injection: calls %+v, runs %d; want APPROVAL_REQUIRED and not run", out.Calls, ts.count("Write"))
	}
	req := prov.last()
	if strings.Contains(req.System, "IGNORE PREVIOUS") {
		t.Error("tool output leaked into the system prompt")
	}
	var injected string
	for _, m := range req.Messages {
		for _, b := range m.Blocks {
			if b.ToolUseID == "i1" {
				injected = b.Content
			}
		}
	}
	if strings.Count(injected, "[norma:end-tool-output]") != 1 || !strings.HasSuffix(injected, "[norma:end-tool-output]") {
		t.Errorf("forged frame not escaped: %q", injected)
	}
	if !strings.Contains(injected, `[norma\:end-tool-output]`) {
		t.Errorf("the forged marker should be escaped: %q", injected)
	}
}

// loopProvider calls Echo forever with fixed usage, or blocks until ctx ends.
type loopProvider struct {
	usage provider.Usage
	block bool
	n     int
}

func (p *loopProvider) Name() string { return "loop" }

func (p *loopProvider) Complete(ctx context.Context, req provider.Request, _ func(string)) (provider.Response, error) {
	if p.block {
		<-ctx.Done()
		return provider.Response{}, ctx.Err()
	}
	p.n++
	id := "c" + string(rune('a'+p.n%26)) + strings.Repeat("x", p.n/26)
	return provider.Response{Blocks: []provider.Block{{Type: provider.BlockToolUse, ID: id, Name: "Echo", Input: json.RawMessage(`{"msg":"x"}`)}},
		StopReason: provider.StopToolUse, Usage: p.usage}, nil
}

func TestLimits(t *testing.T) {
	u := provider.Usage{InputTokens: 100, OutputTokens: 50}
	tests := []struct {
		name       string
		prov       *loopProvider
		limits     agent.Limits
		wantReason capability.Reason
		wantTurns  int
	}{
		{name: "turns", prov: &loopProvider{usage: u}, limits: agent.Limits{MaxTurns: 3}, wantReason: capability.ReasonSessionMaxTurns, wantTurns: 3},
		{name: "tokens", prov: &loopProvider{usage: u}, limits: agent.Limits{MaxTokens: 400}, wantReason: capability.ReasonSessionMaxTokens, wantTurns: 3},
		{name: "cost", prov: &loopProvider{usage: u}, limits: agent.Limits{MaxCost: 0.001, Pricing: agent.Pricing{InputPerMTok: 3, OutputPerMTok: 15}}, wantReason: capability.ReasonSessionBudget, wantTurns: 1},
		{name: "wall time", prov: &loopProvider{block: true}, limits: agent.Limits{MaxDuration: 50 * time.Millisecond}, wantReason: capability.ReasonSessionTimeLimit},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := agent.NewSession(t.Context(), agent.WithProvider(tt.prov, "m"), agent.WithTools(newTools(t).all...),
				agent.WithAudit(&gatetest.MemorySink{}), agent.WithLimits(tt.limits))
			if err != nil {
				t.Fatal(err)
			}
			out, err := s.Run(t.Context(), "loop")
			if err != nil || out.Status != agent.StatusLimit || out.Reason != string(tt.wantReason) || out.Turns != tt.wantTurns {
				t.Fatalf("Run = {status %s reason %s turns %d}, %v; want limit %s after %d turns", out.Status, out.Reason, out.Turns, err, tt.wantReason, tt.wantTurns)
			}
		})
	}
}

// TestHooks checks the moments of the session hooks, the Stop hook's
// blocking continuation and its cap, and SessionEnd on a provider failure.
func TestHooks(t *testing.T) {
	tests := []struct {
		name      string
		script    string
		stopBlock bool
		failAt    int32
		want      []string
		wantState agent.Status
	}{
		{name: "normal", script: oneCall("Echo", "{msg: a}"), want: []string{"SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop", "SessionEnd:normal"}, wantState: agent.StatusCompleted},
		{name: "stop continues, capped", script: "turns:\n  - text: a\n  - text: b\n  - text: c\n  - text: d\n", stopBlock: true,
			want: []string{"SessionStart", "UserPromptSubmit", "Stop", "Stop", "Stop", "Stop", "SessionEnd:normal"}, wantState: agent.StatusLimit},
		{name: "provider error", script: oneCall("Echo", "{msg: a}"), failAt: 2, want: []string{"SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "SessionEnd:error"}, wantState: agent.StatusFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var seen []string
			hooks := hook.NewRegistry(nil)
			for _, ev := range []hook.Event{hook.SessionStart, hook.UserPromptSubmit, hook.PreToolUse, hook.PostToolUse, hook.Stop, hook.SessionEnd} {
				ev := ev
				if err := hooks.Add(hook.Hook{Name: string(ev), Event: ev, Handler: hook.Func(func(_ context.Context, in hook.Input) (hook.Output, error) {
					name := string(in.HookEventName)
					if ev == hook.SessionEnd {
						name += ":" + in.Reason
					}
					seen = append(seen, name)
					if ev == hook.Stop && tt.stopBlock {
						return hook.Output{Decision: "block", Reason: "keep going"}, nil
					}
					return hook.Output{}, nil
				})}); err != nil {
					t.Fatal(err)
				}
			}
			prov := &capture{p: script(t, tt.script)}
			prov.fail.Store(tt.failAt)
			s, err := agent.NewSession(t.Context(), agent.WithProvider(prov, "m"), agent.WithTools(newTools(t).all...),
				agent.WithAudit(&gatetest.MemorySink{}), agent.WithHooks(hooks), agent.WithLimits(agent.Limits{MaxStopContinuations: 3}))
			if err != nil {
				t.Fatal(err)
			}
			out, err := s.Run(t.Context(), "go")
			if (err != nil) != (tt.failAt != 0) {
				t.Fatalf("Run error = %v", err)
			}
			if out.Status != tt.wantState {
				t.Errorf("status = %s (%s), want %s", out.Status, out.Reason, tt.wantState)
			}
			if !slices.Equal(seen, tt.want) {
				t.Errorf("hooks = %v\nwant    %v", seen, tt.want)
			}
		})
	}
}

// TestPromptBlocked: a UserPromptSubmit block stops the run before any
// model turn.
func TestPromptBlocked(t *testing.T) {
	hooks := hook.NewRegistry(nil)
	_ = hooks.Add(hook.Hook{Name: "no", Event: hook.UserPromptSubmit, Handler: hook.Func(func(context.Context, hook.Input) (hook.Output, error) {
		return hook.Output{}, hook.ErrBlocked
	})})
	prov := &capture{p: script(t, "turns:\n  - text: hi\n")}
	s, err := agent.NewSession(t.Context(), agent.WithProvider(prov, "m"), agent.WithAudit(&gatetest.MemorySink{}), agent.WithHooks(hooks))
	if err != nil {
		t.Fatal(err)
	}
	out, err := s.Run(t.Context(), "rm -rf")
	if err != nil || out.Status != agent.StatusHalted || prov.n.Load() != 0 {
		t.Fatalf("Run = %+v, %v, provider calls %d; want halted before the model", out, err, prov.n.Load())
	}
}

// TestResumeAfterCrash: a run unlocks a deferred tool, then the process
// "crashes" (the provider fails); a new session resuming the run can call
// the tool, and a fresh run cannot (negative control).
func TestResumeAfterCrash(t *testing.T) {
	dir := t.TempDir()
	secretTool := newTools(t).all[0] // Echo, registered as deferred "Echo"
	opts := func(p provider.Provider, extra ...agent.Option) []agent.Option {
		return append([]agent.Option{agent.WithProvider(p, "m"), agent.WithDeferredTools(secretTool), agent.WithAudit(&gatetest.MemorySink{}),
			agent.WithStateDir(dir)}, extra...)
	}
	p1 := &capture{p: script(t, "turns:\n  - tool_calls:\n      - {id: a1, name: Echo, input: {msg: one}}\n  - text: never\n")}
	p1.fail.Store(2)
	s1, err := agent.NewSession(t.Context(), opts(p1, agent.WithRunID("run-crash"))...)
	if err != nil {
		t.Fatal(err)
	}
	if err := s1.Unlock("Echo"); err != nil {
		t.Fatal(err)
	}
	out, err := s1.Run(t.Context(), "go")
	if !errors.Is(err, &capability.Error{Decision: capability.Decision{Reason: capability.ReasonProviderFailed}}) || out.Calls[0].Reason != string(capability.ReasonAllowed) {
		t.Fatalf("first run = %+v, %v; want ALLOWED then PROVIDER_FAILED", out, err)
	}
	st, err := agent.LoadState(dir, "run-crash")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(st.View.Children[0].Unlocked, "Echo") || !slices.Contains(st.View.Unlocked, "Echo") {
		t.Fatalf("state view = %+v, want Echo unlocked", st.View)
	}
	for _, tt := range []struct {
		name   string
		resume bool
		want   capability.Reason
	}{
		{name: "resumed run keeps the unlock", resume: true, want: capability.ReasonAllowed},
		{name: "fresh run does not have it", want: capability.ReasonToolUnknown},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := script(t, "turns:\n  - tool_calls:\n      - {id: b1, name: Echo, input: {msg: two}}\n  - text: done\n")
			id := agent.WithRunID("run-fresh")
			if tt.resume {
				id = agent.WithResume("run-crash")
			}
			s, err := agent.NewSession(t.Context(), opts(p, id)...)
			if err != nil {
				t.Fatal(err)
			}
			out, err := s.Run(t.Context(), "continue")
			if err != nil || out.Status != agent.StatusCompleted || len(out.Calls) != 1 || out.Calls[0].Reason != string(tt.want) {
				t.Fatalf("Run = %+v, %v; want b1 %s", out, err, tt.want)
			}
		})
	}
}

// TestResumeInterrupted: the process died after the assistant turn was
// saved and before its results were: on resume the call is answered with
// TOOL_INTERRUPTED and its handler does not run again.
func TestResumeInterrupted(t *testing.T) {
	dir := t.TempDir()
	ts := newTools(t)
	p1 := script(t, "turns:\n  - tool_calls:\n      - {id: a1, name: Echo, input: {msg: one}}\n  - text: done\n")
	s1, err := agent.NewSession(t.Context(), agent.WithProvider(p1, "m"), agent.WithTools(ts.all...), agent.WithAudit(&gatetest.MemorySink{}),
		agent.WithStateDir(dir), agent.WithRunID("r1"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s1.Run(t.Context(), "go"); err != nil {
		t.Fatal(err)
	}
	// Rewind the state file to the moment after the assistant turn was
	// persisted: drop the results and the final answer.
	path, _ := agent.StatePath(dir, "r1")
	st, err := agent.LoadState(dir, "r1")
	if err != nil {
		t.Fatal(err)
	}
	st.Messages = st.Messages[:2]
	st.Pending = &agent.Pending{}
	data, _ := json.Marshal(st)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	runs := ts.count("Echo")
	p2 := script(t, "turns:\n  - text: recovered\n")
	s2, err := agent.NewSession(t.Context(), agent.WithProvider(p2, "m"), agent.WithTools(ts.all...), agent.WithAudit(&gatetest.MemorySink{}),
		agent.WithStateDir(dir), agent.WithResume("r1"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := s2.Run(t.Context(), "")
	if err != nil || out.Status != agent.StatusCompleted || len(out.Calls) != 1 || out.Calls[0].Reason != string(capability.ReasonToolInterrupted) {
		t.Fatalf("Run = %+v, %v; want a1 TOOL_INTERRUPTED", out, err)
	}
	if ts.count("Echo") != runs {
		t.Error("an interrupted call ran again on resume")
	}
}

// TestPendingApprovalResume: a headless run stops when a call needs an
// approval nobody gave; after `norma approvals approve` (Service.Decide) a
// resume runs exactly that call, once.
func TestPendingApprovalResume(t *testing.T) {
	dir := t.TempDir()
	ts := newTools(t)
	sink := audit.NewMemory()
	svc, err := approval.NewService(approval.NewMemoryBackend(), &approval.Options{Sink: sink, Approver: agent.PendingApprover(nil, 0)})
	if err != nil {
		t.Fatal(err)
	}
	opts := func(p provider.Provider, id agent.Option) []agent.Option {
		return []agent.Option{agent.WithProvider(p, "m"), agent.WithTools(ts.all...), agent.WithAudit(sink), agent.WithStateDir(dir),
			agent.WithApprovalService(svc), id}
	}
	p1 := script(t, "turns:\n  - tool_calls:\n      - {id: e1, name: Echo, input: {msg: a}}\n      - {id: w1, name: Write, input: {path: out.txt}}\n  - text: never\n")
	s1, err := agent.NewSession(t.Context(), opts(p1, agent.WithRunID("r-appr"))...)
	if err != nil {
		t.Fatal(err)
	}
	out, err := s1.Run(t.Context(), "write it")
	if err != nil || out.Status != agent.StatusAwaitingApproval || len(out.Pending) != 1 || out.Pending[0].ToolUseID != "w1" {
		t.Fatalf("Run = %+v, %v; want awaiting approval for w1", out, err)
	}
	if ts.count("Write") != 0 || ts.count("Echo") != 1 {
		t.Fatalf("runs Write=%d Echo=%d, want 0 and 1", ts.count("Write"), ts.count("Echo"))
	}
	if _, err := svc.Decide(t.Context(), out.Pending[0].ApprovalID, true, "cli:test", "ok"); err != nil {
		t.Fatal(err)
	}
	p2 := script(t, "turns:\n  - text: written\n")
	s2, err := agent.NewSession(t.Context(), opts(p2, agent.WithResume("r-appr"))...)
	if err != nil {
		t.Fatal(err)
	}
	out, err = s2.Run(t.Context(), "")
	if err != nil || out.Status != agent.StatusCompleted || out.Text != "written" {
		t.Fatalf("resume = %+v, %v", out, err)
	}
	if len(out.Calls) != 1 || out.Calls[0].ID != "w1" || out.Calls[0].Reason != string(capability.ReasonAllowed) || out.Calls[0].ApprovalID == "" {
		t.Errorf("resumed calls = %+v, want w1 ALLOWED with its approval", out.Calls)
	}
	if ts.count("Write") != 1 || ts.count("Echo") != 1 {
		t.Errorf("runs Write=%d Echo=%d, want 1 and 1 (Echo's earlier result reused)", ts.count("Write"), ts.count("Echo"))
	}
	st, _ := agent.LoadState(dir, "r-appr")
	if st.Pending != nil || st.Status != agent.StatusCompleted {
		t.Errorf("state after resume: pending %+v status %s", st.Pending, st.Status)
	}
}

func TestRunIDValidation(t *testing.T) {
	for _, id := range []string{"", "../x", "a/b", ".", "..", "-x", "a b", strings.Repeat("a", 65), "a\x00"} {
		if agent.ValidRunID(id) {
			t.Errorf("ValidRunID(%q) = true", id)
		}
		if _, err := agent.StatePath("/tmp", id); !errors.Is(err, &capability.Error{Decision: capability.Decision{Reason: capability.ReasonRunIDInvalid}}) {
			t.Errorf("StatePath(%q) error = %v, want RUN_ID_INVALID", id, err)
		}
	}
	for _, id := range []string{"run-0123abcd", "a", "A_b-9"} {
		if !agent.ValidRunID(id) {
			t.Errorf("ValidRunID(%q) = false", id)
		}
	}
	dir := t.TempDir()
	if _, err := agent.NewSession(t.Context(), agent.WithProvider(script(t, "turns:\n  - text: x\n"), "m"), agent.WithAudit(&gatetest.MemorySink{}),
		agent.WithStateDir(dir), agent.WithResume("../../etc")); !errors.Is(err, &capability.Error{Decision: capability.Decision{Reason: capability.ReasonRunIDInvalid}}) {
		t.Errorf("WithResume(../../etc) error = %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "runs")); err == nil {
		t.Error("an invalid run id created a directory")
	}
}

// TestCanaryNeverInEvents: tool input values reach the model only; events
// and the outcome carry digests, targets, codes and the head of the output
// the model saw (which is where Echo puts its input, and nowhere else).
func TestCanaryNeverInEvents(t *testing.T) {
	rec := &recorder{}
	s, err := agent.NewSession(t.Context(), agent.WithProvider(script(t, oneCall("Echo", "{msg: "+canary+"}")), "m"),
		agent.WithTools(newTools(t).all...), agent.WithAudit(&gatetest.MemorySink{}), agent.WithObserver(rec.observe))
	if err != nil {
		t.Fatal(err)
	}
	out, err := s.Run(t.Context(), "go")
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Calls) != 1 || out.Calls[0].Result != "echo: "+canary {
		t.Fatalf("calls = %+v, want Echo's output as the result", out.Calls)
	}
	for _, e := range rec.events {
		if e.Call != nil {
			e.Call.Result = ""
		}
		if e.Outcome != nil {
			for i := range e.Outcome.Calls {
				e.Outcome.Calls[i].Result = ""
			}
		}
	}
	out.Calls[0].Result = ""
	b, _ := json.Marshal(struct {
		E []agent.Event
		O agent.Outcome
	}{rec.events, out})
	if strings.Contains(string(b), canary) {
		t.Errorf("canary in events outside a result: %s", b)
	}
}

// TestCallRecordResultBounded: the result head and the error message of
// a call are cut at MaxResultBytes on a UTF-8 boundary.
func TestCallRecordResultBounded(t *testing.T) {
	yes := func(tool.Input) bool { return true }
	long := tool.MustBuild(tool.Spec{
		Name: "Long", Description: "print a lot",
		Schema:   json.RawMessage(`{"type":"object","additionalProperties":false,"properties":{}}`),
		ReadOnly: yes, ConcurrencySafe: yes,
		CheckPermissions: func(context.Context, tool.Input) tool.Permission { return tool.Permission{Behavior: tool.Allow} },
		Accesses:         func(tool.Input) ([]tool.Access, error) { return nil, nil },
		Call: func(context.Context, tool.Env, tool.Input) (tool.Result, error) {
			return tool.Result{Content: "echo: " + strings.Repeat("é", agent.MaxResultBytes)}, nil
		},
	})
	s, err := agent.NewSession(t.Context(), agent.WithProvider(script(t, oneCall("Long", "{}")), "m"),
		agent.WithTools(long), agent.WithAudit(&gatetest.MemorySink{}))
	if err != nil {
		t.Fatal(err)
	}
	out, err := s.Run(t.Context(), "go")
	if err != nil || len(out.Calls) != 1 {
		t.Fatal(err, out.Calls)
	}
	r := out.Calls[0].Result
	if len(r) > agent.MaxResultBytes+len("…") || !strings.HasSuffix(r, "…") || !utf8.ValidString(r) || !strings.HasPrefix(r, "echo: é") {
		t.Errorf("result = %d bytes, valid UTF-8 %v, suffix %q", len(r), utf8.ValidString(r), r[max(0, len(r)-8):])
	}
}

// TestStoreGoneStopsRun: the audit log refuses every event from the
// second turn on (the store went away). The run does not go on without
// its records: it stops with STATE_UNAVAILABLE, the refused call did not
// run, the turn before it stays recorded, and a resume answers the
// refused call TOOL_INTERRUPTED (never running it) and completes.
func TestStoreGoneStopsRun(t *testing.T) {
	dir := t.TempDir()
	ts := newTools(t)
	sink := &gatetest.MemorySink{}
	p1 := script(t, "turns:\n  - tool_calls:\n      - {id: a1, name: Echo, input: {msg: one}}\n"+
		"  - tool_calls:\n      - {id: a2, name: Echo, input: {msg: two}}\n  - text: done\n")
	var reported []agent.CallRecord
	s1, err := agent.NewSession(t.Context(), agent.WithProvider(p1, "m"), agent.WithTools(ts.all...), agent.WithAudit(sink),
		agent.WithStateDir(dir), agent.WithRunID("r1"), agent.WithObserver(func(e agent.Event) {
			if e.Kind == agent.EventToolCall {
				reported = append(reported, *e.Call)
				sink.Fail(errors.New("the store is gone"))
			}
		}))
	if err != nil {
		t.Fatal(err)
	}
	out, err := s1.Run(t.Context(), "go")
	if capability.ReasonOf(err) != capability.ReasonStateUnavailable || out.Status != agent.StatusFailed {
		t.Fatalf("Run = %+v, %v; want failed, STATE_UNAVAILABLE", out, err)
	}
	if n := ts.count("Echo"); n != 1 {
		t.Fatalf("Echo ran %d times, want once (a1; a2 was refused)", n)
	}
	if len(reported) != 2 || reported[0].Reason != string(capability.ReasonAllowed) || reported[1].Reason != string(capability.ReasonAuditUnavailable) || !reported[1].IsError {
		t.Fatalf("reported = %+v; want a1 ALLOWED, a2 AUDIT_UNAVAILABLE", reported)
	}
	p2 := script(t, "turns:\n  - text: recovered\n")
	s2, err := agent.NewSession(t.Context(), agent.WithProvider(p2, "m"), agent.WithTools(ts.all...), agent.WithAudit(&gatetest.MemorySink{}),
		agent.WithStateDir(dir), agent.WithResume("r1"))
	if err != nil {
		t.Fatal(err)
	}
	out, err = s2.Run(t.Context(), "")
	if err != nil || out.Status != agent.StatusCompleted || len(out.Calls) != 1 || out.Calls[0].ID != "a2" || out.Calls[0].Reason != string(capability.ReasonToolInterrupted) {
		t.Fatalf("resume = %+v, %v; want a2 TOOL_INTERRUPTED, completed", out, err)
	}
	if n := ts.count("Echo"); n != 1 {
		t.Errorf("Echo ran %d times after the resume, want once", n)
	}
}
