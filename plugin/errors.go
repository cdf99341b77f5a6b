package plugin

import (
	"github.com/norma-run/norma/capability"
)

// newErr returns the *capability.Error of a refusal of this package, the
// error type of every refusal here: layer plugin, a stable reason code (see
// capability/reason_plugin.go), and the public Detail "op path: msg", where
// op names the operation ("unpack", "verify", "install", …), path the
// package entry or file concerned (may be empty; quoted when it holds
// spaces or unusual bytes, so a hostile entry name cannot forge output)
// and msg a human explanation. cause is the internal error, reachable
// through errors.Is and errors.As but never part of the message.
//
// Two such errors match with errors.Is when their codes are equal, and
// [capability.ReasonOf] returns the code, so callers and tests compare
// codes, never messages.
func newErr(code capability.Reason, op, path, msg string, cause error) *capability.Error {
	return &capability.Error{Decision: capability.Decision{Mode: capability.Deny, Reason: code, Layer: capability.LayerPlugin},
		Detail: capability.OpDetail(op, path, msg), Err: cause}
}
