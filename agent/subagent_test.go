package agent_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/norma-run/norma/agent"
	"github.com/norma-run/norma/audit"
	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/gate/gatetest"
	"github.com/norma-run/norma/policy"
)

// TestSubagent: a subagent narrowed to Echo cannot call Write although its
// parent can (TOOL_UNKNOWN), a rule that denies the parent denies the child
// (no confused deputy), asking for a tool the parent cannot use is
// SUBAGENT_WIDENED, and every call is audited with the whole chain.
func TestSubagent(t *testing.T) {
	tests := []struct {
		name       string
		task       string
		child      string
		rules      policy.Rules
		wantTask   capability.Reason
		wantChild  []capability.Reason
		wantResult string
	}{
		{name: "narrowed", task: `{prompt: "do it", tools: [Echo]}`,
			child:    "turns:\n  - tool_calls:\n      - {id: c1, name: Echo, input: {msg: hi}}\n      - {id: c2, name: Write, input: {path: a}}\n  - text: child done\n",
			wantTask: capability.ReasonAllowed, wantChild: []capability.Reason{capability.ReasonAllowed, capability.ReasonToolUnknown}, wantResult: "child done"},
		{name: "parent's deny rule binds the child", task: `{prompt: "do it"}`, rules: policy.Rules{Deny: []string{"Write"}},
			child:    "turns:\n  - tool_calls:\n      - {id: c1, name: Write, input: {path: a}}\n  - text: child done\n",
			wantTask: capability.ReasonAllowed, wantChild: []capability.Reason{capability.ReasonRuleDenied}, wantResult: "child done"},
		{name: "widening refused", task: `{prompt: "do it", tools: [Echo, Secret]}`, child: "turns:\n  - text: never\n",
			wantTask: capability.ReasonSubagentWidened},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sink := audit.NewMemory()
			rec := &recorder{}
			parent := &capture{p: script(t, oneCall("Task", tt.task))}
			s, err := agent.NewSession(t.Context(), agent.WithProvider(parent, "m"), agent.WithSubagentProvider(script(t, tt.child)),
				agent.WithTools(newTools(t).all...), agent.WithAudit(sink), agent.WithSubagents(1), agent.WithRules(tt.rules),
				agent.WithApprover(gatetest.NewMemoryApprover(true)), agent.WithObserver(rec.observe))
			if err != nil {
				t.Fatal(err)
			}
			out, err := s.Run(t.Context(), "delegate")
			if err != nil || out.Status != agent.StatusCompleted {
				t.Fatalf("Run = %+v, %v", out, err)
			}
			if len(out.Calls) != 1 || out.Calls[0].Reason != string(tt.wantTask) {
				t.Fatalf("Task call = %+v, want %s", out.Calls, tt.wantTask)
			}
			var child []capability.Reason
			for _, e := range rec.events {
				if e.Kind == agent.EventToolCall && len(e.Principals) == 3 {
					child = append(child, capability.Reason(e.Call.Reason))
					if want := []string{agent.DefaultUser, agent.AgentPrincipal, "subagent:t1"}; !slices.Equal(e.Principals, want) {
						t.Errorf("child chain = %v, want %v", e.Principals, want)
					}
				}
			}
			if !slices.Equal(child, tt.wantChild) {
				t.Errorf("child calls = %v, want %v", child, tt.wantChild)
			}
			msgs := parent.last().Messages
			if tt.wantResult != "" && !strings.Contains(msgs[len(msgs)-1].Blocks[0].Content, tt.wantResult) {
				t.Errorf("Task result = %q, want %q", msgs[len(msgs)-1].Blocks[0].Content, tt.wantResult)
			}
			recs, err := sink.Query(t.Context(), audit.Filter{})
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, r := range recs {
				if r.Event.Principal == agent.DefaultUser+">"+agent.AgentPrincipal+">subagent:t1" {
					n++
				}
			}
			if n == 0 && len(tt.wantChild) > 0 {
				t.Error("no audit event names the subagent's principal chain")
			}
		})
	}
}
