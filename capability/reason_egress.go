package capability

// Reason codes of the content checks at the exits (issue 29): what a
// request, a fetch or an outbound tool call carries, found by the
// detector engine (secret.Redactor.Detect). The decision's Rule names the
// detector ("egress:github-token", "egress:known-value:NAME"), never the
// value. Stable, never renamed.
const (
	// ReasonSecretEgress: a credential would leave — a known secret
	// value (the vault's, a provider key, a credential withheld from the
	// host environment), a token of a known format, a private key, or a
	// high-entropy value after a credential's name, as written or
	// encoded.
	ReasonSecretEgress Reason = "SECRET_EGRESS"
	// ReasonSensitiveDataEgress: a checked identifier would leave: a
	// payment card number, an IBAN, a BIP-39 seed phrase.
	ReasonSensitiveDataEgress Reason = "SENSITIVE_DATA_EGRESS"
)

// LayerEgress is the layer of the content checks at the exits.
const LayerEgress Layer = "egress"

// ReasonInjectionSuspected marks (it refuses nothing) content the model
// reads that hides text from a person (HTML comments, CSS-hidden
// elements, invisible characters) or carries instruction-like phrases:
// it is delivered marked as untrusted data, the hidden text shown.
const ReasonInjectionSuspected Reason = "INJECTION_SUSPECTED"
