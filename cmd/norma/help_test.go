package main

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// TestFlagHelp: no flag's help has a backquote. pflag takes a
// `quoted` word of a usage string as the flag's value name, so
// "wait for `norma approvals approve`" renders as
// "--approval-wait norma approvals approve   wait for norma approvals approve".
// Every flag's help line must also read as written.
func TestFlagHelp(t *testing.T) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if strings.Contains(f.Usage, "`") {
				t.Errorf("%s --%s: help %q has a backquote (pflag takes it for the value name)", c.CommandPath(), f.Name, f.Usage)
			}
		})
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(newRoot())

	code, out, _ := norma(t, "run", "--help")
	if code != 0 || !strings.Contains(out, `--approval-wait duration`) || !strings.Contains(out, `how long to wait for "norma approvals approve"`) {
		t.Errorf("run --help (exit %d):\n%s", code, out)
	}
}
