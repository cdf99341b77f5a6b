package main

import (
	"github.com/spf13/cobra"

	"github.com/norma-run/norma/tool/builtin"
)

func newToolsCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "tools", Short: "The built-in tools"}
	var asJSON bool
	list := &cobra.Command{
		Use:   "list",
		Short: "Every built-in tool with its read-only, concurrency, approval metadata, effects and install condition",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			infos, err := builtin.Catalogue(c.Context())
			if err != nil {
				return exitWith(exitInternal, err)
			}
			out := c.OutOrStdout()
			if asJSON {
				return writeJSON(out, infos)
			}
			_, err = out.Write([]byte(builtin.CatalogueMarkdown(infos)))
			return err
		},
	}
	list.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.AddCommand(list)
	return cmd
}
