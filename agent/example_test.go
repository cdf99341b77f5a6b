package agent_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/norma-run/norma/agent"
	"github.com/norma-run/norma/audit"
	"github.com/norma-run/norma/gate"
	"github.com/norma-run/norma/gate/gatetest"
	"github.com/norma-run/norma/provider/scripted"
	"github.com/norma-run/norma/tool"
)

// A session with one custom tool, driven by a scripted model: the allowed
// call runs, the call of an unregistered tool and the schema-invalid call
// are refused by the gate, and every decision has a stable code.
func ExampleNewSession() {
	ctx := context.Background()
	weather := tool.MustBuild(tool.Spec{
		Name:        "Weather",
		Description: "Current weather for a city.",
		Schema:      json.RawMessage(`{"type":"object","additionalProperties":false,"required":["city"],"properties":{"city":{"type":"string","maxLength":40}}}`),
		ReadOnly:    func(tool.Input) bool { return true },
		CheckPermissions: func(context.Context, tool.Input) tool.Permission {
			return tool.Permission{Behavior: tool.Allow}
		},
		Accesses: func(tool.Input) ([]tool.Access, error) { return nil, nil },
		Call: func(_ context.Context, _ tool.Env, in tool.Input) (tool.Result, error) {
			city, _ := in.String("city")
			return tool.Result{Content: "sunny in " + city}, nil
		},
	})
	script, _ := scripted.Parse("example.yaml", []byte(`turns:
  - tool_calls:
      - {id: t1, name: Weather, input: {city: Lisbon}}
      - {id: t2, name: Shell, input: {cmd: "rm -rf /"}}
      - {id: t3, name: Weather, input: {city: 42}}
  - text: "It is sunny in Lisbon."
`))
	s, err := agent.NewSession(ctx,
		agent.WithProvider(scripted.New(script), "scripted"),
		agent.WithTools(weather),
		agent.WithAudit(audit.NewMemory()),
		agent.WithMode(gate.ModeDefault),
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	out, err := s.Run(ctx, "What is the weather in Lisbon?")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, c := range out.Calls {
		fmt.Println(c.ID, c.Tool, c.Reason)
	}
	fmt.Println(out.Status, out.Text)
	// Output:
	// t1 Weather ALLOWED
	// t2 Shell TOOL_UNKNOWN
	// t3 Weather SCHEMA_INVALID
	// completed It is sunny in Lisbon.
}

// A run that needs approval stops when nobody approves in time; the
// embedding program can then resume it (see WithApprovalService).
func ExampleWithApprover() {
	ctx := context.Background()
	note := tool.MustBuild(tool.Spec{ // nothing declared: mutating, asks
		Name:   "Note",
		Schema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}}}`),
		Call: func(context.Context, tool.Env, tool.Input) (tool.Result, error) {
			return tool.Result{Content: "noted"}, nil
		},
	})
	for _, grant := range []bool{true, false} {
		script, _ := scripted.Parse("example.yaml", []byte("turns:\n  - tool_calls:\n      - {id: n1, name: Note, input: {text: hi}}\n  - text: ok\n"))
		s, _ := agent.NewSession(ctx, agent.WithProvider(scripted.New(script), "scripted"), agent.WithTools(note),
			agent.WithAudit(audit.NewMemory()), agent.WithApprover(gatetest.NewMemoryApprover(grant)))
		out, _ := s.Run(ctx, "take a note")
		fmt.Println(grant, out.Calls[0].Reason)
	}
	// Output:
	// true ALLOWED
	// false APPROVAL_DENIED
}
