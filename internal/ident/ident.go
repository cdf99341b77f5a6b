package ident

import "strings"

// Valid reports whether s has 1 to max bytes, its first byte satisfies
// first and every other byte rest.
func Valid(s string, max int, first, rest func(byte) bool) bool {
	if len(s) == 0 || len(s) > max || !first(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !rest(s[i]) {
			return false
		}
	}
	return true
}

// Letter reports whether b is an ASCII letter.
func Letter(b byte) bool { return 'A' <= b && b <= 'Z' || 'a' <= b && b <= 'z' }

// AlNum reports whether b is an ASCII letter or digit.
func AlNum(b byte) bool { return Letter(b) || '0' <= b && b <= '9' }

// AlNumOr returns the set of ASCII letters, digits and the bytes of extra.
func AlNumOr(extra string) func(byte) bool {
	return func(b byte) bool { return AlNum(b) || strings.IndexByte(extra, b) >= 0 }
}
