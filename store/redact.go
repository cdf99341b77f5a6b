package store

import (
	"net/url"
	"strings"
	"unicode"
)

// Redact returns a store location fit to print. Hidden, as "xxxxx": the
// password of a URL's user info, and the value of every parameter whose
// name is a credential's ([CredentialKey]), in the query, the fragment or
// a string that is not a URL at all (a keyword/value connection string
// typed as a path, "host=db password=pw"). A database URL is a full-power
// credential; every message that names a store names it through Redact.
//
// A hidden value runs to the next "&" (and in a URL to the next "#"), the
// way a query is split; in a keyword/value string that hides the
// parameters after a password too, which is the price of never leaving
// part of a password with spaces in it. A URL that does not parse is
// hidden after its scheme.
func Redact(location string) string {
	scheme, _, hasScheme := strings.Cut(location, "://")
	if !hasScheme && !strings.HasPrefix(location, "//") {
		// A path, or something typed as one.
		return hideParams(location, "&")
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
	// The parameters of the query, and any in the fragment or the path:
	// the whole printed URL is scanned, so no part of it is a side door.
	return hideParams(u.String(), "&#")
}

// hideParams replaces with "xxxxx" the value after every "=" whose name
// is a credential's. The name is what precedes the "=" back to the
// previous "&", "?", "#", ";" or "=" (so "db password" in "host=db
// password=pw", still a credential's name); the value runs, after any
// spaces, to the next byte of end or the end of s.
func hideParams(s, end string) string {
	var b strings.Builder
	done := 0 // s[:done] is written
	for i := 0; i < len(s); i++ {
		if s[i] != '=' {
			continue
		}
		start := strings.LastIndexAny(s[:i], "&?#;=") + 1
		if start < done || !CredentialKey(s[start:i]) {
			continue
		}
		v := i + 1
		for v < len(s) && (s[v] == ' ' || s[v] == '\t' || s[v] == '\n' || s[v] == '\r' || s[v] == '\f' || s[v] == '\v') {
			v++
		}
		stop := len(s)
		if n := strings.IndexAny(s[v:], end); n >= 0 {
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

// credentialWords are the parts of a parameter's name that make its value
// a credential: password, passwd, passphrase, sslpassword, pass, pwd,
// secret, client_secret, token, access_token, key, apikey, sslkey,
// auth, authorization, credentials, sig (a signed URL's), jwt, cookie,
// session.
var credentialWords = []string{"pass", "pwd", "secret", "token", "key", "auth", "cred", "sig", "jwt", "cookie", "session"}

// CredentialKey reports whether a parameter named name may hold a
// credential: whether name, unescaped as in a query and folded to lower
// case (every case: "PASSWORD", "PaSs", "paſs" with a long s), contains
// one of the words of a credential's name. A name that does not unescape
// counts as a credential's.
func CredentialKey(name string) bool {
	n, err := url.QueryUnescape(name)
	if err != nil {
		return true
	}
	n = strings.Map(func(r rune) rune { return unicode.ToLower(unicode.ToUpper(r)) }, n)
	for _, w := range credentialWords {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

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
