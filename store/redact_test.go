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
		{"postgres://db/norma?user=n&password=s3cret", "postgres://db/norma?password=xxxxx&user=n"},
		{"postgresql://db/norma?sslpassword=s3cret", "postgresql://db/norma?sslpassword=xxxxx"},
		{"postgres://norma:s3cret@db:bad port/x", "postgres://(unparsable URL hidden)"},
		// Keyword/value strings, as libpq reads them.
		{"host=db password=s3cret dbname=n", "host=db password=xxxxx dbname=n"},
		{"host=db password = s3cret dbname=n", "host=db password = xxxxx dbname=n"},
		{"host=db PASSWORD=\ts3cret", "host=db PASSWORD=\txxxxx"},
		{"host=db password='s3cret with spaces' dbname=n", "host=db password=xxxxx dbname=n"},
		{`host=db password='it\'s s3cret' dbname=n`, "host=db password=xxxxx dbname=n"},
		{"host=db password='s3cret unterminated", "host=db password=xxxxx"},
		{"host=db sslpassword = s3cret", "host=db sslpassword = xxxxx"},
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
