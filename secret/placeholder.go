package secret

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"strings"
)

// PlaceholderPrefix starts every placeholder.
const PlaceholderPrefix = "norma-secret:"

// tokenLen is the length of the random part: 128 bits in lower-case hex.
const tokenLen = 32

// Placeholder stands in for a secret in a plugin's environment:
// "norma-secret:NAME:TOKEN" with a fresh 128-bit random TOKEN per plugin
// process. It is not secret (it is worthless outside the broker that issued
// it) and prints as itself. The zero Placeholder is invalid.
type Placeholder struct {
	name  string
	token string
}

// NewPlaceholder returns a fresh placeholder for the secret name.
func NewPlaceholder(name string) (Placeholder, error) {
	if err := CheckName(name); err != nil {
		return Placeholder{}, err
	}
	var b [tokenLen / 2]byte
	if _, err := rand.Read(b[:]); err != nil {
		return Placeholder{}, unavailable(name, "placeholder: "+err.Error(), err)
	}
	return Placeholder{name: name, token: hex.EncodeToString(b[:])}, nil
}

// ParsePlaceholder parses exactly one placeholder; ok is false for anything
// else (surrounding text included).
func ParsePlaceholder(s string) (p Placeholder, ok bool) {
	rest, found := strings.CutPrefix(s, PlaceholderPrefix)
	if !found {
		return Placeholder{}, false
	}
	n := scanName([]byte(rest))
	if n == 0 || n+1+tokenLen != len(rest) || rest[n] != ':' || !isToken([]byte(rest[n+1:])) {
		return Placeholder{}, false
	}
	return Placeholder{name: rest[:n], token: rest[n+1:]}, true
}

// String returns "norma-secret:NAME:TOKEN"; ParsePlaceholder(p.String())
// returns p.
func (p Placeholder) String() string {
	if p.name == "" {
		return ""
	}
	return PlaceholderPrefix + p.name + ":" + p.token
}

// Name returns the secret name.
func (p Placeholder) Name() string { return p.name }

// Token returns the random part. It survives URL encoding, so the broker
// also searches for it alone.
func (p Placeholder) Token() string { return p.token }

// Valid reports whether p is a well-formed placeholder.
func (p Placeholder) Valid() bool { return p.name != "" && len(p.token) == tokenLen }

// PlaceholderMatch is one placeholder found by [ScanPlaceholders].
type PlaceholderMatch struct {
	Placeholder Placeholder
	// Start and End delimit the match in the scanned bytes.
	Start, End int
}

// ScanPlaceholders returns every well-formed placeholder in b, in order and
// without overlap. A placeholder followed by more hex digits still matches
// its first 32 (scanning is for detection, so it errs toward finding).
func ScanPlaceholders(b []byte) []PlaceholderMatch {
	var out []PlaceholderMatch
	prefix := []byte(PlaceholderPrefix)
	off := 0
	for {
		i := bytes.Index(b[off:], prefix)
		if i < 0 {
			return out
		}
		start := off + i
		rest := b[start+len(prefix):]
		n := scanName(rest)
		if n > 0 && len(rest) >= n+1+tokenLen && rest[n] == ':' && isToken(rest[n+1:n+1+tokenLen]) {
			end := start + len(prefix) + n + 1 + tokenLen
			out = append(out, PlaceholderMatch{
				Placeholder: Placeholder{name: string(rest[:n]), token: string(rest[n+1 : n+1+tokenLen])},
				Start:       start, End: end,
			})
			off = end
			continue
		}
		off = start + 1
	}
}

// scanName returns the length of the longest valid secret name at the
// start of b (0 when there is none).
func scanName(b []byte) int {
	if len(b) == 0 || b[0] < 'a' || b[0] > 'z' {
		return 0
	}
	n := 1
	for n < len(b) && n < maxNameLen {
		c := b[n]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_') {
			break
		}
		n++
	}
	return n
}

func isToken(b []byte) bool {
	if len(b) != tokenLen {
		return false
	}
	for _, c := range b {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
