package capability

// Reason codes of the approval inbox's pages (package team/inbox): the
// code a refused page or form post names. A refusal for a missing or
// revoked sign-in, or a role that may not, uses the team server's codes
// (TEAM_UNAUTHENTICATED, TEAM_FORBIDDEN). Stable, never renamed.
const (
	// ReasonInboxCrossOrigin: a state-changing request whose browser
	// provenance (Sec-Fetch-Site, else Origin) is not this origin: a
	// page of another site, or of another port of the same host, posted
	// it (HTTP 403). Nothing was changed.
	ReasonInboxCrossOrigin Reason = "INBOX_CROSS_ORIGIN"
	// ReasonInboxCSRF: a form post without the session's CSRF token
	// (HTTP 403). Nothing was changed.
	ReasonInboxCSRF Reason = "INBOX_CSRF"
	// ReasonInboxBadForm: a form post that is unreadable, too large or
	// names no known decision (HTTP 400). Nothing was changed.
	ReasonInboxBadForm Reason = "INBOX_BAD_FORM"
)
