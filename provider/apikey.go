package provider

import (
	"fmt"
	"log/slog"
	"strings"
)

// redacted is what an [APIKey] prints as.
const redacted = "[REDACTED]"

// APIKey holds a provider credential. It prints, formats, logs and marshals
// as "[REDACTED]"; only [APIKey.Reveal] returns the value. The zero APIKey is
// empty.
type APIKey struct{ v string }

// NewAPIKey wraps a credential the caller read from the environment or the
// secret vault.
func NewAPIKey(v string) APIKey { return APIKey{v: v} }

// Reveal returns the credential. Call it only to put the key in a request.
func (k APIKey) Reveal() string { return k.v }

// IsZero reports whether the key is empty.
func (k APIKey) IsZero() bool { return k.v == "" }

// String implements [fmt.Stringer] and redacts the key.
func (k APIKey) String() string {
	if k.v == "" {
		return ""
	}
	return redacted
}

// GoString implements [fmt.GoStringer] and redacts the key.
func (k APIKey) GoString() string { return "provider.APIKey(" + k.String() + ")" }

// Format implements [fmt.Formatter] so that every verb (%v, %+v, %s, %q,
// %x, %#v) redacts the key.
func (k APIKey) Format(f fmt.State, verb rune) {
	if verb == 'v' && f.Flag('#') {
		fmt.Fprint(f, k.GoString())
		return
	}
	fmt.Fprint(f, k.String())
}

// LogValue implements [slog.LogValuer] and redacts the key.
func (k APIKey) LogValue() slog.Value { return slog.StringValue(k.String()) }

// MarshalText implements [encoding.TextMarshaler] and redacts the key, so
// that JSON or YAML dumps of an options struct do not leak it.
func (k APIKey) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// Redact returns s with every occurrence of the key replaced by
// "[REDACTED]". Providers pass every error string through it.
func (k APIKey) Redact(s string) string {
	if len(k.v) < 4 { // too short to be a real key; avoid mangling text
		return s
	}
	return strings.ReplaceAll(s, k.v, redacted)
}
