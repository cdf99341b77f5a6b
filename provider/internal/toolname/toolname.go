// Package toolname maps Norma tool names onto the names model APIs accept.
//
// Both the Anthropic and the OpenAI APIs accept tool names matching
// ^[a-zA-Z0-9_-]{1,64}$. Norma's own names (Read, mcp__memory__read_graph)
// are valid and go out unchanged; a name with other bytes (an older plugin
// tool like "issues.comment") is sanitized, each such byte becoming '_'.
// A hash suffix ("_" and 8 hex digits of the name's SHA-256) is added only
// when it is needed: when the sanitized form is also another name's, or
// when it is longer than 64 bytes and must be cut.
//
// A [Map] is built from the whole set of names of one request
// ([ForRequest]), so that the wire form of a name depends on the set only,
// never on the order in which names were seen; it decodes every wire name
// it produced back to its name. Both providers build it the same way.
package toolname

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strconv"

	"github.com/norma-run/norma/provider"
)

// MaxLen is the longest wire name.
const MaxLen = 64

// suffixLen is the length of "_" and 8 hex digits.
const suffixLen = 9

// Map is a bidirectional table between names and wire names. It is not
// modified after it is built, and is safe for concurrent use.
type Map struct {
	toWire   map[string]string
	fromWire map[string]string
}

// ForRequest returns the Map of every tool name of req: its tools and the
// tool_use blocks of its messages.
func ForRequest(req provider.Request) *Map {
	var names []string
	for _, t := range req.Tools {
		names = append(names, t.Name)
	}
	for _, m := range req.Messages {
		for _, b := range m.Blocks {
			if b.Type == provider.BlockToolUse {
				names = append(names, b.Name)
			}
		}
	}
	return Build(names)
}

// Build returns the Map of a set of names; duplicates and order do not
// matter. A valid name is its own wire name. Another name is its
// sanitized form when no other name of the set shares that form and it
// needs no cut; otherwise it gets a hash suffix (a rehash, in the rare case
// the suffixed form is taken too).
func Build(names []string) *Map {
	set := slices.Clone(names)
	slices.Sort(set)
	set = slices.Compact(set)
	m := &Map{toWire: make(map[string]string, len(set)), fromWire: make(map[string]string, len(set))}
	shared := map[string]int{}
	for _, n := range set {
		shared[sanitize(n)]++
	}
	var suffixed []string
	for _, n := range set {
		s := sanitize(n)
		if Valid(n) || (Valid(s) && shared[s] == 1) {
			m.add(n, s)
			continue
		}
		suffixed = append(suffixed, n)
	}
	// Valid names and lone sanitized forms are taken first: a suffixed
	// form never displaces them.
	for _, n := range suffixed {
		s := sanitize(n)
		s = s[:min(len(s), MaxLen-suffixLen)]
		for salt := 0; ; salt++ {
			if w := s + "_" + digest(n, salt); m.fromWire[w] == "" {
				m.add(n, w)
				break
			}
		}
	}
	return m
}

func (m *Map) add(name, wire string) {
	m.toWire[name] = wire
	m.fromWire[wire] = name
}

// Wire returns the wire name of name. A name the Map was not built with
// gets its sanitized form (with a suffix when cut), which Decode does not
// know.
func (m *Map) Wire(name string) string {
	if w, ok := m.toWire[name]; ok {
		return w
	}
	return Build([]string{name}).toWire[name]
}

// Decode returns the name of a wire name. A wire name the Map did not
// produce is returned unchanged, so the gate sees (and refuses) exactly
// what the model asked for.
func (m *Map) Decode(wire string) string {
	if n, ok := m.fromWire[wire]; ok {
		return n
	}
	return wire
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

// sanitize replaces every byte a wire name may not hold with '_'.
func sanitize(name string) string {
	b := []byte(name)
	for i, c := range b {
		if !validByte(c) {
			b[i] = '_'
		}
	}
	return string(b)
}

// digest is 8 hex digits of the SHA-256 of name (and salt, after the
// first try).
func digest(name string, salt int) string {
	in := name
	if salt > 0 {
		in += "\x00" + strconv.Itoa(salt)
	}
	sum := sha256.Sum256([]byte(in))
	return hex.EncodeToString(sum[:4])
}
