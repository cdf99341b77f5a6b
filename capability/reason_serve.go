package capability

// Reason codes of the `norma serve` daemon and the client the command hooks
// forward through (package daemon). They follow the rules of the codes in
// capability.go: stable, never renamed.
const (
	// ReasonServeNoAnswer: a running daemon accepted a hook request and
	// gave no answer (it crashed, was killed, timed out or answered
	// malformed). The command hook denies instead of deciding again, so
	// an input that brings the daemon down is never let through.
	ReasonServeNoAnswer Reason = "SERVE_NO_ANSWER"
)
