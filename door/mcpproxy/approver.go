package mcpproxy

import (
	"context"
	"encoding/json"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/norma-run/norma/approval"
	"github.com/norma-run/norma/approval/prompt"
	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/gate"
)

// Approvals is the approval service as the proxy uses it: to show a
// pending request to the client and record its answer
// (*approval.Service satisfies it).
type Approvals interface {
	Get(ctx context.Context, id string) (approval.Record, error)
	Decide(ctx context.Context, id string, approve bool, who, why string) (approval.Record, error)
}

// Approver returns the approver the door's approval service should wrap
// in agent.PendingApprover. For a client that declared elicitation it
// leaves the request pending at once (approval.ErrNoDecision): the tool
// call then returns an input request (an elicitation, SEP-2322; the SDK
// sends it as elicitation/create to an older client) and the client's
// answer decides the stored request, which the repeated call redeems
// (the service binds it to the action hash). For any other client it
// asks fallback (nil: [Refuse]).
func (p *Proxy) Approver(fallback approval.Approver) approval.Approver {
	if fallback == nil {
		fallback = Refuse{}
	}
	return approverFunc(func(ctx context.Context, r approval.Record) (approval.Verdict, error) {
		if ss, _ := ctx.Value(sessionKey{}).(*mcp.ServerSession); ss != nil && canElicit(ss) && p.o.Approvals != nil {
			return approval.Verdict{}, approval.ErrNoDecision
		}
		return fallback.Approve(ctx, r)
	})
}

type approverFunc func(context.Context, approval.Record) (approval.Verdict, error)

func (f approverFunc) Approve(ctx context.Context, r approval.Record) (approval.Verdict, error) {
	return f(ctx, r)
}

// canElicit reports whether the client declared form elicitation.
func canElicit(ss *mcp.ServerSession) bool {
	ip := ss.InitializeParams()
	if ip == nil || ip.Capabilities == nil || ip.Capabilities.Elicitation == nil {
		return false
	}
	e := ip.Capabilities.Elicitation
	return e.Form != nil || e.URL == nil
}

// The input request of an approval: one enum field.
const (
	inputKey      = "norma-approval"
	choiceField   = "decision"
	choiceApprove = "approve"
	choiceDeny    = "deny"
)

var choiceSchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		choiceField: map[string]any{"type": "string", "title": "Allow this action?", "enum": []string{choiceApprove, choiceDeny},
			"enumNames": []string{"yes, this once", "no"}},
	},
	"required": []string{choiceField},
}

// askClient returns the input-required result that shows the client the
// pending approval id (the box the terminal prompt shows, with the
// preview the gate built), and remembers which call it was asked for.
func (p *Proxy) askClient(ctx context.Context, id, tool string, in json.RawMessage) (*mcp.CallToolResult, bool) {
	rec, err := p.o.Approvals.Get(ctx, id)
	if err != nil {
		return nil, false
	}
	p.mu.Lock()
	p.asked[id] = callKey(tool, in)
	p.mu.Unlock()
	msg := "Norma: approval required (" + rec.ID + ")\n" + prompt.Box(rec, time.Now())
	return &mcp.CallToolResult{
		InputRequests: mcp.InputRequestMap{inputKey: &mcp.ElicitParams{Mode: "form", Message: msg, RequestedSchema: choiceSchema}},
		RequestState:  id,
	}, true
}

// answered records the client's answer to the approval it was asked for
// this very call (tool and input), once. ok is false when the call
// carries no answer; a refusal is returned when the answer does not
// approve or does not belong to the call.
func (p *Proxy) answered(ctx context.Context, ss *mcp.ServerSession, req *mcp.CallToolParamsRaw, tool string, in json.RawMessage) (refusal *gate.Result, ok bool) {
	resp, has := req.InputResponses[inputKey]
	if !has {
		return nil, false
	}
	id := req.RequestState
	p.mu.Lock()
	key, known := p.asked[id]
	delete(p.asked, id)
	p.mu.Unlock()
	if !known || key != callKey(tool, in) {
		return &gate.Result{Tool: tool, IsError: true, Reason: capability.ReasonInvalidRequest, ApprovalID: id,
			Content: "the answer names no approval this proxy asked for this call"}, true
	}
	er, _ := resp.(*mcp.ElicitResult)
	if er == nil {
		er = &mcp.ElicitResult{Action: "decline"}
	}
	return p.decide(ctx, ss, tool, id, er)
}

// decide records the client's answer er to approval id of a call of
// tool: an accept that chooses approve approves it (ok: the call may be
// repeated); any other accept (deny, or fields that are not the form's)
// and a decline deny it (APPROVAL_DENIED); a cancel leaves it pending
// (APPROVAL_PENDING: `norma approvals approve ID`, then the same call
// again, runs it).
func (p *Proxy) decide(ctx context.Context, ss *mcp.ServerSession, tool, id string, er *mcp.ElicitResult) (refusal *gate.Result, ok bool) {
	refuse := func(reason capability.Reason, msg string) (*gate.Result, bool) {
		return &gate.Result{Tool: tool, IsError: true, Reason: reason, Content: msg, ApprovalID: id}, true
	}
	if er.Action != "accept" && er.Action != "decline" {
		return refuse(capability.ReasonApprovalPending, pendingText(id, "the MCP client's user answered "+safeAction(er.Action)))
	}
	by := "mcp-client"
	if ip := ss.InitializeParams(); ip != nil && ip.ClientInfo != nil && ip.ClientInfo.Name != "" {
		by += ":" + ip.ClientInfo.Name
	}
	approve := er.Action == "accept" && er.Content[choiceField] == choiceApprove
	why := "answered by the MCP client: yes, this once"
	if !approve {
		why = "answered by the MCP client: no"
		if er.Action != "accept" {
			why = "the MCP client's user answered " + er.Action
		}
	}
	if _, err := p.o.Approvals.Decide(ctx, id, approve, by, why); err != nil {
		if r := capability.ReasonOf(err); r != "" {
			return refuse(r, err.Error())
		}
		return refuse(capability.ReasonApprovalStoreUnavailable, err.Error())
	}
	if !approve {
		return refuse(capability.ReasonApprovalDenied, "approval "+id+" was not given: "+why)
	}
	return nil, true
}

// safeAction is the client's action as the refusal quotes it: one of the
// three the protocol knows, else "something else".
func safeAction(a string) string {
	switch a {
	case "accept", "decline", "cancel":
		return a
	}
	return "something else"
}

// pendingText is the text of a call whose approval stays pending.
func pendingText(id, why string) string {
	return "approval " + id + " is pending (" + why + "): approve it (norma approvals approve " + id + "), then make the same call again"
}

// multiRoundTrip reports whether the client speaks input requests
// (SEP-2322, protocol 2026-07-28 and later): it is then asked through an
// input-required result, else through elicitation/create.
func multiRoundTrip(ss *mcp.ServerSession) bool {
	ip := ss.InitializeParams()
	return ip != nil && ip.ProtocolVersion >= "2026-07-28"
}

// elicitNow asks a client of an older protocol for approval r.ApprovalID
// with elicitation/create, within the call, until the approval expires.
// Whatever it answers, the call ends with a tool result: the server's
// once approved, else the refusal (see decide); an error, an answer the
// SDK refuses (fields not of the form) or no answer leaves the approval
// pending (APPROVAL_PENDING).
func (p *Proxy) elicitNow(ctx context.Context, req *mcp.CallToolRequest, r gate.Result, tool string, in json.RawMessage) (*mcp.CallToolResult, error) {
	id := r.ApprovalID
	rec, err := p.o.Approvals.Get(ctx, id)
	if err != nil {
		return gateResult(r), nil
	}
	deadline := rec.Expires
	if w := p.o.ElicitWait; w > 0 && time.Now().Add(w).Before(deadline) {
		deadline = time.Now().Add(w)
	}
	ectx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	msg := "Norma: approval required (" + rec.ID + ")\n" + prompt.Box(rec, time.Now())
	er, err := req.Session.Elicit(ectx, &mcp.ElicitParams{Message: msg, RequestedSchema: choiceSchema})
	if err != nil || er == nil {
		why := "the MCP client gave no answer"
		if err != nil {
			why = "the MCP client's answer was an error or not the form's"
		}
		return gateResult(gate.Result{Tool: tool, IsError: true, Reason: capability.ReasonApprovalPending, ApprovalID: id, Content: pendingText(id, why)}), nil
	}
	if refusal, _ := p.decide(ctx, req.Session, tool, id, er); refusal != nil {
		return gateResult(*refusal), nil
	}
	return toolResult(p.execute(ctx, req.Session, tool, in, req.Params.Meta))
}

// callKey identifies a call by tool and canonical input.
func callKey(tool string, in json.RawMessage) string {
	var v any
	if json.Unmarshal(in, &v) == nil {
		if b, err := json.Marshal(v); err == nil {
			in = b
		}
	}
	return tool + "\x00" + string(in)
}

// Refuse is the approver when nobody can answer (no elicitation and
// --approval-wait 0): every request is refused at once, the approval
// denied and audited as such.
type Refuse struct{}

// RefuseBy is who a [Refuse] verdict is by.
const RefuseBy = "norma:mcp-proxy"

func (Refuse) Approve(ctx context.Context, r approval.Record) (approval.Verdict, error) {
	return approval.Verdict{By: RefuseBy, Why: "no approver: the MCP client cannot be asked (no elicitation) and the proxy does not wait (--approval-wait 0)"}, nil
}
