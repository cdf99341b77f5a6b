package audit

import (
	"cmp"
	"slices"
	"strconv"
	"time"
	"unicode/utf16"
	"unicode/utf8"
)

// appendCanonical appends the RFC 8785 encoding of e: members sorted by
// UTF-16 code units, no whitespace, strings escaped as ECMAScript's
// JSON.stringify does, empty members omitted (as MarshalJSON omits them).
// Integers are written exactly; RFC 8785 agrees for |n| < 2^53, the range
// I-JSON guarantees. TestCanonicalMatchesJCS checks it against the
// reference implementation.
func appendCanonical(b []byte, e *Event) []byte {
	first := true
	key := func(k string) {
		if first {
			b = append(b, '{')
			first = false
		} else {
			b = append(b, ',')
		}
		// The member names below are plain ASCII: no escaping to do.
		b = append(b, '"')
		b = append(b, k...)
		b = append(b, '"', ':')
	}
	str := func(k, v string) {
		if v != "" {
			key(k)
			b = appendString(b, v)
		}
	}
	// Members in RFC 8785 order (all ASCII, so byte order is code-unit order).
	str("approvalId", e.ApprovalID)
	str("capabilityKind", e.CapabilityKind)
	str("decision", e.Decision)
	if len(e.Detail) > 0 {
		key("detail")
		b = appendMap(b, e.Detail)
	}
	if e.DurationMS != 0 {
		key("durationMs")
		b = strconv.AppendInt(b, e.DurationMS, 10)
	}
	if e.IsError {
		key("isError")
		b = append(b, "true"...)
	}
	str("layer", e.Layer)
	str("manifestDigest", e.ManifestDigest)
	str("outputDigest", e.OutputDigest)
	str("plugin", e.Plugin)
	str("pluginVersion", e.PluginVersion)
	if e.PolicyGeneration != 0 {
		key("policyGeneration")
		b = strconv.AppendUint(b, e.PolicyGeneration, 10)
	}
	str("principal", e.Principal)
	str("reason", e.Reason)
	str("rule", e.Rule)
	str("runId", e.RunID)
	str("targetHash", e.TargetHash)
	key("time")
	b = append(b, '"')
	b = e.Time.UTC().AppendFormat(b, time.RFC3339Nano)
	b = append(b, '"')
	str("tool", e.Tool)
	key("type")
	b = appendString(b, e.Type)
	return append(b, '}')
}

func appendMap(b []byte, m map[string]string) []byte {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, compareUTF16)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, k)
		b = append(b, ':')
		b = appendString(b, m[k])
	}
	return append(b, '}')
}

// compareUTF16 orders strings by their UTF-16 code units (RFC 8785 3.2.3),
// each invalid UTF-8 byte counting as U+FFFD, without allocating: it sorts
// every event's detail keys.
func compareUTF16(a, b string) int {
	for a != "" && b != "" {
		ra, na := utf8.DecodeRuneInString(a)
		rb, nb := utf8.DecodeRuneInString(b)
		a, b = a[na:], b[nb:]
		if ra == rb {
			continue
		}
		// Only the first differing rune decides. A BMP rune is one unit and
		// never a surrogate, so it differs from a supplementary rune's high
		// surrogate; two supplementary runes may share it.
		ha, la := utf16Units(ra)
		hb, lb := utf16Units(rb)
		if c := cmp.Compare(ha, hb); c != 0 {
			return c
		}
		return cmp.Compare(la, lb)
	}
	return cmp.Compare(len(a), len(b)) // the one left over is the longer
}

// utf16Units is r's UTF-16 encoding: one unit (lo 0) or a surrogate pair.
func utf16Units(r rune) (hi, lo rune) {
	if r < 0x10000 {
		return r, 0
	}
	return utf16.EncodeRune(r)
}

const hexDigits = "0123456789abcdef"

// plainByte[c] reports that c is ASCII and written as it is in a JSON
// string (not a control character, '"' or '\\').
var plainByte = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// appendString writes s as a JSON string the way RFC 8785 requires;
// invalid UTF-8 becomes U+FFFD, as encoding/json does.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0 // s[start:i] is a run of bytes written as they are, appended at once
	for i := 0; i < len(s); {
		c := s[i]
		if plainByte[c] {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, "\ufffd"...)
			i++
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
