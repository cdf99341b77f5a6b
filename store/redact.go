package store

import (
	"net/url"
	"strings"

	"github.com/norma-run/norma/secret"
)

// Redact returns a store location fit to print. Hidden, as "xxxxx": the
// password of a URL's user info, and the value of every parameter whose
// name is a credential's ([CredentialKey]), in a URL's query or fragment,
// or anywhere in a string that is not a URL (a keyword/value connection
// string typed as a path, "host=db password=pw"). A database URL is a
// full-power credential; every message that names a store names it
// through Redact.
//
// A parameter is read as a query is, only more widely: its name is all
// that precedes its "=" back to the previous "&" (in a keyword/value
// string, "host=db password" is the name of pw, and still a credential's),
// and its value runs to the next "&", which in a keyword/value string
// hides the parameters after a password too: the price of never leaving
// part of a password with spaces in it. A URL that does not parse is
// hidden after its scheme.
func Redact(location string) string {
	scheme, _, hasScheme := strings.Cut(location, "://")
	if !hasScheme && !strings.HasPrefix(location, "//") {
		// A path, or something typed as one.
		return hideParams(location)
	}
	u, err := url.Parse(location)
	if err != nil {
		if hasScheme && validScheme(scheme) {
			return scheme + "://(unparsable URL hidden)"
		}
		return "(unparsable URL hidden)"
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	u.RawQuery = hideParams(u.RawQuery)
	frag := u.EscapedFragment()
	u.Fragment, u.RawFragment = "", ""
	if frag != "" {
		return u.String() + "#" + hideParams(frag)
	}
	return u.String()
}

// hideParams replaces with "xxxxx" the value after every "=" whose name
// is a credential's (see Redact).
func hideParams(s string) string {
	var b strings.Builder
	done := 0 // s[:done] is written
	for i := 0; i < len(s); i++ {
		if s[i] != '=' || !CredentialKey(s[strings.LastIndexByte(s[:i], '&')+1:i]) {
			continue
		}
		v := i + 1
		for v < len(s) && (s[v] == ' ' || s[v] == '\t' || s[v] == '\n' || s[v] == '\r' || s[v] == '\f' || s[v] == '\v') {
			v++
		}
		stop := len(s)
		if n := strings.IndexByte(s[v:], '&'); n >= 0 {
			stop = v + n
		}
		if v == stop {
			continue // an empty value hides nothing
		}
		b.WriteString(s[done:v])
		b.WriteString("xxxxx")
		done, i = stop, stop-1
	}
	if done == 0 {
		return s
	}
	b.WriteString(s[done:])
	return b.String()
}

// CredentialKey reports whether a parameter named name may hold a
// credential; it is [secret.CredentialKey], the one answer, which the
// egress detector shares.
func CredentialKey(name string) bool { return secret.CredentialKey(name) }

// validScheme reports whether s is a URL scheme (RFC 3986), so that it may
// be printed: a letter, then letters, digits, "+", "-" or ".".
func validScheme(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || i > 0 && ('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.')) {
			return false
		}
	}
	return s != ""
}
