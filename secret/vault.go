package secret

import (
	"context"
	"errors"
	"fmt"

	"github.com/norma-run/norma/capability"
)

// Vault stores secret values by name. Implementations must be safe for
// concurrent use, must honour ctx, and must never include a value in an
// error or a log line.
type Vault interface {
	// Get returns the value of name. A missing secret is an error that
	// matches ErrNotFound (and has reason SECRET_UNAVAILABLE).
	Get(ctx context.Context, name string) (Value, error)
	// Set stores v under name, replacing any previous value.
	Set(ctx context.Context, name string, v Value) error
	// List returns the names of the stored secrets, sorted. Never values.
	List(ctx context.Context) ([]string, error)
	// Delete removes name; deleting a missing secret matches ErrNotFound.
	Delete(ctx context.Context, name string) error
}

// Limits on names and values.
const (
	// MinValueLen is the shortest value a vault accepts: shorter values
	// cannot be redacted from output without destroying unrelated text.
	MinValueLen = 8
	// MaxValueLen is the longest value a vault accepts.
	MaxValueLen = 64 << 10
	// maxNameLen matches the manifest schema (^[a-z][a-z0-9_]{0,63}$).
	maxNameLen = 64
)

// ErrNotFound is matched (errors.Is) by the error for a missing secret.
var ErrNotFound = errors.New("secret: not found")

// ErrReadOnly is matched by the error of Set or Delete on a read-only vault.
var ErrReadOnly = errors.New("secret: vault is read-only")

// newErr returns the *capability.Error of a refusal of this package: layer
// secret, the request "secret.use NAME", detail as the public message
// (never a value) and cause, a sentinel such as [ErrNotFound] or the
// underlying error, reachable through errors.Is.
func newErr(reason capability.Reason, name, detail string, cause error) *capability.Error {
	return &capability.Error{
		Decision: capability.Decision{Mode: capability.Deny, Reason: reason, Layer: capability.LayerSecret, Request: "secret.use " + name},
		Detail:   "secret: " + detail,
		Err:      cause,
	}
}

func notFound(name string) error {
	return newErr(capability.ReasonSecretUnavailable, name, fmt.Sprintf("%q is not set (use `norma secret set %s`)", name, name), ErrNotFound)
}

func unavailable(name, detail string, cause error) error {
	return newErr(capability.ReasonSecretUnavailable, name, detail, cause)
}

// ValidName reports whether name is a valid secret name: a lower-case
// letter followed by up to 63 lower-case letters, digits or underscores,
// as in the manifest schema.
func ValidName(name string) bool {
	if len(name) == 0 || len(name) > maxNameLen || name[0] < 'a' || name[0] > 'z' {
		return false
	}
	for i := 1; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// CheckName returns a SECRET_INVALID error when name is not [ValidName].
func CheckName(name string) error {
	if !ValidName(name) {
		return newErr(capability.ReasonSecretInvalid, "", "invalid secret name (want ^[a-z][a-z0-9_]{0,63}$)", nil)
	}
	return nil
}

// CheckValue returns a SECRET_INVALID error when v is shorter than
// MinValueLen, longer than MaxValueLen, or holds a NUL, CR or LF byte
// (which could split an HTTP header).
func CheckValue(name string, v Value) error {
	n := v.Len()
	if n < MinValueLen || n > MaxValueLen {
		return newErr(capability.ReasonSecretInvalid, name, fmt.Sprintf("value of %q must be %d to %d bytes, got %d", name, MinValueLen, MaxValueLen, n), nil)
	}
	for _, c := range *v.b {
		if c == 0 || c == '\r' || c == '\n' {
			return newErr(capability.ReasonSecretInvalid, name, fmt.Sprintf("value of %q holds a NUL, CR or LF byte", name), nil)
		}
	}
	return nil
}
