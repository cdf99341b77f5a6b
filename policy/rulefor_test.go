package policy_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/policy"
)

func rd(p string) capability.Request { return capability.Request{Kind: capability.FSRead, Path: p} }
func wr(p string) capability.Request { return capability.Request{Kind: capability.FSWrite, Path: p} }
func sp(argv ...string) capability.Request {
	return capability.Request{Kind: capability.ProcessSpawn, Argv: argv}
}
func get(origin, path string) capability.Request {
	return capability.Request{Kind: capability.NetRequest, Method: "GET", Origin: origin, Path: path}
}

type call struct {
	tool string
	reqs []capability.Request
}

// TestRulesFor: the derived rules, compiled, allow the approved call and
// refuse every neighbour — another path, another argv, another host,
// another tool of the plugin. The neighbours are the negative control:
// each one differs from the approved call in one thing only.
func TestRulesFor(t *testing.T) {
	tests := []struct {
		name       string
		call       call
		want       []string
		neighbours []call
	}{
		{
			name: "write", call: call{"Write", []capability.Request{wr("out/a.md")}}, want: []string{"Write(out/a.md)"},
			neighbours: []call{
				{"Write", []capability.Request{wr("out/b.md")}},
				{"Write", []capability.Request{wr("out/a.md/x")}},
				{"Write", []capability.Request{wr("out/a.mdx")}},
				{"Write", []capability.Request{wr("a.md")}},
				{"Read", []capability.Request{rd("out/a.md"), rd("out/b.md")}},
				{"Write", []capability.Request{wr("out/a.md"), wr("out/b.md")}},
			},
		},
		{
			name: "edit reads and writes one file", call: call{"Edit", []capability.Request{rd("src/main.go"), wr("src/main.go")}},
			want: []string{"Read(src/main.go)", "Edit(src/main.go)"},
			neighbours: []call{
				{"Edit", []capability.Request{rd("src/other.go"), wr("src/other.go")}},
				{"Edit", []capability.Request{rd("src/main.go"), wr("src/other.go")}},
			},
		},
		{
			name: "exact argv", call: call{"Bash", []capability.Request{sp("git", "status")}}, want: []string{"Bash(git status)"},
			neighbours: []call{
				{"Bash", []capability.Request{sp("git", "status", "-s")}},
				{"Bash", []capability.Request{sp("git", "push")}},
				{"Bash", []capability.Request{sp("git")}},
				{"Bash", []capability.Request{sp("git", "status"), sp("rm", "-rf", "x")}},
			},
		},
		{
			name: "host", call: call{"WebFetch", []capability.Request{get("https://pkg.go.dev:443", "/net/http")}},
			want: []string{"WebFetch(domain:pkg.go.dev)"},
			neighbours: []call{
				{"WebFetch", []capability.Request{get("https://go.dev:443", "/")}},
				{"WebFetch", []capability.Request{get("https://evil.pkg.go.dev:443", "/")}},
				{"WebFetch", []capability.Request{get("https://pkg.go.dev.evil.test:443", "/")}},
			},
		},
		{
			name: "plugin tool", call: call{"mcp__github__create_issue", []capability.Request{{Kind: capability.ExternalWrite, Tool: "create_issue"}}},
			want: []string{"mcp__github__create_issue"},
			neighbours: []call{
				{"mcp__github__delete_repo", nil},
				{"mcp__github__create_issue2", nil},
				{"mcp__gitlab__create_issue", nil},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := policy.RulesFor(tt.call.tool, tt.call.reqs)
			if !ok || !slices.Equal(got, tt.want) {
				t.Fatalf("RulesFor(%s, %v) = %q, %v; want %q", tt.call.tool, tt.call.reqs, got, ok, tt.want)
			}
			set, err := policy.CompileRules(policy.Rules{Allow: got})
			if err != nil {
				t.Fatalf("CompileRules(%q) = %v", got, err)
			}
			if _, ok := set.Allow(tt.call.tool, tt.call.reqs, true); !ok {
				t.Errorf("the rules %q do not allow the approved call", got)
			}
			for _, n := range tt.neighbours {
				if r, ok := set.Allow(n.tool, n.reqs, true); ok {
					t.Errorf("the rules %q allow the neighbour %s %v (by %q)", got, n.tool, n.reqs, r)
				}
			}
		})
	}
}

// TestRulesForRefuses: calls no exact rule can express get none, so an
// approver offers only "yes, once".
func TestRulesForRefuses(t *testing.T) {
	tests := []struct {
		name string
		call call
	}{
		{"built-in tool without requests", call{"TodoWrite", nil}},
		{"plugin-wide name", call{"mcp__github", nil}},
		{"plugin name with a wildcard", call{"mcp__github__*", nil}},
		{"glob in a path", call{"Write", []capability.Request{wr("out/*.md")}}},
		{"brace in a path", call{"Write", []capability.Request{wr("out/{a,b}.md")}}},
		{"bracket in a path", call{"Read", []capability.Request{rd("docs/[x].md")}}},
		{"backslash in a path", call{"Read", []capability.Request{rd(`docs\x`)}}},
		{"space at the end of a path", call{"Read", []capability.Request{rd("docs/x ")}}},
		{"absolute path", call{"Read", []capability.Request{rd("/etc/passwd")}}},
		{"workspace root", call{"Read", []capability.Request{rd(".")}}},
		{"pipeline", call{"Bash", []capability.Request{sp("ls"), sp("wc", "-l")}}},
		{"program by path (also its base name)", call{"Bash", []capability.Request{sp("/usr/bin/git", "status"), sp("git", "status")}}},
		{"redirection", call{"Bash", []capability.Request{sp("ls"), wr("out.txt")}}},
		{"word with a space", call{"Bash", []capability.Request{sp("echo", "a b")}}},
		{"quote in a word", call{"Bash", []capability.Request{sp("echo", "it's")}}},
		{"computed word", call{"Bash", []capability.Request{sp("echo", "\x00dynamic")}}},
		{"glob in a word", call{"Bash", []capability.Request{sp("rm", "*.o")}}},
		{"prefix-looking word", call{"Bash", []capability.Request{sp("git", "status:*")}}},
		{"empty argv", call{"Bash", []capability.Request{sp()}}},
		{"POST", call{"WebFetch", []capability.Request{{Kind: capability.NetRequest, Method: "POST", Origin: "https://a.test:443", Path: "/"}}}},
		{"IPv6 host", call{"WebFetch", []capability.Request{get("https://[::1]:443", "/")}}},
		{"secret", call{"WebSearch", []capability.Request{{Kind: capability.SecretUse, Secret: "k", Origin: "https://a.test:443"}}}},
		{"external write of a built-in", call{"Notify", []capability.Request{{Kind: capability.ExternalWrite, Tool: "Notify"}}}},
		{"too long", call{"Read", []capability.Request{rd(strings.Repeat("a/", 300) + "x")}}},
		{"too many", call{"Read", []capability.Request{rd("a"), rd("b"), rd("c"), rd("d"), rd("e")}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, ok := policy.RulesFor(tt.call.tool, tt.call.reqs); ok {
				t.Errorf("RulesFor(%s, %q) = %q, want none", tt.call.tool, tt.call.reqs, got)
			}
		})
	}
}
