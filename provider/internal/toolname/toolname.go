// Package toolname maps Norma tool names onto the names model APIs accept.
//
// Norma names tools like "mcp__com.example.issue-helper__issues.comment";
// both the Anthropic and the OpenAI APIs accept only ^[a-zA-Z0-9_-]{1,64}$.
// A [Map] gives every name a wire form (the name itself when it is already
// valid, otherwise a sanitized name with a hash suffix) and maps wire names
// in responses back. It is built per request and is not safe for
// concurrent mutation.
package toolname

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

// MaxLen is the longest wire name produced.
const MaxLen = 64

// Map is a bidirectional name table.
type Map struct {
	toWire   map[string]string
	fromWire map[string]string
}

// New returns an empty Map.
func New() *Map {
	return &Map{toWire: map[string]string{}, fromWire: map[string]string{}}
}

// Valid reports whether name is acceptable on the wire as is.
func Valid(name string) bool {
	if name == "" || len(name) > MaxLen {
		return false
	}
	for i := 0; i < len(name); i++ {
		if !validByte(name[i]) {
			return false
		}
	}
	return true
}

func validByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// Encode returns the deterministic wire form of name.
func Encode(name string) string {
	if Valid(name) {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	suffix := "_" + hex.EncodeToString(sum[:4])
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		c := name[i]
		if validByte(c) {
			b.WriteByte(c)
		} else {
			b.WriteByte('_')
		}
	}
	s := b.String()
	if len(s) > MaxLen-len(suffix) {
		s = s[:MaxLen-len(suffix)]
	}
	return s + suffix
}

// Add registers name and returns its wire form. It fails when two distinct
// names would share a wire form.
func (m *Map) Add(name string) (string, error) {
	if w, ok := m.toWire[name]; ok {
		return w, nil
	}
	w := Encode(name)
	if other, ok := m.fromWire[w]; ok && other != name {
		return "", fmt.Errorf("tool names %q and %q collide on the wire as %q", other, name, w)
	}
	m.toWire[name] = w
	m.fromWire[w] = name
	return w, nil
}

// Decode returns the Norma name for a wire name. A wire name that was never
// registered is returned unchanged, so the gate sees (and refuses) exactly
// what the model asked for.
func (m *Map) Decode(wire string) string {
	if n, ok := m.fromWire[wire]; ok {
		return n
	}
	return wire
}
