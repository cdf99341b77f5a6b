// Package secret keeps credentials out of the hands of tools and plugins.
//
// A secret is stored in a [Vault] and referenced by name. A manifest's
// secrets entry becomes a [Handle] bound to (name, purpose origin, scopes,
// injection header); a handle holds no value. Only the egress broker
// (package broker) resolves a handle to a [Value], and only for a request
// whose normalized origin equals the handle's purpose.
//
// Backends: [FileVault] encrypts every value at rest with AES-256-GCM under
// a key taken from a [KeySource] (by default a [KeyFile] of mode 0600 next
// to the vault; an OS keyring can be plugged in through the same
// interface); [EnvVault] reads variables named by the operator once, at
// construction, and is read-only; external vaults implement [Vault].
//
// Unmodified third-party plugins read tokens from their environment: they
// get a [Placeholder] ("norma-secret:NAME:<32 hex>") instead, generated per
// plugin process, which the broker replaces in outgoing headers toward the
// purpose origin only. [ScanPlaceholders] finds placeholders in any byte
// string.
//
// A [Redactor] knows the live secret values and placeholders, and the
// token formats of common credentials (GitHub, AWS key ids, Slack, PEM
// and PGP private keys, JWTs, and the families of families.go), and
// rewrites every output channel (tool results,
// spill files, audit, run state, logs, hook stdin) in one pass:
// [Redactor.Redact] and [Redactor.RedactCount], [Redactor.RedactBytes],
// [Redactor.Writer] for streams and [Redactor.MaskReader] for proxied
// bodies.
//
// The same engine is the detector of what leaves (issue 29):
// [Redactor.Detect] finds the known values, the token formats (the
// common cloud, payment, chat and CI ones too, families.go), checked
// identifiers (payment cards, IBANs, BIP-39 seed phrases, WIF and hex
// private keys) and high-entropy values after a credential's name
// ([CredentialKey]), after a normalizer that undoes URL encoding,
// escapes, base64/base32/hex, splitting, invisible and look-alike
// characters; [Redactor.CheckEgress] turns its findings into a decision
// (SECRET_EGRESS, SENSITIVE_DATA_EGRESS) under the rules set with
// [Redactor.SetEgress]. The gate and the broker call it at every exit.
// Package secrettest holds the samples the tests of every exit send.
//
// Values never print: [Value] implements fmt.Formatter, fmt.Stringer,
// fmt.GoStringer, slog.LogValuer, encoding.TextMarshaler and
// json.Marshaler, all redacted; [Value.Reveal] is the one explicit way out.
//
// Errors that refuse something are *capability.Error with reason
// SECRET_UNAVAILABLE (missing value, vault failure) or SECRET_INVALID (bad
// name or value); [ErrNotFound] and [ErrReadOnly] are matched with errors.Is.
//
// What this package does not protect against: a process with the same uid
// that reads the key file and the vault (the key file is a speed bump, not
// a boundary; the OS sandbox keeps plugins away from both), values that a
// purpose server reflects in an encoded form, and a value copied out of
// memory of the host process.
package secret
