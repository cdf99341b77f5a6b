package agent

import (
	"errors"

	"github.com/norma-run/norma/capability"
)

// Error is the error type of this package: a stable reason code from
// package capability (RUN_ID_INVALID, STATE_UNAVAILABLE, STATE_CORRUPT,
// PROVIDER_FAILED, TOOL_RESULT_UNPAIRED, SESSION_HALTED, ...), a message
// safe to show, and the internal cause. [Error.Is] compares codes only, so
// errors.Is(err, &agent.Error{Code: capability.ReasonStateCorrupt}) matches
// every STATE_CORRUPT error.
type Error struct {
	Code capability.Reason
	Msg  string
	Err  error
}

func (e *Error) Error() string {
	s := "agent: " + string(e.Code)
	if e.Msg != "" {
		s += ": " + e.Msg
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the internal cause.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is an *Error with the same code.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

func errorf(code capability.Reason, msg string, cause error) *Error {
	return &Error{Code: code, Msg: msg, Err: cause}
}

// CodeOf returns the reason code of err: the code of an *Error, or of a
// *capability.Error, or "" for anything else.
func CodeOf(err error) capability.Reason {
	if e, ok := errors.AsType[*Error](err); ok {
		return e.Code
	}
	return capability.ReasonOf(err)
}
