package command

import (
	"os/exec"
	"strings"
	"testing"
)

// sedSandboxRefuses reports whether GNU sed in sandbox mode refuses the
// script for its e, r or w commands (what sedRisky must then report).
func sedSandboxRefuses(t *testing.T, sed, script string) bool {
	t.Helper()
	out, err := exec.Command(sed, "--sandbox", "-n", "-e", script, "/dev/null").CombinedOutput()
	return err != nil && strings.Contains(string(out), "disabled in sandbox mode")
}

// sedCorpus are scripts of the red team's classes and their neighbours.
var sedCorpus = []string{
	"p", "s/a/b/", "s/a/b/w out", "1e ls", ":a 1e ls", "v4.2 e ls", "/[/]*/e ls", `\,.*,Ie ls`, "1{e ls\n}",
	"/x/{w f\n}", "s/[/]/x/e", "y/abc/xyz/", "b end; e ls", "$!N;P;D", "1,3d;q", "/a/I,/b/M s/x/y/gw f",
	"s/x/y/;e ls", "#n\ne ls", "a text e ls", "i\\\ne ls", "s/a\\/b/c/w f", "1~2e ls", "0,/x/ e ls", "l 5;e ls",
}

// TestSedRiskyAgainstSandbox: every script GNU sed's sandbox mode refuses
// (it has an e, r or w command) is one sedRisky reports. The other way
// round may differ: a script sedRisky cannot follow is risky too.
func TestSedRiskyAgainstSandbox(t *testing.T) {
	sed, err := exec.LookPath("sed")
	if err != nil || exec.Command(sed, "--sandbox", "-n", "p", "/dev/null").Run() != nil {
		t.Skip("no GNU sed with --sandbox")
	}
	for _, s := range sedCorpus {
		if sedSandboxRefuses(t, sed, s) && !sedRisky(s) {
			t.Errorf("sedRisky(%q) = false; GNU sed --sandbox refuses it", s)
		}
	}
}

// FuzzSedRisky: the differential of TestSedRiskyAgainstSandbox over any
// script.
func FuzzSedRisky(f *testing.F) {
	sed, err := exec.LookPath("sed")
	if err != nil || exec.Command(sed, "--sandbox", "-n", "p", "/dev/null").Run() != nil {
		f.Skip("no GNU sed with --sandbox")
	}
	for _, s := range sedCorpus {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if strings.ContainsRune(s, 0) || len(s) > 200 {
			return
		}
		if !sedRisky(s) && sedSandboxRefuses(t, sed, s) {
			t.Fatalf("sedRisky(%q) = false; GNU sed --sandbox refuses it", s)
		}
	})
}
