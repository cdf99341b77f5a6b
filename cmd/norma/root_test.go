package main

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
)

// TestGroupNames: each group runs under the name commandGroups gives it, with no
// alias a user could type instead, and commands() builds them all in
// their order.
func TestGroupNames(t *testing.T) {
	cs := commands()
	if len(cs) != len(commandGroups) {
		t.Fatalf("commands() = %d groups, want %d", len(cs), len(commandGroups))
	}
	for i, g := range commandGroups {
		if c := cs[i]; c.Name() != g.name || len(c.Aliases) != 0 {
			t.Errorf("group %d: %q (aliases %q), want %q with no alias", i, c.Name(), c.Aliases, g.name)
		}
	}
}

// TestGroupOf: the arguments that get one group's tree, and those that get
// the whole one.
func TestGroupOf(t *testing.T) {
	tests := []struct {
		args []string
		want string // "" for the whole tree
	}{
		{[]string{"hook", "claude-code"}, "hook"},
		{[]string{"--home", "/tmp/h", "hook", "claude-code"}, "hook"},
		{[]string{"--home=/tmp/h", "--store", "sqlite:/tmp/x", "serve"}, "serve"},
		{[]string{"mcp", "ad", "foo"}, "mcp"},
		{[]string{"policy", "explain", "--help"}, "policy"},
		{nil, ""},
		{[]string{"--help"}, ""},
		{[]string{"-h", "hook"}, ""},
		{[]string{"help", "hook"}, ""},
		{[]string{"completion", "bash"}, ""},
		{[]string{"__complete", "hook", ""}, ""},
		{[]string{"hoook", "claude-code"}, ""},
		{[]string{"--home"}, ""},
		{[]string{"--verbose", "hook"}, ""},
		{[]string{"--", "hook"}, ""},
	}
	for _, tt := range tests {
		got := ""
		if build := groupOf(tt.args); build != nil {
			got = build().Name()
		}
		if got != tt.want {
			t.Errorf("groupOf(%q) = %q, want %q", tt.args, got, tt.want)
		}
	}
}

// TestGroupTreeSameAnswers: what a group's own tree prints and returns, for
// its help, each subcommand's help, a misspelt subcommand and an unknown
// flag, is what the whole tree prints and returns.
func TestGroupTreeSameAnswers(t *testing.T) {
	run := func(full bool, args []string) (int, string) {
		root := newRootFor(args)
		if full {
			root = newRoot()
		}
		var out, errb bytes.Buffer
		root.SetArgs(args)
		root.SetIn(strings.NewReader(""))
		root.SetOut(&out)
		root.SetErr(&errb)
		code := exitCode(&errb, root.ExecuteContext(context.Background()))
		return code, out.String() + "\x00" + errb.String()
	}
	for _, g := range commandGroups {
		cases := [][]string{{g.name, "--help"}, {"--home", t.TempDir(), g.name, "--no-such-flag"}}
		if c := g.make(); c.HasSubCommands() {
			cases = append(cases, []string{g.name, "zzqx"})
			for _, s := range c.Commands() {
				cases = append(cases, []string{g.name, s.Name(), "--help"})
			}
		}
		for _, args := range cases {
			wantCode, want := run(true, args)
			gotCode, got := run(false, args)
			if gotCode != wantCode || got != want {
				t.Errorf("norma %s: the group's tree answers (exit %d)\n%s\nthe whole tree (exit %d)\n%s",
					strings.Join(args, " "), gotCode, got, wantCode, want)
			}
		}
	}
	if slices.ContainsFunc(commandGroups, func(g group) bool { return g.name == "completion" || g.name == "help" }) {
		t.Error("a group is named like one of cobra's own commands")
	}
}
