package main

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/norma-run/norma/door/demo"
	"github.com/spf13/cobra"
)

func newDemoCmd() *cobra.Command {
	var yes, keep, asJSON bool
	c := &cobra.Command{
		Use:   "demo [--yes] [--keep] [--json]",
		Short: "The offline end-to-end showcase (run from the repository root)",
		Long: "Build and sign the example plugins, serve a local TLS issue API, install issue-helper with a\n" +
			"narrowed grant, run a scripted agent session (allowed calls, an approved comment, denials with\n" +
			"their reasons, the hostile mallory plugin), update issue-helper to a version that asks for more\n" +
			"(held), verify the audit chain and print a summary. Everything happens in temporary directories.\n\n" +
			"The comment needs your approval: you are asked on a terminal; --yes approves it.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			o := demo.Options{Yes: yes, Keep: keep, In: cmd.InOrStdin(), Out: out,
				Interactive: isTerminal(os.Stdin) && cmd.InOrStdin() == os.Stdin,
				Color:       !asJSON && os.Getenv("NO_COLOR") == "" && out == os.Stdout && isTerminal(os.Stdout)}
			if asJSON {
				o.Out = cmd.ErrOrStderr()
			}
			sum, err := demo.Run(cmd.Context(), o)
			if err != nil {
				return exitWith(exitFailed, fmt.Errorf("demo: %w", err))
			}
			if asJSON {
				writeJSON(out, sum)
			}
			if !sum.ChainVerified || sum.MallorySucceeded != 0 || sum.Canary {
				return exitWith(exitFailed, fmt.Errorf("demo: a guarantee did not hold (chain verified %v, mallory successes %d, canary leaked %v)",
					sum.ChainVerified, sum.MallorySucceeded, sum.Canary))
			}
			return nil
		},
	}
	c.Flags().BoolVar(&yes, "yes", false, "approve the demo's external write without asking")
	c.Flags().BoolVar(&keep, "keep", false, "keep the temporary workspace")
	c.Flags().BoolVar(&asJSON, "json", false, "print the summary as JSON on stdout (the showcase goes to stderr)")
	return c
}

func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}
