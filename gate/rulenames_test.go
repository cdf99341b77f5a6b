package gate_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/gate"
	"github.com/norma-run/norma/policy"
	"github.com/norma-run/norma/tool"
)

// TestRuleNames: a tool's further rule names (tool.RuleNamer, as the MCP
// resource tools give mcp__SERVER__ReadMcpResource) are matched by deny and
// ask rules, a plugin rule mcp__SERVER included, and never by allow rules;
// a RuleNames that panics is refused. A refused call does not run.
func TestRuleNames(t *testing.T) {
	for _, tc := range []struct {
		name   string
		rules  policy.Rules
		panics bool
		want   capability.Reason
		ran    bool
	}{
		{"no rule", policy.Rules{}, false, capability.ReasonAllowed, true},
		{"deny the server", policy.Rules{Deny: []string{"mcp__srv"}}, false, capability.ReasonRuleDenied, false},
		{"deny the name", policy.Rules{Deny: []string{"mcp__srv__Feature"}}, false, capability.ReasonRuleDenied, false},
		{"deny another server", policy.Rules{Deny: []string{"mcp__other"}}, false, capability.ReasonAllowed, true},
		{"ask the server", policy.Rules{Ask: []string{"mcp__srv__*"}}, false, capability.ReasonModeDenied, false}, // asks: dontAsk denies
		{"panic", policy.Rules{}, true, capability.ReasonInvalidRequest, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, withRules(tc.rules), withMode(gate.ModeDontAsk))
			f.register(t, tool.Spec{
				Name:             "Feature",
				Schema:           json.RawMessage(`{"type":"object","properties":{"server":{"type":"string"}}}`),
				ReadOnly:         func(tool.Input) bool { return true },
				CheckPermissions: func(context.Context, tool.Input) tool.Permission { return tool.Permission{Behavior: tool.Allow} },
				RuleNames: func(in tool.Input) []string {
					if tc.panics {
						panic("boom")
					}
					var x struct{ Server string }
					in.Decode(&x)
					return []string{"mcp__" + x.Server + "__Feature"}
				},
				Call: func(context.Context, tool.Env, tool.Input) (tool.Result, error) {
					f.calls.Add(1)
					return tool.Result{Content: "ran"}, nil
				},
			}, tool.Visible)
			before := f.calls.Load()
			r := f.g.Execute(t.Context(), call("Feature", `{"server":"srv"}`))
			if r.Reason != tc.want {
				t.Fatalf("reason = %s, want %s (%s)", r.Reason, tc.want, r.Content)
			}
			if ran := f.calls.Load() != before; ran != tc.ran {
				t.Fatalf("ran = %v, want %v", ran, tc.ran)
			}
		})
	}
	// An allow rule on a further name allows nothing the tool would ask.
	f := newFixture(t, withRules(policy.Rules{Allow: []string{"mcp__srv"}}), withMode(gate.ModeDontAsk))
	f.register(t, tool.Spec{
		Name: "AskingFeature", Schema: json.RawMessage(`{"type":"object"}`), ReadOnly: func(tool.Input) bool { return true },
		RuleNames: func(tool.Input) []string { return []string{"mcp__srv__AskingFeature"} },
		Call: func(context.Context, tool.Env, tool.Input) (tool.Result, error) {
			f.calls.Add(1)
			return tool.Result{}, nil
		},
	}, tool.Visible)
	if r := f.g.Execute(t.Context(), call("AskingFeature", `{}`)); r.Reason == capability.ReasonAllowed || f.calls.Load() != 0 {
		t.Fatalf("an allow rule on a further name allowed the call: %s", r.Reason)
	}
}
