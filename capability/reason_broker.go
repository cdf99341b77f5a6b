package capability

// Reason codes of the secret vaults (package secret) and the egress broker
// (package broker). SECRET_UNDECLARED and SECRET_ORIGIN_MISMATCH live in
// capability.go. They follow the rules of every other code: stable, never
// renamed. The broker also uses AUDIT_UNAVAILABLE (reason_gate.go) when a
// decision cannot be written to the audit log.
const (
	// ReasonSecretUnavailable: a declared secret has no value in the vault,
	// the vault could not be read or decrypted, or the value is unusable;
	// the request that needed it is refused (fail closed).
	ReasonSecretUnavailable Reason = "SECRET_UNAVAILABLE"
	// ReasonSecretInvalid: a secret name or value was refused by a vault
	// (bad name, empty or oversized value, too short to redact reliably).
	ReasonSecretInvalid Reason = "SECRET_INVALID"
	// ReasonBrokerTargetMismatch: the TLS SNI or the Host header inside a
	// CONNECT tunnel does not name the CONNECT target.
	ReasonBrokerTargetMismatch Reason = "BROKER_TARGET_MISMATCH"
	// ReasonBrokerRateLimited: the plugin exceeded its request rate.
	ReasonBrokerRateLimited Reason = "BROKER_RATE_LIMITED"
	// ReasonBrokerConnectionLimit: the plugin exceeded its concurrent
	// connection limit.
	ReasonBrokerConnectionLimit Reason = "BROKER_CONNECTION_LIMIT"
	// ReasonBrokerProtocol: the request cannot be proxied (not a proxy
	// request, an Upgrade, a tunnel that does not speak TLS).
	ReasonBrokerProtocol Reason = "BROKER_PROTOCOL"
	// ReasonNetworkRequestTooLarge: a request body exceeded the size cap.
	ReasonNetworkRequestTooLarge Reason = "NETWORK_REQUEST_TOO_LARGE"
	// ReasonNetworkUpstreamFailed: the allowed request could not be
	// completed upstream (connect error, TLS verification failure, reset).
	ReasonNetworkUpstreamFailed Reason = "NETWORK_UPSTREAM_FAILED"
)
