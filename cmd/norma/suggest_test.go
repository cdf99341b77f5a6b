package main

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// groups are the command paths (without "norma") of every command group
// usageChecks guards, root included (""). A command with subcommands that
// runs by itself (serve) checks its own arguments: it must say how.
func groups(t *testing.T) []string {
	t.Helper()
	var out []string
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		switch {
		case c.Annotations[groupAnnotation] != "":
			out = append(out, strings.TrimPrefix(strings.TrimPrefix(c.CommandPath(), "norma"), " "))
		case c.HasSubCommands() && c.Args == nil:
			t.Errorf("%s runs by itself and has subcommands, but no Args: a misspelt subcommand would run it", c.CommandPath())
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(newRoot())
	if len(out) < 10 {
		t.Fatalf("only %d command groups: %q", len(out), out)
	}
	return out
}

// TestUnknownSubcommand: every command group refuses a name that is none
// of its subcommands (exit 2, the group named), and still prints its help
// alone (exit 0), without a usage line that would say it runs by itself.
func TestUnknownSubcommand(t *testing.T) {
	home := t.TempDir()
	for _, g := range groups(t) {
		args := append([]string{"--home", home}, strings.Fields(g)...)
		path := strings.TrimSpace("norma " + g)
		code, out, errs := norma(t, append(args, "zzbogus", "x")...)
		want := `norma: unknown command "zzbogus" for "` + path + `"`
		if code != exitUsage || !strings.HasPrefix(errs, want) || out != "" {
			t.Errorf("%s zzbogus x: exit %d, want 2 and %s\nstdout: %s\nstderr: %s", path, code, want, out, errs)
		}
		if !strings.Contains(errs, "Run '"+path+" --help' for usage.") {
			t.Errorf("%s zzbogus: no pointer to --help:\n%s", path, errs)
		}
		code, out, errs = norma(t, args...)
		if code != exitOK || !strings.Contains(out, "Usage:\n  "+path+" [command]") || errs != "" {
			t.Errorf("%s: exit %d, want 0 and its help\nstdout: %s\nstderr: %s", path, code, out, errs)
		}
		if strings.Contains(out, "\n  "+path+" [flags]\n") {
			t.Errorf("%s: help says the group runs by itself:\n%s", path, out)
		}
	}
}

// TestUnknownSubcommandSuggests: cobra's suggestions (a close name, a
// prefix) follow the refusal.
func TestUnknownSubcommandSuggests(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"mcp", "ad", "foo"}, "norma: unknown command \"ad\" for \"norma mcp\"\n\nDid you mean this?\n\tadd\n\nRun 'norma mcp --help' for usage.\n"},
		{[]string{"polcy"}, "norma: unknown command \"polcy\" for \"norma\"\n\nDid you mean this?\n\tpolicy\n\nRun 'norma --help' for usage.\n"},
		{[]string{"settings", "int"}, "Did you mean this?\n\tinit\n"},
		{[]string{"plugin", "instal", "x"}, "Did you mean this?\n\tinstall\n"},
		{[]string{"approvals", "aprove", "ID"}, "Did you mean this?\n\tapprove\n"},
		{[]string{"audit", "verfy"}, "Did you mean this?\n\tverify\n"},
		{[]string{"hooks", "trsut"}, "Did you mean this?\n\ttrust\n"},
		{[]string{"sandbox", "zzz"}, "norma: unknown command \"zzz\" for \"norma sandbox\"\n\nRun 'norma sandbox --help' for usage.\n"},
	} {
		code, _, errs := norma(t, tt.args...)
		if code != exitUsage || !strings.Contains(errs, tt.want) {
			t.Errorf("norma %s: exit %d, stderr:\n%s\nwant 2 and:\n%s", strings.Join(tt.args, " "), code, errs, tt.want)
		}
	}
}

// TestUnknownFlagSuggests: an unknown flag exits 2 and names the flag
// likely meant, the command's own or an inherited one.
func TestUnknownFlagSuggests(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"policy", "explain", "--tol", "Bash"}, "norma: unknown flag: --tol (did you mean --tool?)\n"},
		{[]string{"policy", "explain", "--tool=Bash", "--inptu={}"}, "norma: unknown flag: --inptu (did you mean --input?)\n"},
		{[]string{"policy", "explain", "-tool", "Bash"}, "norma: unknown shorthand flag: 't' in -tool (did you mean --tool?)\n"},
		{[]string{"settings", "show", "--worksapce", "."}, "norma: unknown flag: --worksapce (did you mean --workspace?)\n"},
		{[]string{"--hme", "x", "settings", "show"}, "norma: unknown flag: --hme (did you mean --home?)\n"},
		{[]string{"settings", "show", "--stroe", "x"}, "norma: unknown flag: --stroe (did you mean --store?)\n"}, // inherited
		{[]string{"mcp", "--hoem", "x"}, "norma: unknown flag: --hoem (did you mean --home?)\n"},                 // on a group
		{[]string{"policy", "explain", "--zzzzzz"}, "norma: unknown flag: --zzzzzz\n"},
		{[]string{"policy", "explain", "-q"}, "norma: unknown shorthand flag: 'q' in -q\n"},
	} {
		code, out, errs := norma(t, tt.args...)
		if code != exitUsage || errs != tt.want || out != "" {
			t.Errorf("norma %s: exit %d\nstdout: %s\nstderr: %s\nwant 2 and: %s", strings.Join(tt.args, " "), code, out, errs, tt.want)
		}
	}
	// Other flag errors keep their message, and exit 2.
	if code, _, errs := norma(t, "policy", "explain", "--tool"); code != exitUsage || !strings.Contains(errs, "flag needs an argument: --tool") || strings.Contains(errs, "did you mean") {
		t.Errorf("policy explain --tool: exit %d\n%s", code, errs)
	}
}
