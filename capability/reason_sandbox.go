package capability

// Reason codes of the OS sandbox (package sandbox). ReasonSandboxUnavailable
// is declared with the other codes; these complete it. Never rename one.
const (
	// ReasonSandboxSpecInvalid: the Spec given to the sandbox is malformed
	// (relative path, missing grant, deny path with extra hard links, …).
	ReasonSandboxSpecInvalid Reason = "SANDBOX_SPEC_INVALID"
	// ReasonSandboxSetupFailed: a layer was available but could not be
	// applied (a mount, the Landlock ruleset, the seccomp filter, a limit).
	ReasonSandboxSetupFailed Reason = "SANDBOX_SETUP_FAILED"
	// ReasonSandboxExecFailed: the sandbox was built but the target could
	// not be executed (not found, not executable, not visible inside).
	ReasonSandboxExecFailed Reason = "SANDBOX_EXEC_FAILED"
)
