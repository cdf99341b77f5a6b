// Package plugin handles plugin packages: what exactly a publisher shipped,
// who signed it, whether the user trusts that key for that plugin id, and
// installing, updating and removing plugins with the user's consent.
//
// # Package
//
// A package is a directory, or a reproducible .tar.gz of it ([Pack]), with
// manifest.yaml at the root. Its identity is a Merkle root ([MerkleRoot]) over
// leaves (path, mode, sha256(content)) for every regular file except
// package.sig, sorted by path, with domain-separated leaf (0x00) and node
// (0x01) hashing in the RFC 6962 shape. Modes are reduced to 0644 or 0755.
// Names must be clean, relative and unique ([ValidPath]); links, devices,
// setuid bits, duplicates and archives over the [Limits] are refused by
// [Unpack], [Stage] and [HashDir], each with its own reason code.
//
// # Signature
//
// package.sig is a DSSE-style [Envelope] whose payload is a [Statement]:
// plugin id, version, manifest digest, Merkle root, signing key, time and the
// file list (so that a refusal names the file that differs). [Sign] writes
// it; [Verify] checks, cheapest first: envelope, signatures and trust,
// statement consistency, the manifest (id, version, digest — catching a
// swapped manifest), then every file name, mode and byte.
//
// # Trust
//
// A [TrustStore] holds the publisher keys the user added, each limited to
// plugin id prefixes, and the rollback table: the pinned key of each plugin,
// the highest version installed per key and the contents of every version
// installed. A lower version needs AllowDowngrade (audited); a version
// installed before with other contents is refused even then (build
// metadata does not make another version); a new key is accepted for a
// plugin only when the statement is co-signed by the pinned key. The same
// version checks apply to unsigned --dev updates through the plugin's
// state ([State.History]), and an unsigned package replaces a signed one
// only with AllowUnsignedReplace.
//
// # Install, consent, update
//
// A [Manager] stages a package (nothing is written outside its staging
// directory until everything verified), shows the install screen, asks a
// [Consenter] per capability [Group] (the user may narrow), stores the user
// grant as a policy layer bound to plugin id, version range and permission
// digest ([Binding]), audits through an audit.Sink, and renames the files
// into place read-only. A grant file (InstallOptions.Grant, the headless
// consent) is stored as given, normalized and intersected with what the
// manifest requests, so the stored grant decides as the file does. Updates
// that only narrow apply at once; updates that widen are held until
// [Manager.Consent] accepts exactly what widened. Every grant written, and
// every removal, is first a [ConsentRecord] in Options.Consents (the
// team's store): a refusal there changes nothing.
//
// Refusals are *[capability.Error] values with layer plugin and a stable
// reason code from package capability (PLUGIN_*); the operation and the
// entry or file concerned are in the public Detail, the cause in Err.
// Compare codes with [capability.ReasonOf] or errors.Is.
package plugin
