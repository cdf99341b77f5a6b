package capability

// Reason codes of the shell, task and PTY tools (package tools/shell).
// They follow the rules of the codes in capability.go: stable, never
// renamed.
const (
	// ReasonShellConfigInvalid: the shell tools' configuration is invalid
	// (no policy, a relative or missing workspace, a malformed or
	// dangerous environment entry, an invalid session id).
	ReasonShellConfigInvalid Reason = "SHELL_CONFIG_INVALID"
	// ReasonShellClosed: the session's shell manager was closed; no new
	// command, task or PTY can start.
	ReasonShellClosed Reason = "SHELL_CLOSED"
	// ReasonShellLimit: too many running tasks or open PTYs in the session.
	ReasonShellLimit Reason = "SHELL_LIMIT"
	// ReasonTaskUnknown: no task with that id belongs to this session.
	ReasonTaskUnknown Reason = "TASK_UNKNOWN"
	// ReasonPtyUnknown: no PTY with that id belongs to this session, or it
	// was closed.
	ReasonPtyUnknown Reason = "PTY_UNKNOWN"
	// ReasonPtyInputRefused: PTY input holds a control character (which the
	// terminal would interpret, so the shell would not read the text that
	// was checked); control keys go through the explicit control field.
	ReasonPtyInputRefused Reason = "PTY_INPUT_REFUSED"
	// ReasonShellSandbox: the command could not be started because the OS
	// sandbox could not be built for it; the command never ran.
	ReasonShellSandbox Reason = "SHELL_SANDBOX_FAILED"
)
