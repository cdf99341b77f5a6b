package agent

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/gate"
	"github.com/norma-run/norma/provider"
)

// Execute runs one call of toolName with input for the main agent through
// the session's gate — lookup, schema, mode and rules, capability layers,
// approval, hooks, the call, the output cap, redaction and audit — exactly
// as a model's tool_use in [Session.Run] would, without a model. It is the
// door of a host that relays another agent's calls (`norma mcp proxy`):
// such a host never reaches a tool but through it. Each call gets its own
// tool_use id. A call the approval service left pending (see
// [PendingApprover]) is refused with APPROVAL_PENDING and the approval's
// id: once it is approved, the same call again (same input, same run)
// redeems it.
func (s *Session) Execute(ctx context.Context, toolName string, input json.RawMessage) gate.Result {
	id := "relay_" + strconv.FormatUint(s.explains.Add(1), 10)
	r := s.g.Execute(ctx, gate.Call{ID: id, RunID: s.cfg.runID, Principals: s.Principals(), Tool: toolName, Input: input})
	if a := s.takePending(id); a != "" && r.IsError {
		r.Reason, r.ApprovalID = capability.ReasonApprovalPending, a
		r.Content = "approval " + a + " is pending: approve it (norma approvals approve " + a + "), then make the same call again"
	}
	return r
}

// ToolSpecs returns the tools the main agent may call now, with their
// descriptions and input schemas, as the model is offered them: the
// registry view of the session's principal chain, so that a tool the
// policy hides is not listed.
func (s *Session) ToolSpecs() []provider.ToolSpec {
	return specsOf(s.entriesFor(slices.Clone(s.chain)))
}
