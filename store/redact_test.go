package store_test

import (
	"strings"
	"testing"

	"github.com/norma-run/norma/store"
)

func TestRedact(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"/var/lib/norma/norma.db", "/var/lib/norma/norma.db"},
		{"postgres://norma@db:5432/norma", "postgres://norma@db:5432/norma"},
		{"postgres://norma:s3cret@db:5432/norma?tenant=ci", "postgres://norma:xxxxx@db:5432/norma?tenant=ci"},
		{"postgres://db/norma?user=n&password=s3cret", "postgres://db/norma?user=n&password=xxxxx"},
		{"postgresql://db/norma?sslpassword=s3cret", "postgresql://db/norma?sslpassword=xxxxx"},
		{"postgres://norma:s3cret@db:bad port/x", "postgres://(unparsable URL hidden)"},
		// Every case and spelling of a credential's name, in a query.
		{"postgres://db/n?PASSWORD=s3cret&tenant=ci", "postgres://db/n?PASSWORD=xxxxx&tenant=ci"},
		{"postgres://db/n?pAssword0=s3cret", "postgres://db/n?pAssword0=xxxxx"},
		{"postgres://db/n?pass=s3cret&pwd=s3cret&passwd=s3cret", "postgres://db/n?pass=xxxxx&pwd=xxxxx&passwd=xxxxx"},
		{"postgres://db/n?client_secret=s3cret&access_token=s3cret&apikey=s3cret", "postgres://db/n?client_secret=xxxxx&access_token=xxxxx&apikey=xxxxx"},
		{"postgres://db/n?p%61ssword=s3cret", "postgres://db/n?p%61ssword=xxxxx"},
		{"postgres://db/n?pa%zzss=s3cret", "postgres://db/n?pa%zzss=xxxxx"},
		{"postgres://db/n?password=s3cret;x&tenant=ci", "postgres://db/n?password=xxxxx&tenant=ci"},
		{"postgres://db/n?password=s3cret#x", "postgres://db/n?password=xxxxx#x"},
		{"postgres://db/n#password=s3cret", "postgres://db/n#password=xxxxx"},
		{"postgres://db/n?password=", "postgres://db/n?password="},
		// A name is all that precedes its "=" back to the previous "&":
		// "?" and ";" are part of it, as url.Query reads them.
		{"postgres://db/n?a?password=s3cret", "postgres://db/n?a?password=xxxxx"},
		{"postgres://db/n?pAsS?=s3cret&tenant=ci", "postgres://db/n?pAsS?=xxxxx&tenant=ci"},
		{"postgres://db/n?x;pwd=s3cret", "postgres://db/n?x;pwd=xxxxx"},
		{"?pAsS?=s3cret", "?pAsS?=xxxxx"},
		{"x.db?a=1=pass=s3cret", "x.db?a=1=pass=xxxxx"},
		// User info without a scheme, and what does not parse.
		{"//norma:s3cret@db/n", "//norma:xxxxx@db/n"},
		{"//norma:s3cret@db:bad/n", "(unparsable URL hidden)"},
		{"password=s3cret://x:bad", "(unparsable URL hidden)"},
		// Keyword/value strings, as libpq reads them: what follows a
		// password is hidden with it.
		{"host=db password=s3cret", "host=db password=xxxxx"},
		{"host=db password=s3cret dbname=n", "host=db password=xxxxx"},
		{"host=db dbname=n password = s3cret", "host=db dbname=n password = xxxxx"},
		{"host=db PASSWORD=\ts3cret", "host=db PASSWORD=\txxxxx"},
		{"host=db password='s3cret with spaces' dbname=n", "host=db password=xxxxx"},
		{`host=db password='it\'s s3cret' dbname=n`, "host=db password=xxxxx"},
		{"host=db password='s3cret unterminated", "host=db password=xxxxx"},
		{"host=db sslpassword = s3cret", "host=db sslpassword = xxxxx"},
		{"?pAssword0=s3cret", "?pAssword0=xxxxx"},
		{"x.db?a=1&Pwd=s3cret&b=2", "x.db?a=1&Pwd=xxxxx&b=2"},
	} {
		got := store.Redact(c.in)
		if got != c.want {
			t.Errorf("Redact(%q) = %q, want %q", c.in, got, c.want)
		}
		if strings.Contains(got, "s3cret") {
			t.Errorf("Redact(%q) kept the password: %q", c.in, got)
		}
	}
}

// TestCredentialKey: every name a driver or a service gives a secret, in
// every case, is a credential's; names of what is not secret are not.
func TestCredentialKey(t *testing.T) {
	for _, k := range credentialNames {
		for _, name := range spellings(k) {
			if !store.CredentialKey(name) {
				t.Errorf("CredentialKey(%q) = false", name)
			}
		}
	}
	for _, name := range []string{"host", "port", "dbname", "user", "tenant", "sslmode", "sslrootcert", "application_name", "connect_timeout", ""} {
		if store.CredentialKey(name) {
			t.Errorf("CredentialKey(%q) = true", name)
		}
	}
}

// credentialNames are parameter names that hold a secret somewhere: libpq's
// and pgx's, OAuth's, cloud SDKs', signed URLs'.
var credentialNames = []string{
	"password", "sslpassword", "pass", "passwd", "passphrase", "pwd", "db_pwd",
	"secret", "client_secret", "token", "access_token", "refresh_token", "key",
	"apikey", "api_key", "sslkey", "auth", "authorization", "credentials",
	"sig", "signature", "jwt", "cookie", "session", "sessionid",
}

// spellings returns k in lower case, upper case, title case, alternating
// case, percent-encoded, with a long s or a Kelvin sign where they fold to
// s or k, with a digit after and inside a longer name.
func spellings(k string) []string {
	alt := []byte(k)
	for i := range alt {
		if i%2 == 1 {
			alt[i] = strings.ToUpper(string(alt[i]))[0]
		}
	}
	enc := "%" + strings.ToUpper(string("0123456789abcdef"[k[0]>>4])+string("0123456789abcdef"[k[0]&15])) + k[1:]
	return []string{
		k, strings.ToUpper(k), strings.ToUpper(k[:1]) + k[1:], string(alt), enc,
		strings.ReplaceAll(k, "s", "ſ"), strings.ReplaceAll(k, "k", "\u212a"),
		k + "0", "x_" + k + "_y",
	}
}
