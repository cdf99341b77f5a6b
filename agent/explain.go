package agent

import (
	"context"
	"encoding/json"
	"strconv"

	"github.com/norma-run/norma/gate"
)

// Explain reports what the session's gate decides for a call of toolName
// with input from the main agent — lookup, schema, mode and rules, every
// capability layer — without asking for approval and without running the
// call. It is the decision `norma run` would act on in the same workspace,
// settings and mode.
func (s *Session) Explain(ctx context.Context, toolName string, input json.RawMessage) gate.Explanation {
	id := "explain_" + strconv.FormatUint(s.explains.Add(1), 10)
	return s.g.Explain(ctx, gate.Call{ID: id, RunID: s.cfg.runID, Principals: s.Principals(), Tool: toolName, Input: input})
}

// ExplainUnconfined is Explain for a call that will run outside Norma's
// sandbox, in the agent's own shell (gate.Call.Unconfined): what the
// sandbox and the guards would have refused is decided too.
func (s *Session) ExplainUnconfined(ctx context.Context, toolName string, input json.RawMessage, shell gate.AgentShell) gate.Explanation {
	id := "explain_" + strconv.FormatUint(s.explains.Add(1), 10)
	return s.g.Explain(ctx, gate.Call{ID: id, RunID: s.cfg.runID, Principals: s.Principals(), Tool: toolName, Input: input, Unconfined: &shell})
}
