package ident_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/norma-run/norma/agent"
	"github.com/norma-run/norma/tool"
)

// callSites are the exported checks built on Valid, each beside the
// regular expression it replaced: the oracle applies to the functions the
// module calls, not to copies of their arguments.
var callSites = []struct {
	name  string
	re    *regexp.Regexp
	valid func(string) bool
}{
	{"tool.ValidName", regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_.-]{0,127}$`), tool.ValidName},
	{"agent.ValidRunID", regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$`), agent.ValidRunID},
}

// edgeInputs are the lengths around each bound, non-ASCII, NUL, a
// trailing newline (which $ in some dialects allows) and invalid UTF-8.
var edgeInputs = []string{
	"", "a", "a\x00", "\x00a", "a\n", "a\r", "é", "aé", "a\xff", "\xc3", "a.b", "a_b-c", "-a", ".a", "_a", "0a",
	strings.Repeat("a", 63), strings.Repeat("a", 64), strings.Repeat("a", 65),
	strings.Repeat("a", 127), strings.Repeat("a", 128), strings.Repeat("a", 129),
	strings.Repeat("é", 32), strings.Repeat("é", 64), "a" + strings.Repeat("\u00e9", 63),
}

func TestCallSitesMatchRegexps(t *testing.T) {
	for _, s := range edgeInputs {
		for _, c := range callSites {
			if got, want := c.valid(s), c.re.MatchString(s); got != want {
				t.Errorf("%s(%q) = %v, the regexp says %v", c.name, s, got, want)
			}
		}
	}
}

func FuzzCallSites(f *testing.F) {
	for _, s := range edgeInputs {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, c := range callSites {
			if got, want := c.valid(s), c.re.MatchString(s); got != want {
				t.Errorf("%s(%q) = %v, the regexp says %v", c.name, s, got, want)
			}
		}
	})
}
