package secret

import (
	"crypto/subtle"
	"fmt"
	"log/slog"
)

// redacted is what every printing method of a [Value] produces.
const redacted = "[REDACTED]"

// Value is a secret value. It never prints its content: String, GoString,
// Format (every verb), LogValue, MarshalText and MarshalJSON all produce
// "[REDACTED]". [Value.Reveal] is the explicit way to the bytes and is
// meant for the broker alone.
//
// The zero Value is empty. A Value is immutable and safe for concurrent
// use; copies share the same bytes.
type Value struct {
	b *[]byte
}

// NewValue returns a Value holding a copy of b.
func NewValue(b []byte) Value {
	c := make([]byte, len(b))
	copy(c, b)
	return Value{b: &c}
}

// Reveal returns a copy of the secret bytes. Callers must not log, print
// or store the result; only the broker calls it, to build a header.
func (v Value) Reveal() []byte {
	if v.b == nil {
		return nil
	}
	c := make([]byte, len(*v.b))
	copy(c, *v.b)
	return c
}

// Len returns the length of the value in bytes.
func (v Value) Len() int {
	if v.b == nil {
		return 0
	}
	return len(*v.b)
}

// IsZero reports whether the value is empty.
func (v Value) IsZero() bool { return v.Len() == 0 }

// Equal reports whether v and w hold the same bytes, in constant time for
// equal lengths.
func (v Value) Equal(w Value) bool {
	if v.Len() != w.Len() {
		return false
	}
	if v.Len() == 0 {
		return true
	}
	return subtle.ConstantTimeCompare(*v.b, *w.b) == 1
}

// String returns "[REDACTED]".
func (Value) String() string { return redacted }

// GoString returns "[REDACTED]", so %#v does not print the bytes either.
func (Value) GoString() string { return redacted }

// Format writes "[REDACTED]" for every verb, including %x, %q and %v.
func (Value) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(redacted)) }

// LogValue implements slog.LogValuer.
func (Value) LogValue() slog.Value { return slog.StringValue(redacted) }

// MarshalText implements encoding.TextMarshaler with "[REDACTED]".
func (Value) MarshalText() ([]byte, error) { return []byte(redacted), nil }

// MarshalJSON implements json.Marshaler with "[REDACTED]".
func (Value) MarshalJSON() ([]byte, error) { return []byte(`"` + redacted + `"`), nil }
