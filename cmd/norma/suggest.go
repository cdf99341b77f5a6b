package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/norma-run/norma/internal/suggest"
)

// groupAnnotation marks the command groups usageChecks made runnable, so
// that their help still describes them as groups.
const groupAnnotation = "norma:group"

// usageChecks makes every usage mistake exit 2 (exitUsage) with a
// suggestion, for every command of root's tree, present and future:
//
//   - A command group (a command with subcommands and no Run of its own,
//     root included) refuses an argument that names none of its
//     subcommands: `norma mcp ad foo` says `unknown command "ad" for
//     "norma mcp"` and `Did you mean this? add` (cobra's SuggestionsFor),
//     where cobra would print the group's help and exit 0. The group alone
//     (`norma mcp`) still prints its help, exit 0.
//   - An unknown flag says which flag was likely meant: `unknown flag:
//     --tol (did you mean --tool?)` (internal/suggest, the engine of every
//     "did you mean" of the module).
//
// Cobra shows a group's help before it checks arguments when the group
// cannot run, so each group gets a RunE that shows the help and an Args
// that refuses unknown names; the help function hides that RunE again,
// so that help reads as before (no "norma mcp [flags]" usage line).
func usageChecks(root *cobra.Command) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.HasSubCommands() && !c.Runnable() {
			c.Args = unknownSubcommand
			c.RunE = func(*cobra.Command, []string) error { return pflag.ErrHelp }
			if c.Annotations == nil {
				c.Annotations = map[string]string{}
			}
			c.Annotations[groupAnnotation] = "yes"
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
	help := root.HelpFunc()
	root.SetHelpFunc(func(c *cobra.Command, args []string) {
		if c.Annotations[groupAnnotation] != "" {
			run := c.RunE
			c.RunE = nil
			defer func() { c.RunE = run }()
		}
		help(c, args)
	})
	root.SetFlagErrorFunc(flagError)
}

// unknownSubcommand is a group's Args: no argument, or the name of a
// subcommand (which cobra has then run instead of the group).
func unknownSubcommand(c *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	if c.SuggestionsMinimumDistance <= 0 {
		c.SuggestionsMinimumDistance = 2
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], c.CommandPath())
	if s := c.SuggestionsFor(args[0]); len(s) > 0 {
		msg += "\n\nDid you mean this?\n\t" + strings.Join(s, "\n\t")
	}
	msg += fmt.Sprintf("\n\nRun '%s --help' for usage.", c.CommandPath())
	return exitWith(exitUsage, errors.New(msg))
}

// flagError is the root's (and so every command's) flag error: exit 2,
// with the flag likely meant when the flag is unknown. A long flag is
// compared with the command's flags, inherited ones included; so is a
// word written with one dash (-tool reads as the shorthands t, o, o, l).
func flagError(c *cobra.Command, err error) error {
	if ne, ok := errors.AsType[*pflag.NotExistError](err); ok {
		typed := ""
		if strings.HasPrefix(err.Error(), "unknown flag: --") {
			typed = ne.GetSpecifiedName()
		} else if s := ne.GetSpecifiedShortnames(); len(s) > 1 && strings.HasPrefix(err.Error(), "unknown shorthand flag") {
			typed = s
		}
		var names []string
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if !f.Hidden && f.Deprecated == "" {
				names = append(names, f.Name)
			}
		})
		if s := suggest.Closest(typed, names); typed != "" && s != "" {
			err = fmt.Errorf("%w (did you mean --%s?)", err, s)
		}
	}
	return exitWith(exitUsage, err)
}
