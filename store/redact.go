package store

import (
	"net/url"
	"regexp"
	"strings"
	"sync"
)

// passwordParam finds a password in what is not a URL: a keyword/value
// connection string, where libpq allows spaces around "=" and quotes a
// value with spaces ('…', \' inside).
// passwordParam is compiled on first use (start-up cost of every command).
var passwordParam = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)(password\s*=\s*)('(?:[^'\\]|\\.)*'?|[^&\s]*)`)
})

// Redact returns a store location fit to print: the password of a URL's
// user info and any password query parameter (password, sslpassword) are replaced by "xxxxx". A
// database URL is a full-power credential; every message that names a
// store names it through Redact. A value that does not parse as a URL is
// returned with everything after its scheme hidden, as it may still hold
// a password.
func Redact(location string) string {
	if !strings.Contains(location, "://") {
		// A path, or something typed as one (a keyword/value connection
		// string): hide what follows any password=.
		return passwordParam().ReplaceAllString(location, "${1}xxxxx")
	}
	u, err := url.Parse(location)
	if err != nil {
		scheme, _, _ := strings.Cut(location, "://")
		return scheme + "://(unparsable URL hidden)"
	}
	if u.User != nil {
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), "xxxxx")
		}
	}
	q, changed := u.Query(), false
	for k := range q {
		if strings.Contains(strings.ToLower(k), "password") { // password, sslpassword
			q.Set(k, "xxxxx")
			changed = true
		}
	}
	if changed {
		u.RawQuery = q.Encode()
	}
	return u.String()
}
