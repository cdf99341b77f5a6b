package policy_test

import (
	"strings"
	"testing"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/manifest"
	"github.com/norma-run/norma/policy"
)

// ruleCorpus seeds FuzzRules: each form of the rule language, with a
// subject (a command's words, or a path) it is matched against.
var ruleCorpus = []struct{ rule, subject string }{
	// the legacy prefix
	{"Bash(git push:*)", "git -C . push origin"},
	// a wildcard with the optional trailing " *"
	{"Bash(git push *)", "git push"},
	// a star between words
	{"Bash(git * --force)", "git push --force"},
	// a leading star
	{"Bash(* --delete)", "rsync --delete a b"},
	// no word boundary
	{"Bash(ls*)", "lsof"},
	// an escaped star and quotes
	{"Bash(echo \\* 'a b' \"c\\\"d\")", "echo * a\x20b c\"d"},
	// a star inside the :* form is literal
	{"Bash(echo *:*)", "echo * x"},
	// an exact command
	{"Bash(npm run lint)", "timeout 5 npm run lint"},
	// a risky flag the rule names
	{"Bash(sort -o:*)", "sort -o out in"},
	// a computed word
	{"Bash(rm -rf /)", "rm -rf \x00dynamic"},
	{"Bash(rm *.log)", "rm \x00words"},
	// Bash(*) is Bash
	{"Bash(*)", "anything"},
	// path forms
	{"Read(./secrets/**)", "SECRETS/key.txt"},
	{"Read(/secrets/**)", "secrets/a"},
	{"Read(*.pem)", "a/b/k.pem"},
	{"Read(.env)", "svc/.env"},
	{"Edit(src/[ab]*.go)", "src/a1.go"},
	{"Read(//home/u/proj/x/**)", "x/y"},
	{"Read(~/proj/.env)", ".env"},
	{"Read(../proj/x)", "x"},
	{"Read(secrets/)", "a/secrets/b"},
	// domains and names
	{"WebFetch(domain:*.example.com)", "a.example.com"},
	{"mcp__gh__*", "x"},
}

// FuzzRules: any text either fails to compile or compiles in every list;
// matching never panics; what a rule allows, the same rule as a deny
// denies (deny and ask rules read broadly, allow rules narrowly); and a
// workspace path rule's RuleGlob denies an ASCII path exactly when the
// rule, as a deny, does.
func FuzzRules(f *testing.F) {
	for _, c := range ruleCorpus {
		f.Add(c.rule, c.subject)
	}
	f.Fuzz(func(t *testing.T, rule, subject string) {
		at := func(r policy.Rules) policy.Rules {
			r.Root, r.Home = "/home/u/proj", "/home/u"
			return r
		}
		allow, err := policy.CompileRules(at(policy.Rules{Allow: []string{rule}}))
		if err != nil {
			if policy.CheckRule(rule) == nil {
				t.Fatalf("CheckRule(%q) = nil, but CompileRules: %v", rule, err)
			}
			return
		}
		deny, err := policy.CompileRules(at(policy.Rules{Deny: []string{rule}, Ask: []string{rule}}))
		if err != nil {
			t.Fatalf("%q compiles as an allow but not as a deny: %v", rule, err)
		}
		p := strings.Trim(subject, "/")
		reqs := []capability.Request{
			{Kind: capability.ProcessSpawn, Argv: strings.Split(subject, " ")},
			{Kind: capability.FSRead, Path: p},
			{Kind: capability.FSWrite, Path: p},
		}
		for i := range reqs {
			one := reqs[i : i+1]
			_, allowed := allow.Allow("Bash", one, true)
			_, denied := deny.Deny("Bash", one)
			if allowed && !denied {
				t.Errorf("%q allows %v but as a deny does not deny it", rule, one[0])
			}
			if _, asked := deny.Ask("Bash", one); asked != denied {
				t.Errorf("%q: ask %v, deny %v on %v", rule, asked, denied, one[0])
			}
		}
		g, ok := policy.RuleGlob(rule)
		if !ok || !ascii(p) || p == "" {
			return
		}
		kind := capability.FSRead
		if !strings.HasPrefix(rule, "Read") {
			kind = capability.FSWrite
		}
		_, denied := deny.Deny("Read", []capability.Request{{Kind: kind, Path: p}})
		byGlob, err := doublestar.Match(manifest.WorkspaceGlob(g), p)
		if err != nil {
			t.Fatalf("RuleGlob(%q) = %q: %v", rule, g, err)
		}
		if byGlob != denied {
			t.Errorf("RuleGlob(%q) = %q matches %q: %v; the deny rule: %v", rule, g, p, byGlob, denied)
		}
	})
}

func ascii(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 || s[i] < 0x20 {
			return false
		}
	}
	return true
}
