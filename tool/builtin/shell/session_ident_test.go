package shell

import (
	"regexp"
	"strings"
	"testing"
)

// sessionRE is the expression validSession replaced (issue 20), the
// oracle of FuzzValidSession.
var sessionRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

func FuzzValidSession(f *testing.F) {
	for _, s := range []string{"", "a", "-", "_a-b", "a\x00", "a\n", "é", "a\xff",
		strings.Repeat("a", 64), strings.Repeat("a", 65), strings.Repeat("é", 32)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := validSession(s), sessionRE.MatchString(s); got != want {
			t.Errorf("validSession(%q) = %v, the regexp says %v", s, got, want)
		}
	})
}
