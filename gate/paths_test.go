package gate_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/gate"
	"github.com/norma-run/norma/hook"
	"github.com/norma-run/norma/tool"
)

// TestEveryPathPassesEveryStep enumerates every way a tool can be reached —
// a direct call, a deferred tool through ExecuteExtra, a subagent, a hook
// rewrite, and a background resume on a fresh registry restored from the
// persisted view state — and proves each went through all nine steps, asked
// the policy and wrote exactly one final audit event.
func TestEveryPathPassesEveryStep(t *testing.T) {
	paths := []struct {
		name string
		run  func(t *testing.T, f *fixture) (gate.Result, *fixture)
	}{
		{"direct", func(t *testing.T, f *fixture) (gate.Result, *fixture) {
			return f.g.Execute(t.Context(), call("Read", `{"path":"docs/a.md"}`)), f
		}},
		{"execute-extra-deferred", func(t *testing.T, f *fixture) (gate.Result, *fixture) {
			return f.g.ExecuteExtra(t.Context(), call("DeferredRead", `{"path":"docs/a.md"}`)), f
		}},
		{"subagent", func(t *testing.T, f *fixture) (gate.Result, *fixture) {
			sub, err := f.view.Subagent("agent:reviewer", []string{"Read"})
			if err != nil {
				t.Fatal(err)
			}
			c := call("Read", `{"path":"docs/a.md"}`)
			c.Principals = sub.Principals()
			return f.g.Execute(t.Context(), c), f
		}},
		{"hook-rewrite", func(t *testing.T, f *fixture) (gate.Result, *fixture) {
			err := f.hooks.Add(hook.Hook{Event: hook.PreToolUse, Matcher: "Read", Handler: hook.Func(func(ctx context.Context, in hook.Input) (hook.Output, error) {
				return hook.Output{Specific: &hook.Specific{UpdatedInput: json.RawMessage(`{"path":"docs/a.md","note":"rewritten"}`)}}, nil
			})})
			if err != nil {
				t.Fatal(err)
			}
			return f.g.Execute(t.Context(), call("Read", `{"path":"docs/a.md"}`)), f
		}},
		{"background-resume", func(t *testing.T, f *fixture) (gate.Result, *fixture) {
			if err := f.view.Unlock("DeferredRead"); err != nil {
				t.Fatal(err)
			}
			state, err := json.Marshal(f.view.State())
			if err != nil {
				t.Fatal(err)
			}
			// A new process: fresh registry and gate, state from disk.
			f2 := newFixture(t)
			var st tool.ViewState
			if err := json.Unmarshal(state, &st); err != nil {
				t.Fatal(err)
			}
			f2.reg.CloseRun(runID)
			if _, err := f2.reg.Restore(st); err != nil {
				t.Fatal(err)
			}
			return f2.g.Execute(t.Context(), call("DeferredRead", `{"path":"docs/a.md"}`)), f2
		}},
	}
	for _, p := range paths {
		t.Run(p.name, func(t *testing.T) {
			f := newFixture(t)
			r, used := p.run(t, f)
			wantReason(t, r, capability.ReasonAllowed)
			wantAllSteps(t, used.stepsOf(r.ToolUseID))
			if n := used.pol.n.Load(); n == 0 {
				t.Errorf("policy decisions = 0, want at least one")
			}
			if n := used.finalEvents(r.ToolUseID); n != 1 {
				t.Errorf("final audit events for %s = %d, want 1", r.ToolUseID, n)
			}
			if n := used.calls.Load(); n != 1 {
				t.Errorf("handler calls = %d, want 1", n)
			}
		})
	}
}

// TestDeferredAndHiddenNotCallableBeforeUnlock: what the model is not shown
// it cannot call, and ExecuteExtra unlocks only deferred tools.
func TestDeferredAndHiddenNotCallableBeforeUnlock(t *testing.T) {
	f := newFixture(t)
	for _, name := range []string{"DeferredRead", "HiddenRead", "NoSuchTool"} {
		r := f.g.Execute(t.Context(), call(name, `{"path":"docs/a.md"}`))
		wantReason(t, r, capability.ReasonToolUnknown)
		if n := f.finalEvents(r.ToolUseID); n != 1 {
			t.Errorf("%s: final audit events = %d, want 1", name, n)
		}
	}
	for _, e := range f.view.List() {
		if e.Name() == "DeferredRead" || e.Name() == "HiddenRead" {
			t.Errorf("List() shows %s before unlock", e.Name())
		}
	}
	wantReason(t, f.g.ExecuteExtra(t.Context(), call("HiddenRead", `{"path":"docs/a.md"}`)), capability.ReasonToolUnknown)
	wantReason(t, f.g.ExecuteExtra(t.Context(), call("DeferredRead", `{"path":"docs/a.md"}`)), capability.ReasonAllowed)
	wantReason(t, f.g.Execute(t.Context(), call("DeferredRead", `{"path":"docs/a.md"}`)), capability.ReasonAllowed)
	// Another run has its own unlock set.
	if _, err := f.reg.OpenRun("run-2", user); err != nil {
		t.Fatal(err)
	}
	c := call("DeferredRead", `{"path":"docs/a.md"}`)
	c.RunID = "run-2"
	wantReason(t, f.g.Execute(t.Context(), c), capability.ReasonToolUnknown)
	if f.calls.Load() != 2 {
		t.Errorf("handler calls = %d, want 2", f.calls.Load())
	}
}

// TestSubagentNeverWider: a subagent cannot call what it was not given,
// nor what its parent cannot call.
func TestSubagentNeverWider(t *testing.T) {
	f := newFixture(t)
	sub, err := f.view.Subagent("agent:sub", []string{"Read", "DeferredRead"})
	if err != nil {
		t.Fatal(err)
	}
	c := func(name string) gate.Call {
		x := call(name, `{"path":"docs/a.md"}`)
		x.Principals = sub.Principals()
		return x
	}
	wantReason(t, f.g.Execute(t.Context(), c("Write")), capability.ReasonToolUnknown)
	// Unlocked in the child only: the parent cannot call it, so neither can the child.
	if err := sub.Unlock("DeferredRead"); err != nil {
		t.Fatal(err)
	}
	wantReason(t, f.g.Execute(t.Context(), c("DeferredRead")), capability.ReasonToolUnknown)
	if err := f.view.Unlock("DeferredRead"); err != nil {
		t.Fatal(err)
	}
	wantReason(t, f.g.Execute(t.Context(), c("DeferredRead")), capability.ReasonAllowed)
	// A grandchild asking for more than its parent gets the intersection.
	gc, err := sub.Subagent("agent:gc", []string{"Read", "Write", "Bash"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range gc.List() {
		names = append(names, e.Name())
	}
	if len(names) != 1 || names[0] != "Read" {
		t.Errorf("grandchild List() = %v, want [Read]", names)
	}
	// Unknown principal chains have no view.
	x := call("Read", `{"path":"docs/a.md"}`)
	x.Principals = []string{user, "agent:nobody"}
	wantReason(t, f.g.Execute(t.Context(), x), capability.ReasonToolUnknown)
}

// TestRegistryClaimedOnce: nothing but the first gate can dispatch.
func TestRegistryClaimedOnce(t *testing.T) {
	f := newFixture(t)
	if _, err := f.reg.Claim(); err == nil {
		t.Fatal("Claim() after gate.New = nil error, want ErrClaimed")
	}
	_, err := gate.New(gate.Options{Registry: f.reg, Policy: func(tool.Plugin) (capability.Decider, error) { return f.pol, nil }, Audit: f.sink})
	if err == nil {
		t.Fatal("second gate.New on one registry = nil error")
	}
}

// TestExecuteExtraUnlocksAlongTheChain: a deferred tool called by name
// through the deferred-tool path from a nested view (the main agent under
// the user's root view) becomes callable for that chain, and only for it.
func TestExecuteExtraUnlocksAlongTheChain(t *testing.T) {
	f := newFixture(t)
	main, err := f.view.Subagent("agent:main", nil)
	if err != nil {
		t.Fatal(err)
	}
	c := call("DeferredRead", `{"path":"docs/a.md"}`)
	c.Principals = main.Principals()
	wantReason(t, f.g.Execute(t.Context(), c), capability.ReasonToolUnknown)
	wantReason(t, f.g.ExecuteExtra(t.Context(), c), capability.ReasonAllowed)
	wantReason(t, f.g.Execute(t.Context(), c), capability.ReasonAllowed)
	// A hidden tool is never unlocked by the model's path.
	h := call("HiddenRead", `{"path":"docs/a.md"}`)
	h.Principals = main.Principals()
	wantReason(t, f.g.ExecuteExtra(t.Context(), h), capability.ReasonToolUnknown)
}
