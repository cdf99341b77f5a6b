package main

import (
	"fmt"
	"os"
	"slices"

	"github.com/spf13/cobra"

	"github.com/norma-run/norma/door/mcpadd"
	"github.com/norma-run/norma/internal/termtext"
)

func newMCPImportCmd() *cobra.Command {
	var f addFlags
	var rewrite bool
	c := &cobra.Command{
		Use:   "import FILE [--secret K=ORIGIN]... [--grant FILE --yes] [--json] [--rewrite]",
		Short: "Add every stdio server of a Claude Code/Cursor .mcp.json, Codex config.toml or Gemini settings.json",
		Long: "Each server of FILE goes through `norma mcp add` (install, probe, install screen, consent). ${VAR} in its\n" +
			"env is read from your environment. A credential in env must be declared with --secret K=ORIGIN (it then\n" +
			"goes to the vault). HTTP and SSE servers are reported and skipped: Norma confines local processes.\n\n" +
			"--rewrite then switches FILE to Norma: each server it added becomes {\"command\": \"/abs/norma\", \"args\":\n" +
			"[\"mcp\", \"proxy\", \"NAME\"]} (with --home when given), every other key kept. The diff is shown first and\n" +
			"asked on a terminal (--yes writes without asking); the file is replaced atomically and the old one kept as\n" +
			"FILE.norma-backup. A server that already runs `norma mcp proxy` is left as it is; one added by an earlier\n" +
			"import of the file (same name and command) is not added again, and --rewrite converts it too, so that\n" +
			"import --rewrite after import converts the whole file and a second --rewrite changes nothing.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			servers, err := mcpadd.ParseConfig(args[0])
			if err != nil {
				return exitWith(exitFailed, err)
			}
			var failed int
			var added []string
			for _, s := range servers {
				if mcpadd.IsProxy(s) {
					msg := "skipped " + s.Name + ": it already runs `norma mcp proxy`"
					if f.asJSON {
						writeJSONLine(cmd.OutOrStdout(), map[string]string{"name": s.Name, "skipped": msg})
					} else {
						fmt.Fprintln(cmd.OutOrStdout(), termtext.Escape(msg))
					}
					continue
				}
				if s.Remote != "" {
					importServer(cmd, &f, s) // reported
					continue
				}
				if managed, err := alreadyAdded(cmd, s); err != nil {
					return err
				} else if managed {
					// Added by an earlier import of this file: nothing to
					// install again, and --rewrite converts it too.
					msg := "already added " + s.Name
					if f.asJSON {
						writeJSONLine(cmd.OutOrStdout(), map[string]string{"name": s.Name, "already": msg})
					} else {
						fmt.Fprintln(cmd.OutOrStdout(), termtext.Escape(msg))
					}
					added = append(added, s.Name)
					continue
				}
				if err := importServer(cmd, &f, s); err != nil {
					failed++
					fmt.Fprintf(cmd.ErrOrStderr(), "norma: %s: %s\n", termtext.Escape(s.Name), termtext.EscapeText(errText(err)))
					continue
				}
				added = append(added, s.Name)
			}
			var rerr error
			if rewrite {
				rerr = rewriteConfig(cmd, args[0], added, f.yes)
			}
			if failed > 0 {
				return exitWith(exitFailed, fmt.Errorf("%d of %d servers of %s were not added", failed, len(servers), args[0]))
			}
			return rerr
		},
	}
	f.register(c)
	c.Flags().BoolVar(&rewrite, "rewrite", false, "then rewrite FILE so that the client runs each added server through \"norma mcp proxy\"")
	return c
}

// importServer adds one server of a client's file through addServer, or
// reports it skipped.
// alreadyAdded reports whether the server s of a client's file is added
// already: a server of its name whose recorded command line is s's (an
// earlier import of the same file). One of that name with another command
// is not: its add fails as a name taken.
func alreadyAdded(cmd *cobra.Command, s mcpadd.ServerConfig) (bool, error) {
	srv, ok, err := findServer(cmd, s.Name)
	if err != nil || !ok || srv.source == nil || s.Command == "" {
		return false, err
	}
	return slices.Equal(srv.source.Command, append([]string{s.Command}, s.Args...)), nil
}

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
