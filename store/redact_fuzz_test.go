package store_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/norma-run/norma/store"
)

// FuzzRedact: whatever the location, a password it holds (in the user
// info or a *password* query parameter, appearing once) is not in what
// Redact returns.
func FuzzRedact(f *testing.F) {
	for _, s := range []string{
		"postgres://norma:s3cret-pw@db:5432/norma?tenant=ci",
		"postgres://db/norma?password=s3cret-pw&user=n",
		"postgresql://db/norma?sslpassword=s3cret-pw",
		"postgres://norma:s3cret-pw@db:bad/x",
		"/var/lib/norma/norma.db",
		"sqlite:/x.db",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := store.Redact(s)
		u, err := url.Parse(s)
		if err != nil {
			return
		}
		var secrets []string
		if pw, ok := u.User.Password(); ok {
			secrets = append(secrets, pw)
		}
		for k, vs := range u.Query() {
			if strings.Contains(strings.ToLower(k), "password") {
				secrets = append(secrets, vs...)
			}
		}
		for _, pw := range secrets {
			if len(pw) >= 6 && strings.Count(s, pw) == 1 && strings.Contains(got, pw) {
				t.Fatalf("Redact(%q) = %q keeps the password %q", s, got, pw)
			}
		}
	})
}
