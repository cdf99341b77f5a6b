package main

// Found by trying to break the claim "explain's decision and reason equal
// what `norma run --mode M` does for the same call in the same workspace".

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestExplainTaskAndDelegatedCalls: for each call, `policy explain --tool`
// gives what the run's tool_call event reports.
//
//   - Task: the subagent tool is part of the workspace's runtime, not a
//     door option of `norma run`, so explain knows it too.
//   - ExecuteExtraTool wrapping a denied call: the wrapper itself is
//     allowed and the inner call is refused while it runs; explain decides
//     the inner call too and says deny with the inner call's reason. A run
//     reports such a refusal during the call as decision allow with the
//     refusal's reason and is_error, which is the same outcome.
func TestExplainTaskAndDelegatedCalls(t *testing.T) {
	e := newRunEnv(t)
	calls := []struct{ id, tool, input string }{
		{"t1", "Task", `{"description":"x","prompt":"do a thing"}`},
		{"x1", "ExecuteExtraTool", `{"tool":"Read","input":{"path":".env"}}`},
	}
	for _, mode := range []string{"default", "plan"} {
		t.Run(mode, func(t *testing.T) {
			var sc strings.Builder
			sc.WriteString("turns:\n  - tool_calls:\n")
			for _, c := range calls {
				sc.WriteString("      - {id: " + c.id + ", name: " + c.tool + ", input: " + c.input + "}\n")
			}
			// The Task subagent's turn, then the main agent's last turn.
			sc.WriteString("  - text: sub done\n  - text: done\n")
			code, events, stderr := e.run(t, "--provider", "scripted", "--script", e.script(t, sc.String()), "--json", "--mode", mode, "--approval-wait", "0s", "go")
			if code != 0 {
				t.Fatalf("run: exit %d\n%s", code, stderr)
			}
			got := toolCalls(events)
			for _, c := range calls {
				code, out, errs := norma(t, "--home", e.home, "policy", "explain", "--workspace", e.ws, "--mode", mode, "--tool", c.tool, "--input", c.input, "--json")
				if code != 0 {
					t.Fatalf("explain %s: exit %d\n%s%s", c.tool, code, out, errs)
				}
				var ex map[string]any
				if err := json.Unmarshal([]byte(out), &ex); err != nil {
					t.Fatalf("explain --json: %v\n%s", err, out)
				}
				run := got[c.id]
				if run == nil {
					t.Fatalf("no tool_call event for %s", c.id)
				}
				exDec, exReason := ex["decision"], ex["reason"]
				runDec, runReason := run["decision"], run["reason"]
				switch {
				case runReason == "TOOL_ERROR":
					runReason = "ALLOWED" // allowed, then failed on its own (the subagent's model)
				case runDec == "allow" && run["is_error"] == true && runReason != "ALLOWED":
					runDec = "deny" // refused during the call
				}
				if exDec != runDec || exReason != runReason {
					t.Errorf("%s %s (mode %s): explain says %v %v, the run did %v %v (%v)", c.tool, c.input, mode, exDec, exReason, run["decision"], run["reason"], run["message"])
				}
			}
		})
	}
}
