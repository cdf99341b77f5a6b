package capability

// Reason codes of the built-in tools (package tools). They follow the rules
// of the codes in capability.go: stable, never renamed. A built-in tool
// returns them as a *Error with layer "tool", so the model sees the code.
const (
	// ReasonFileTooLarge: a file is larger than the tool's size cap (Read).
	ReasonFileTooLarge Reason = "FILE_TOO_LARGE"
	// ReasonFileBinary: a file holds a NUL byte in its first 8 KiB and is
	// treated as binary (Read).
	ReasonFileBinary Reason = "FILE_BINARY"
	// ReasonFileNotFound: the named file or directory does not exist.
	ReasonFileNotFound Reason = "FILE_NOT_FOUND"
	// ReasonEditNoMatch: the text to replace does not occur in the file
	// (Edit, MultiEdit); nothing was written.
	ReasonEditNoMatch Reason = "EDIT_NO_MATCH"
	// ReasonEditAmbiguous: the text to replace occurs more than once and
	// replace_all was not set; the message says how many times.
	ReasonEditAmbiguous Reason = "EDIT_AMBIGUOUS"
	// ReasonCapabilityMissing: the call needs a capability its Env does not
	// hold (no file system, no HTTP client, a file system without a
	// guarded walker); the tool refuses instead of working around it.
	ReasonCapabilityMissing Reason = "CAPABILITY_MISSING"
	// ReasonWebContentUnsupported: a fetched response has a content type
	// WebFetch does not turn into text (images, archives, binaries).
	ReasonWebContentUnsupported Reason = "WEB_CONTENT_UNSUPPORTED"
	// ReasonWebStatus: the server answered with a non-2xx status.
	ReasonWebStatus Reason = "WEB_HTTP_STATUS"
	// ReasonSearchBackendFailed: the search backend answered with an error
	// or a body that does not decode as its wire format.
	ReasonSearchBackendFailed Reason = "SEARCH_BACKEND_FAILED"
	// ReasonHostUnavailable: the tool needs a host callback (a user to ask,
	// a consent prompt, the gate) that this run does not have, as in a
	// headless run.
	ReasonHostUnavailable Reason = "HOST_UNAVAILABLE"
	// ReasonPlanExitDenied: leaving plan mode was not consented to, or no
	// consent callback exists; the session stays in plan mode.
	ReasonPlanExitDenied Reason = "PLAN_EXIT_DENIED"
	// ReasonExtraToolRecursive: ExecuteExtraTool was asked to run itself.
	ReasonExtraToolRecursive Reason = "EXTRA_TOOL_RECURSIVE"
)
