package agent

import (
	"github.com/norma-run/norma/capability"
)

// errorf returns the *capability.Error of a failure of this package: layer
// agent, a stable reason code (RUN_ID_INVALID, STATE_UNAVAILABLE,
// STATE_CORRUPT, PROVIDER_FAILED, TOOL_RESULT_UNPAIRED, SESSION_HALTED,
// ...), msg as the public message and cause as the internal one, reachable
// through errors.Is and errors.As but never part of the message.
// errors.Is(err, &capability.Error{Decision: capability.Decision{Reason:
// capability.ReasonStateCorrupt}}) matches every STATE_CORRUPT error, and
// [capability.ReasonOf] returns the code.
func errorf(code capability.Reason, msg string, cause error) *capability.Error {
	return &capability.Error{Decision: capability.Decision{Mode: capability.Deny, Reason: code, Layer: capability.LayerAgent},
		Detail: msg, Err: cause}
}
