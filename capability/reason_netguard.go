package capability

// Reason codes added by the network guard (guard/netguard). They follow the
// rules of the codes in capability.go: stable, never renamed.
const (
	// ReasonNetworkResolveFailed: the host name could not be resolved, or
	// resolved to no address; the request is refused (fail closed).
	ReasonNetworkResolveFailed Reason = "NETWORK_RESOLVE_FAILED"
	// ReasonNetworkResponseTooLarge: a response body exceeded the
	// configured size cap; the body is cut off with this error.
	ReasonNetworkResponseTooLarge Reason = "NETWORK_RESPONSE_TOO_LARGE"
)
