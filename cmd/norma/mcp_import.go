package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/norma-run/norma/internal/termtext"
	"github.com/norma-run/norma/plugin/mcpadd"
)

func newMCPImportCmd() *cobra.Command {
	var f addFlags
	c := &cobra.Command{
		Use:   "import FILE [--secret K=ORIGIN]... [--grant FILE --yes] [--json]",
		Short: "Add every stdio server of a Claude Code/Cursor .mcp.json, Codex config.toml or Gemini settings.json",
		Long: "Each server of FILE goes through `norma mcp add` (install, probe, install screen, consent). ${VAR} in its\n" +
			"env is read from your environment. A credential in env must be declared with --secret K=ORIGIN (it then\n" +
			"goes to the vault). HTTP and SSE servers are reported and skipped: Norma confines local processes.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			servers, err := mcpadd.ParseConfig(args[0])
			if err != nil {
				return exitWith(exitFailed, err)
			}
			var failed int
			for _, s := range servers {
				if err := importServer(cmd, &f, s); err != nil {
					failed++
					fmt.Fprintf(cmd.ErrOrStderr(), "norma: %s: %s\n", termtext.Escape(s.Name), termtext.EscapeText(errText(err)))
				}
			}
			if failed > 0 {
				return exitWith(exitFailed, fmt.Errorf("%d of %d servers of %s were not added", failed, len(servers), args[0]))
			}
			return nil
		},
	}
	f.register(c)
	return c
}

// importServer adds one server of a client's file through addServer, or
// reports it skipped.
func importServer(cmd *cobra.Command, f *addFlags, s mcpadd.ServerConfig) error {
	if s.Remote != "" {
		msg := fmt.Sprintf("skipped %s: a remote (HTTP/SSE) server (%s) is not supported: Norma confines local stdio servers only", s.Name, s.Remote)
		if f.asJSON {
			return writeJSONLine(cmd.OutOrStdout(), map[string]string{"name": s.Name, "skipped": msg})
		}
		fmt.Fprintln(cmd.OutOrStdout(), termtext.Escape(msg))
		return nil
	}
	if s.Command == "" {
		return fmt.Errorf("no command")
	}
	r, err := f.request(s.Name, append([]string{s.Command}, s.Args...))
	if err != nil {
		return err
	}
	for k, v := range s.Env {
		_, secret := r.secrets[k]
		if r.env[k], err = mcpadd.ExpandHostEnv(v, secret, os.LookupEnv); err != nil {
			return fmt.Errorf("env %s: %w", k, err)
		}
	}
	for k := range r.secrets {
		if _, ok := s.Env[k]; !ok {
			delete(r.secrets, k) // --secret names a variable of another server
		}
	}
	return addServer(cmd, r)
}
