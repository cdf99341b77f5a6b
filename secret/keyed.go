package secret

import "bytes"

// Bounds of the keyed-entropy detector.
const (
	minKeyedLen     = 16  // shorter values are words, flags, ids
	maxKeyedLen     = 512 // longer ones are documents
	maxKeyNameLen   = 64
	minKeyedEntropy = 3.2 // bits per byte (a random base62 string of 16 has about 3.8)
)

// keyed finds a high-entropy value after a credential's name: at every
// ':' or '=' whose left side is a name (optionally quoted: JSON, YAML,
// headers, env dumps, queries, form bodies) that [CredentialKey] calls a
// credential's, the value on its right (optionally quoted, after an
// optional "Bearer", "Basic" or "token" scheme) is a finding when it is
// 16 to 512 bytes of no spaces or quotes, with at least two kinds of
// character (lower, upper, digit, other), a Shannon entropy of at least
// 3.2 bits per byte, and it is not a UUID, a template ("${…}", "{{…}}",
// "xxxx", "…" written as three dots) or a redaction.
func (d *detection) keyed(b []byte, via string) {
	for i, c := range b {
		if c != ':' && c != '=' || d.full() {
			continue
		}
		if name, ok := keyName(b, i); ok && credentialASCII(name) {
			if v := keyValue(b, i+1); v != nil && highEntropy(v) && !documented(DetectorKeyedEntropy, v) {
				d.add(Finding{Detector: DetectorKeyedEntropy, Class: ClassSecret, Via: via}, v)
			}
		}
	}
}

// credentialASCII is credentialName for an ASCII name, in one pass with
// no copy: whether it holds one of credentialWords in any case.
func credentialASCII(n []byte) bool {
	if nonCredentialName(n) {
		return false
	}
	has := func(i int, w string) bool {
		if len(n)-i < len(w) {
			return false
		}
		for j := 1; j < len(w); j++ {
			if n[i+j]|0x20 != w[j] {
				return false
			}
		}
		return true
	}
	for i, c := range n {
		switch c | 0x20 {
		case 'p':
			if has(i, "pass") || has(i, "pwd") {
				return true
			}
		case 's':
			if has(i, "secret") || has(i, "sig") || has(i, "session") {
				return true
			}
		case 't':
			if has(i, "token") {
				return true
			}
		case 'k':
			if has(i, "key") {
				return true
			}
		case 'a':
			if has(i, "auth") {
				return true
			}
		case 'c':
			if has(i, "cred") || has(i, "cookie") {
				return true
			}
		case 'j':
			if has(i, "jwt") {
				return true
			}
		}
	}
	return false
}

func isNameByte(c byte) bool { return classes[c]&cWord != 0 || c == '-' || c == '.' }

// keyName returns the name before the separator at b[at]: spaces, an
// optional closing quote, then [A-Za-z0-9_.-]+ (at most 64 bytes).
func keyName(b []byte, at int) ([]byte, bool) {
	e := at
	for e > 0 && (b[e-1] == ' ' || b[e-1] == '\t') {
		e--
	}
	if e > 0 && (b[e-1] == '"' || b[e-1] == '\'') {
		e--
	}
	s := e
	for s > 0 && e-s < maxKeyNameLen && isNameByte(b[s-1]) {
		s--
	}
	return b[s:e], s < e && (s == 0 || !isNameByte(b[s-1]))
}

// keyValue returns the value after the separator ending at from, or nil.
func keyValue(b []byte, from int) []byte {
	i := from
	if i < len(b) && b[i] == '=' { // "==", ":="
		i++
	}
	for i < len(b) && (b[i] == ' ' || b[i] == '\t') {
		i++
	}
	if i < len(b) && (b[i] == '"' || b[i] == '\'') {
		i++
	}
	for _, scheme := range [...]string{"Bearer ", "bearer ", "Basic ", "basic ", "token ", "Token "} {
		if bytes.HasPrefix(b[i:], []byte(scheme)) {
			i += len(scheme)
			break
		}
	}
	j := i
	for j < len(b) && j-i <= maxKeyedLen {
		c := b[j]
		if c <= ' ' || c == '"' || c == '\'' || c == '&' || c == ',' || c == ';' || c == '}' || c == ']' || c == '<' || c == '>' || c == '`' || c == '\\' || c >= 0x80 {
			break
		}
		j++
	}
	if n := j - i; n < minKeyedLen || n > maxKeyedLen {
		return nil
	}
	return b[i:j]
}

// highEntropy reports whether v looks generated (see keyed).
func highEntropy(v []byte) bool {
	var lower, upper, digit, other bool
	for _, c := range v {
		switch {
		case 'a' <= c && c <= 'z':
			lower = true
		case 'A' <= c && c <= 'Z':
			upper = true
		case '0' <= c && c <= '9':
			digit = true
		default:
			other = true
		}
	}
	kinds := 0
	for _, k := range [...]bool{lower, upper, digit, other} {
		if k {
			kinds++
		}
	}
	if kinds < 2 || isUUID(v) || bytes.Contains(v, []byte("${")) || bytes.Contains(v, []byte("{{")) ||
		bytes.Contains(v, []byte("REDACTED")) || bytes.HasPrefix(v, []byte(PlaceholderPrefix)) || bytes.Contains(v, []byte("xxxx")) || bytes.Contains(v, []byte("XXXX")) || bytes.Contains(v, []byte("...")) {
		return false
	}
	return entropy(v) >= minKeyedEntropy
}

// isUUID reports whether v is a UUID (8-4-4-4-12 hex digits): an
// identifier far more often than a credential.
func isUUID(v []byte) bool {
	if len(v) != 36 {
		return false
	}
	for i, c := range v {
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !isHexDigit(c) {
				return false
			}
		}
	}
	return true
}

// nonCredentials are names that hold a credential's word but whose values
// are not secrets: they are random by design, made to be sent (a retry's
// key, which Norma's own gate hands plugins; a WebSocket handshake's
// nonce). Their values are still checked for known values and token
// formats; only the keyed-entropy detector skips them.
var nonCredentials = []string{"idempotency-key", "idempotency_key", "x-idempotency-key", "sec-websocket-key"}

// nonCredentialName reports whether n is one of nonCredentials, in any
// ASCII case.
func nonCredentialName(n []byte) bool {
	for _, w := range nonCredentials {
		if len(n) == len(w) && bytes.EqualFold(n, []byte(w)) {
			return true
		}
	}
	return false
}
