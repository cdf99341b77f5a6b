package capability

// Reason codes for plugin packages, signatures, trust and installation.
// Package plugin returns them in *Error values (layer plugin), and they are
// written to the audit log. Add new ones at the end; never rename one.
const (
	// ReasonPluginPathInvalid: a package entry name is absolute, not clean,
	// contains "..", a control character or a backslash, or is too long.
	ReasonPluginPathInvalid Reason = "PLUGIN_PATH_INVALID"
	// ReasonPluginLink: a package entry is a symbolic or hard link.
	ReasonPluginLink Reason = "PLUGIN_LINK"
	// ReasonPluginSpecialFile: a package entry is a device, FIFO, socket or
	// carries setuid/setgid/sticky bits.
	ReasonPluginSpecialFile Reason = "PLUGIN_SPECIAL_FILE"
	// ReasonPluginDuplicateEntry: two entries name the same path, or a file
	// is also used as a directory.
	ReasonPluginDuplicateEntry Reason = "PLUGIN_DUPLICATE_ENTRY"
	// ReasonPluginArchiveLimit: an archive exceeds a size or count limit
	// (archive bomb).
	ReasonPluginArchiveLimit Reason = "PLUGIN_ARCHIVE_LIMIT"
	// ReasonPluginArchiveInvalid: an archive is not a well-formed .tar.gz or
	// uses an entry type a package may not contain.
	ReasonPluginArchiveInvalid Reason = "PLUGIN_ARCHIVE_INVALID"
	// ReasonPluginManifestMissing: no manifest.yaml at the package root.
	ReasonPluginManifestMissing Reason = "PLUGIN_MANIFEST_MISSING"
	// ReasonPluginManifestInvalid: manifest.yaml does not parse or validate.
	ReasonPluginManifestInvalid Reason = "PLUGIN_MANIFEST_INVALID"
	// ReasonPluginManifestMismatch: manifest.yaml names another plugin id,
	// version or digest than the signed statement (mix-and-match).
	ReasonPluginManifestMismatch Reason = "PLUGIN_MANIFEST_MISMATCH"
	// ReasonPluginUnsigned: the package has no package.sig.
	ReasonPluginUnsigned Reason = "PLUGIN_UNSIGNED"
	// ReasonPluginEnvelopeInvalid: package.sig is not a well-formed envelope.
	ReasonPluginEnvelopeInvalid Reason = "PLUGIN_ENVELOPE_INVALID"
	// ReasonPluginSignatureInvalid: no signature of the envelope verifies
	// over the statement with the key it names.
	ReasonPluginSignatureInvalid Reason = "PLUGIN_SIGNATURE_INVALID"
	// ReasonPluginStatementInvalid: the signed statement is malformed or
	// internally inconsistent.
	ReasonPluginStatementInvalid Reason = "PLUGIN_STATEMENT_INVALID"
	// ReasonPluginFileModified: a file's content differs from the statement.
	ReasonPluginFileModified Reason = "PLUGIN_FILE_MODIFIED"
	// ReasonPluginFileMode: a file's mode differs from the statement.
	ReasonPluginFileMode Reason = "PLUGIN_FILE_MODE"
	// ReasonPluginFileUnexpected: a file is present that was not signed.
	ReasonPluginFileUnexpected Reason = "PLUGIN_FILE_UNEXPECTED"
	// ReasonPluginFileMissing: a signed file is absent.
	ReasonPluginFileMissing Reason = "PLUGIN_FILE_MISSING"
	// ReasonPluginMerkleMismatch: the Merkle root of the files differs from
	// the signed root.
	ReasonPluginMerkleMismatch Reason = "PLUGIN_MERKLE_MISMATCH"
	// ReasonPluginKeyUntrusted: the signing key is not in the trust store.
	ReasonPluginKeyUntrusted Reason = "PLUGIN_KEY_UNTRUSTED"
	// ReasonPluginKeyScope: the signing key is trusted, but not for this
	// plugin id prefix.
	ReasonPluginKeyScope Reason = "PLUGIN_KEY_SCOPE"
	// ReasonPluginKeyRotation: the plugin is pinned to another key and the
	// statement is not co-signed by it.
	ReasonPluginKeyRotation Reason = "PLUGIN_KEY_ROTATION"
	// ReasonPluginRollback: the version is lower than (or equal to, with other
	// contents) the highest version installed for this plugin and key.
	ReasonPluginRollback Reason = "PLUGIN_ROLLBACK"
	// ReasonPluginConsentRequired: the install or update needs the user's
	// consent that was not given (held update, headless install without grant).
	ReasonPluginConsentRequired Reason = "PLUGIN_CONSENT_REQUIRED"
	// ReasonPluginConsentDeclined: the user declined the consent.
	ReasonPluginConsentDeclined Reason = "PLUGIN_CONSENT_DECLINED"
	// ReasonPluginWorkspaceForbids: a workspace policy forbids a capability
	// the plugin requests.
	ReasonPluginWorkspaceForbids Reason = "PLUGIN_WORKSPACE_FORBIDS"
	// ReasonPluginGrantMismatch: a grant or consent is bound to another
	// plugin id, version range or permission digest.
	ReasonPluginGrantMismatch Reason = "PLUGIN_GRANT_MISMATCH"
	// ReasonPluginNotInstalled: the plugin (or version) is not installed.
	ReasonPluginNotInstalled Reason = "PLUGIN_NOT_INSTALLED"
	// ReasonPluginState: the plugin state directory is unreadable or corrupt.
	ReasonPluginState Reason = "PLUGIN_STATE"
	// ReasonPluginKeyInvalid: a key file is malformed or of the wrong type.
	ReasonPluginKeyInvalid Reason = "PLUGIN_KEY_INVALID"
)

// ReasonPluginFileRenamed: a signed file is present under another name.
const ReasonPluginFileRenamed Reason = "PLUGIN_FILE_RENAMED"
