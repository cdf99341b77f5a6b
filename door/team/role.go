package team

import (
	"fmt"
	"slices"
)

// Role is what a bearer token may do on the team server. Roles are
// disjoint by design: an approver cannot file a request (so nobody
// approves their own), and a runner, the credential a CI job or an agent
// machine holds, can file and wait but never approve.
type Role string

// Roles.
const (
	// RoleApprover reads everything and approves or denies requests.
	RoleApprover Role = "approver"
	// RoleViewer reads approvals, the audit log, runs and plugins.
	RoleViewer Role = "viewer"
	// RoleRunner files approval requests and reads approvals (to wait on
	// its own); it cannot decide one, nor read the audit log.
	RoleRunner Role = "runner"
)

// Roles lists every role, in the order help texts show them.
var Roles = []Role{RoleApprover, RoleViewer, RoleRunner}

// ParseRole parses a role name.
func ParseRole(s string) (Role, error) {
	r := Role(s)
	if !slices.Contains(Roles, r) {
		return "", fmt.Errorf("team: unknown role %q (want approver, viewer or runner)", s)
	}
	return r, nil
}

// Action is what a route does, for [Can].
type Action string

// Actions.
const (
	// ActionReadApprovals: list, show and wait on approval requests.
	ActionReadApprovals Action = "approvals.read"
	// ActionDecide: approve or deny a pending request.
	ActionDecide Action = "approvals.decide"
	// ActionFile: file a new approval request.
	ActionFile Action = "approvals.file"
	// ActionReadAudit: query and verify the audit log and its
	// checkpoints, list runs and their events, list plugins, read
	// metrics.
	ActionReadAudit Action = "audit.read"
)

// grants is the whole authorization table: the one place that says which
// role may do what. Anything not listed is refused.
var grants = map[Role][]Action{
	RoleApprover: {ActionReadApprovals, ActionDecide, ActionReadAudit},
	RoleViewer:   {ActionReadApprovals, ActionReadAudit},
	RoleRunner:   {ActionReadApprovals, ActionFile},
}

// Can reports whether role may do act. An unknown role or action may do
// nothing.
func Can(role Role, act Action) bool { return slices.Contains(grants[role], act) }
