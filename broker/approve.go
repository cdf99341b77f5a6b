package broker

import (
	"context"
	"encoding/json"
	"time"

	"github.com/norma-run/norma/approval"
	"github.com/norma-run/norma/capability"
)

// RequestInfo describes one brokered request to an [Approver]. It holds no
// secret: headers are not included, the body only as a digest and a
// redacted preview.
type RequestInfo struct {
	Identity Identity
	// Method and URL are normalized (the URL with its query).
	Method, URL string
	Origin      string
	Path        string
	// BodyDigest is "sha256:" + hex of the request body as sent.
	BodyDigest string
	BodyLen    int64
	// Preview is the start of the body, redacted, for a human to read.
	Preview string
	// ActionHash binds an approval to exactly this request: identity,
	// method, URL and body digest (see [ActionHash]).
	ActionHash string
	// Decision is the policy decision that asked for approval.
	Decision capability.Decision
}

// Grant is an approver's yes for one request.
type Grant struct {
	ApprovalID string
	// IdempotencyKey, when set, is sent upstream as Idempotency-Key.
	IdempotencyKey string
	// Finish, when set, is called once the upstream exchange is over (with
	// a context that is not cancelled), so a crash in between can be told
	// apart from a completed call.
	Finish func(ctx context.Context) error
}

// Approver decides requests whose policy decision is approval_required. It
// must honour ctx and return an error, never a Grant, when it cannot get a
// yes; an error that is (or wraps) a *capability.Error keeps its reason
// code, any other error is APPROVAL_DENIED.
type Approver interface {
	ApproveRequest(ctx context.Context, info RequestInfo) (Grant, error)
}

// ApproverFunc adapts a function to [Approver].
type ApproverFunc func(ctx context.Context, info RequestInfo) (Grant, error)

// ApproveRequest calls f.
func (f ApproverFunc) ApproveRequest(ctx context.Context, info RequestInfo) (Grant, error) {
	return f(ctx, info)
}

// ToolNetRequest is the tool name under which brokered requests are
// approved and audited.
const ToolNetRequest = "net.request"

// ActionHash returns the approval action hash of a brokered request: the
// canonical hash ([approval.HashAction]) of the plugin identity and the
// input {"method", "url", "bodySha256"}. Any change of method, URL (query
// included) or body changes it. It fails when the identity has no RunID.
func ActionHash(id Identity, method, url, bodyDigest string) (string, error) {
	in, err := json.Marshal(struct {
		Method string `json:"method"`
		URL    string `json:"url"`
		Body   string `json:"bodySha256"`
	}{method, url, bodyDigest})
	if err != nil {
		return "", err
	}
	return approval.HashAction(approval.Action{
		Plugin: id.Plugin, Version: id.Version, ManifestDigest: id.ManifestDigest,
		Tool: ToolNetRequest, Input: in, RunID: id.RunID,
	})
}

// ServiceApprover is an [Approver] over an [approval.Service]: the request
// is stored, asked, decided and consumed there (durably, audited), and the
// ticket's idempotency key is returned.
type ServiceApprover struct {
	Service *approval.Service
	// Scope of the approvals it requests; "" means approval.ScopeOnce.
	Scope approval.Scope
	// TTL bounds how long a request stays answerable; zero means the
	// service default.
	TTL time.Duration
}

var _ Approver = ServiceApprover{}

// ApproveRequest implements [Approver].
func (a ServiceApprover) ApproveRequest(ctx context.Context, info RequestInfo) (Grant, error) {
	if a.Service == nil {
		return Grant{}, capability.Denied(capability.ReasonApprovalRequired, info.Method+" "+info.Origin+info.Path, "broker: no approval service")
	}
	req := approval.Request{
		RunID: info.Identity.RunID, Plugin: info.Identity.Plugin, PluginVersion: info.Identity.Version,
		ManifestDigest: info.Identity.ManifestDigest, Tool: ToolNetRequest, Effect: "net.request",
		Target: info.Method + " " + info.Origin + info.Path, Preview: info.Preview,
		ActionHash: info.ActionHash, Scope: a.Scope,
	}
	if a.TTL > 0 {
		req.Expires = time.Now().Add(a.TTL)
	}
	t, err := a.Service.Authorize(ctx, req)
	if err != nil {
		return Grant{}, err
	}
	svc := a.Service
	return Grant{
		ApprovalID: t.ApprovalID, IdempotencyKey: t.IdempotencyKey,
		Finish: func(ctx context.Context) error { return svc.Finish(ctx, t) },
	}, nil
}
