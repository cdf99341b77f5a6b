package ident

import (
	"regexp"
	"testing"
)

// syntaxes are the module's identifier syntaxes, each beside the regular
// expression it replaced, which is the oracle here.
var syntaxes = []struct {
	name  string
	re    *regexp.Regexp
	valid func(string) bool
}{
	{"tool name", regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_.-]{0,127}$`),
		func(s string) bool { return Valid(s, 128, Letter, AlNumOr("_.-")) }},
	{"run id", regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$`),
		func(s string) bool { return Valid(s, 64, AlNum, AlNumOr("_-")) }},
	{"shell session", regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`),
		func(s string) bool { return Valid(s, 64, AlNumOr("_-"), AlNumOr("_-")) }},
}

func TestValid(t *testing.T) {
	long := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = 'a'
		}
		return string(b)
	}
	for _, s := range []string{"", "a", "A9", "9a", "_a", "a_b.c-d", "a b", "a\n", "é", "a/b", long(63), long(64), long(65), long(128), long(129)} {
		for _, sx := range syntaxes {
			if got, want := sx.valid(s), sx.re.MatchString(s); got != want {
				t.Errorf("%s %q: %v, the regexp says %v", sx.name, s, got, want)
			}
		}
	}
}

func FuzzValid(f *testing.F) {
	f.Add("a_b.c-d")
	f.Fuzz(func(t *testing.T, s string) {
		for _, sx := range syntaxes {
			if got, want := sx.valid(s), sx.re.MatchString(s); got != want {
				t.Errorf("%s %q: %v, the regexp says %v", sx.name, s, got, want)
			}
		}
	})
}
