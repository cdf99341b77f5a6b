package store_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/norma-run/norma/store"
)

// FuzzRedact: whatever the location, a secret it holds (in the user info
// or a query parameter named after a credential, in any case: see
// credentialNames; appearing once) is not in what Redact returns.
func FuzzRedact(f *testing.F) {
	for _, s := range []string{
		"postgres://norma:s3cret-pw@db:5432/norma?tenant=ci",
		"postgres://db/norma?password=s3cret-pw&user=n",
		"postgresql://db/norma?sslpassword=s3cret-pw",
		"postgres://norma:s3cret-pw@db:bad/x",
		"/var/lib/norma/norma.db",
		"sqlite:/x.db",
		"//norma:s3cret-pw@db/n",
		"host=db password='s3cret pw' dbname=n",
	} {
		f.Add(s)
	}
	// Every spelling of every credential's name, in a URL and in what is
	// not one.
	for _, k := range credentialNames {
		for _, name := range spellings(k) {
			f.Add("postgres://db/n?tenant=ci&" + name + "=s3cret-pw")
			f.Add("?" + name + "=s3cret-pw")
			f.Add("postgres://db/n?x?" + name + "?=s3cret-pw#" + name + "=s3cret-pw")
			f.Add("?x;" + name + "=s3cret-pw")
		}
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
			if credentialName(k) {
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

// credentialName is the fuzz oracle: k, folded, contains one of
// credentialNames.
func credentialName(k string) bool {
	k = strings.ToLower(strings.ToUpper(k))
	for _, n := range credentialNames {
		if strings.Contains(k, n) {
			return true
		}
	}
	return false
}
