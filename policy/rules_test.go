package policy_test

import (
	"strings"
	"testing"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/policy"
)

func TestCompileRulesErrors(t *testing.T) {
	for _, tt := range []struct {
		rules policy.Rules
		want  string
	}{
		{policy.Rules{Allow: []string{"Read(x"}}, "rules.allow[0]"},
		{policy.Rules{Ask: []string{"Bash(rm 'x)"}}, "unterminated quote"},
		{policy.Rules{Ask: []string{"Bash(rm x\\)"}}, "backslash"},
		{policy.Rules{Deny: []string{"Read(~bob/x)"}}, "~user"},
		{policy.Rules{Deny: []string{"Read($HOME/x)"}}, "variables"},
		{policy.Rules{Deny: []string{"Bash(:*)"}}, "empty command"},
		{policy.Rules{Deny: []string{"ok", "Gr*p"}}, "rules.deny[1]"},
		{policy.Rules{Deny: []string{"WebFetch(example.com)"}}, "want domain:"},
		{policy.Rules{Deny: []string{"Glob(x)"}}, "takes no argument pattern"},
		{policy.Rules{Deny: []string{"Read(workspace://../x)"}}, "rules.deny[0]"},
	} {
		if _, err := policy.CompileRules(tt.rules); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("CompileRules(%+v) = %v, want an error containing %q", tt.rules, err, tt.want)
		}
	}
}

func TestRuleSet(t *testing.T) {
	s, err := policy.CompileRules(policy.Rules{
		Allow: []string{"Glob", "Read(docs/**)", "Bash(git status:*)", "Bash(ls)", "WebFetch(domain:*.example.com)"},
		Ask:   []string{"mcp__gh"},
		Deny:  []string{"Write(workspace://secret/**)", "Bash(rm:*)", "WebFetch(domain:evil.test)"},
	})
	if err != nil {
		t.Fatal(err)
	}
	read := func(p string) capability.Request { return capability.Request{Kind: capability.FSRead, Path: p} }
	write := func(p string) capability.Request { return capability.Request{Kind: capability.FSWrite, Path: p} }
	spawn := func(argv ...string) capability.Request {
		return capability.Request{Kind: capability.ProcessSpawn, Argv: argv}
	}
	net := func(o string) capability.Request {
		return capability.Request{Kind: capability.NetRequest, Method: "GET", Origin: o, Path: "/"}
	}
	tests := []struct {
		name            string
		tool            string
		reqs            []capability.Request
		known           bool
		deny, ask, allo string
	}{
		{name: "name rule", tool: "Glob", known: true, allo: "Glob"},
		{name: "plugin prefix", tool: "mcp__gh__issue", ask: "mcp__gh"},
		{name: "path", tool: "Read", reqs: []capability.Request{read("docs/a/b.md")}, known: true, allo: "Read(docs/**)"},
		{name: "path outside", tool: "Read", reqs: []capability.Request{read("src/a.go")}, known: true},
		{name: "write deny", tool: "Write", reqs: []capability.Request{write("secret/k")}, known: true, deny: "Write(workspace://secret/**)"},
		{name: "read is not write", tool: "Read", reqs: []capability.Request{read("secret/k")}, known: true},
		{name: "prefix", tool: "Bash", reqs: []capability.Request{spawn("git", "status", "-s")}, known: true, allo: "Bash(git status:*)"},
		{name: "exact", tool: "Bash", reqs: []capability.Request{spawn("ls", "-l")}, known: true},
		{name: "every request covered", tool: "Bash", reqs: []capability.Request{spawn("ls"), spawn("git", "status")}, known: true, allo: "Bash(ls)"},
		{name: "unknown is never covered", tool: "Bash", reqs: []capability.Request{spawn("ls")}, known: false},
		{name: "deny any", tool: "Bash", reqs: []capability.Request{spawn("ls"), spawn("rm", "-rf", "x")}, known: true, deny: "Bash(rm:*)"},
		{name: "subdomain", tool: "WebFetch", reqs: []capability.Request{net("https://a.example.com:443")}, known: true, allo: "WebFetch(domain:*.example.com)"},
		{name: "apex is not a subdomain", tool: "WebFetch", reqs: []capability.Request{net("https://example.com:443")}, known: true},
		{name: "domain deny", tool: "WebFetch", reqs: []capability.Request{net("https://evil.test:443")}, known: true, deny: "WebFetch(domain:evil.test)"},
		{name: "ipv6 origin", tool: "WebFetch", reqs: []capability.Request{net("https://[::1]:443")}, known: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, _ := s.Deny(tt.tool, tt.reqs); got != tt.deny {
				t.Errorf("Deny = %q, want %q", got, tt.deny)
			}
			if got, _ := s.Ask(tt.tool, tt.reqs); got != tt.ask {
				t.Errorf("Ask = %q, want %q", got, tt.ask)
			}
			if got, _ := s.Allow(tt.tool, tt.reqs, tt.known); got != tt.allo {
				t.Errorf("Allow = %q, want %q", got, tt.allo)
			}
		})
	}
	var none *policy.RuleSet
	if _, ok := none.Deny("Glob", nil); ok {
		t.Error("a nil RuleSet denied")
	}
}
