package gate

import (
	"context"
	"errors"

	"github.com/norma-run/norma/approval"
	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/tool"
)

// ApprovalRequest is what the gate asks an Approver about: one exact action,
// named by its hash. Preview is a short rendering of the normalized requests
// (never the raw input, never a secret).
type ApprovalRequest struct {
	RunID      string
	Principals []string
	ToolUseID  string
	Plugin     tool.Plugin
	Tool       string
	// ActionHash is approval.HashAction over plugin, version, manifest
	// digest, tool, the canonical input and the run id.
	ActionHash string
	// Decision is why approval is needed.
	Decision capability.Decision
	Preview  string
}

// Ticket lets exactly one execution proceed.
type Ticket struct {
	ApprovalID     string
	IdempotencyKey string
	ActionHash     string
	Use            int
}

// Approver decides approval requests. It must return an error, never a
// ticket, when it cannot get a decision; the gate denies on any error and on
// a ticket without an approval id.
type Approver interface {
	Approve(ctx context.Context, r ApprovalRequest) (Ticket, error)
}

// Finisher is implemented by approvers that must be told when an approved
// execution finished (so a crash between consume and finish is detectable).
type Finisher interface {
	Finish(ctx context.Context, t Ticket) error
}

// ApproverFunc adapts a function to Approver.
type ApproverFunc func(ctx context.Context, r ApprovalRequest) (Ticket, error)

// Approve calls f.
func (f ApproverFunc) Approve(ctx context.Context, r ApprovalRequest) (Ticket, error) {
	return f(ctx, r)
}

// ServiceApprover adapts the durable *approval.Service to Approver.
type ServiceApprover struct {
	Service *approval.Service
	// Scope of new requests; empty means once.
	Scope approval.Scope
}

// Approve implements Approver through Service.Authorize.
func (s ServiceApprover) Approve(ctx context.Context, r ApprovalRequest) (Ticket, error) {
	if s.Service == nil {
		return Ticket{}, errors.New("gate: ServiceApprover without a service")
	}
	t, err := s.Service.Authorize(ctx, approval.Request{
		RunID: r.RunID, Principals: r.Principals,
		Plugin: r.Plugin.ID, PluginVersion: r.Plugin.Version, ManifestDigest: r.Plugin.ManifestDigest,
		Tool: r.Tool, Target: r.Decision.Request, Preview: r.Preview,
		ActionHash: r.ActionHash, Scope: s.Scope,
	})
	if err != nil {
		return Ticket{}, err
	}
	return Ticket{ApprovalID: t.ApprovalID, IdempotencyKey: t.IdempotencyKey, ActionHash: t.ActionHash, Use: t.Use}, nil
}

// Finish implements Finisher.
func (s ServiceApprover) Finish(ctx context.Context, t Ticket) error {
	return s.Service.Finish(ctx, approval.Ticket{ApprovalID: t.ApprovalID, IdempotencyKey: t.IdempotencyKey, ActionHash: t.ActionHash, Use: t.Use})
}
