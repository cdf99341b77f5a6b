package main

import (
	"os"
	"path/filepath"

	"github.com/norma-run/norma/plugin/host"
	"github.com/spf13/cobra"
)

func newPluginWrapCmd() *cobra.Command {
	var o host.WrapOptions
	var out string
	c := &cobra.Command{
		Use:   "wrap [--id ID] [--version V] [--entrypoint PATH] [--ro PATH]... [-o FILE] -- COMMAND ARGS...",
		Short: "Generate a starting manifest for an existing stdio MCP server",
		Long: "Start an existing MCP server inside the sandbox (no network, read-only access to its own files),\n" +
			"list its tools and print a starting manifest: each tool's effects proposed from the server's MCP\n" +
			"annotations (marked untrusted; a tool without them is an external write needing approval), nothing\n" +
			"else granted. COMMAND is a path (relative to the current directory) or a name in PATH. Edit it,\n" +
			"sign it locally and install it with --dev; `norma mcp add` does all of this for npm and python servers.",
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			for i, p := range o.ReadOnly {
				if abs, err := filepath.Abs(p); err == nil {
					o.ReadOnly[i] = abs
				}
			}
			b, err := host.Wrap(cmd.Context(), args, o)
			if err != nil {
				return exitWith(exitFailed, err)
			}
			if out == "" {
				_, err = cmd.OutOrStdout().Write(b)
				return err
			}
			return os.WriteFile(out, b, 0o644)
		},
	}
	f := c.Flags()
	f.StringVar(&o.ID, "id", "", "plugin id (default local.wrapped.NAME)")
	f.StringVar(&o.Version, "version", "", "version (default 0.1.0)")
	f.StringVar(&o.Entrypoint, "entrypoint", "", "entrypoint inside the package (default bin/NAME)")
	f.StringSliceVar(&o.ReadOnly, "ro", nil, "host path the server needs to read to start (repeatable)")
	f.StringVarP(&out, "output", "o", "", "write the manifest here instead of stdout")
	return c
}
