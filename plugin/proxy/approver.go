package proxy

import (
	"context"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/norma-run/norma/approval"
	"github.com/norma-run/norma/approval/prompt"
)

// Approver returns the approval.Approver of the proxy's approval service:
// it asks the client through elicitation when the client declared the
// capability, and fallback (nil: [Refuse]) otherwise. Its verdict is the
// approval service's to record and bind to the request's action hash.
func (p *Proxy) Approver(fallback approval.Approver) approval.Approver {
	if fallback == nil {
		fallback = Refuse{}
	}
	return elicitApprover{p: p, fallback: fallback}
}

type elicitApprover struct {
	p        *Proxy
	fallback approval.Approver
}

// The answer the client is asked for: one enum field.
const (
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

func (a elicitApprover) Approve(ctx context.Context, r approval.Record) (approval.Verdict, error) {
	ss, _ := ctx.Value(sessionKey{}).(*mcp.ServerSession)
	if ss == nil || !canElicit(ss) {
		return a.fallback.Approve(ctx, r)
	}
	msg := "Norma: approval required (" + r.ID + ")\n" + prompt.Box(r, time.Now())
	res, err := ss.Elicit(ctx, &mcp.ElicitParams{Mode: "form", Message: msg, RequestedSchema: choiceSchema})
	if err != nil {
		// No answer is a no answer: the service expires or denies the
		// request, never grants it.
		return approval.Verdict{}, fmt.Errorf("%w: elicitation: %w", approval.ErrNoDecision, err)
	}
	by := "mcp-client"
	if ip := ss.InitializeParams(); ip != nil && ip.ClientInfo != nil && ip.ClientInfo.Name != "" {
		by += ":" + ip.ClientInfo.Name
	}
	v := approval.Verdict{By: by}
	switch {
	case res.Action == "accept" && res.Content[choiceField] == choiceApprove:
		v.Approve, v.Why = true, "answered by the MCP client: yes, this once"
	case res.Action == "accept":
		v.Why = "answered by the MCP client: no"
	default:
		v.Why = "the MCP client's user answered " + res.Action
	}
	return v, nil
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

// Refuse is the approver when nobody can answer (--headless, or no
// elicitation and no wait): every request is refused at once, the
// approval denied and audited as such.
type Refuse struct{}

// RefuseBy is who a [Refuse] verdict is by.
const RefuseBy = "norma:mcp-proxy"

func (Refuse) Approve(ctx context.Context, r approval.Record) (approval.Verdict, error) {
	return approval.Verdict{By: RefuseBy, Why: "no approver: the MCP client cannot be asked (no elicitation) and the proxy does not wait for `norma approvals approve` (--approval-wait 0)"}, nil
}
