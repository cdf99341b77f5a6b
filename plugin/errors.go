package plugin

import (
	"errors"
	"strings"

	"github.com/norma-run/norma/capability"
)

// Error is the error type of every refusal in this package. Code is a stable
// reason code (see capability/reason_plugin.go); Op names the operation
// ("unpack", "verify", "install", …), Path the package entry or file
// concerned (may be empty), Msg a human explanation and Err the cause.
//
// Two *Error values match with [errors.Is] when their codes are equal, so
// callers and tests compare codes, never messages.
type Error struct {
	Code capability.Reason
	Op   string
	Path string
	Msg  string
	Err  error
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("plugin: ")
	if e.Op != "" {
		b.WriteString(e.Op)
		b.WriteString(" ")
	}
	if e.Path != "" {
		b.WriteString(quoteIfNeeded(e.Path))
		b.WriteString(": ")
	}
	b.WriteString(string(e.Code))
	if e.Msg != "" {
		b.WriteString(": ")
		b.WriteString(e.Msg)
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is an *Error with the same code.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// CodeOf returns the reason code of err when it is (or wraps) an *Error, and
// "" otherwise.
func CodeOf(err error) capability.Reason {
	if e, ok := errors.AsType[*Error](err); ok {
		return e.Code
	}
	return ""
}

func newErr(code capability.Reason, op, path, msg string, cause error) *Error {
	return &Error{Code: code, Op: op, Path: path, Msg: msg, Err: cause}
}

// quoteIfNeeded keeps ordinary paths readable and quotes anything with
// spaces or unusual bytes so that a hostile entry name cannot forge output.
func quoteIfNeeded(s string) string {
	for _, r := range s {
		if r <= ' ' || r == '"' || r == 0x7f || r > 0x7e {
			return strconvQuote(s)
		}
	}
	return s
}
