package capability

// Reason codes of the team server (`norma serve --team`, package team):
// the code of every JSON error it answers. They follow the rules of the
// codes in capability.go: stable, never renamed.
const (
	// ReasonTeamUnauthenticated: the request carries no bearer token, or
	// one that is unknown or revoked (HTTP 401).
	ReasonTeamUnauthenticated Reason = "TEAM_UNAUTHENTICATED"
	// ReasonTeamForbidden: the token is valid but its role may not do
	// this (HTTP 403): a runner or a viewer that approves, a viewer that
	// files a request. Nothing was changed.
	ReasonTeamForbidden Reason = "TEAM_FORBIDDEN"
	// ReasonTeamNotFound: no such route, approval or run (HTTP 404).
	ReasonTeamNotFound Reason = "TEAM_NOT_FOUND"
	// ReasonTeamAlreadyDecided: the approval left the pending state
	// before this decision (HTTP 409); the stored decision stands.
	ReasonTeamAlreadyDecided Reason = "TEAM_ALREADY_DECIDED"
	// ReasonTeamBodyTooLarge: the request body is over the server's
	// bound (HTTP 413); nothing of it was acted on.
	ReasonTeamBodyTooLarge Reason = "TEAM_BODY_TOO_LARGE"
	// ReasonTeamInternal: the server failed to answer (HTTP 500); the
	// message is generic, the details are in the server's log.
	ReasonTeamInternal Reason = "TEAM_INTERNAL"
)

// LayerTeam is the layer of the team server's refusals.
const LayerTeam Layer = "team"
