package main

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/norma-run/norma/door/mcpadd"
	"github.com/norma-run/norma/internal/termtext"
	"github.com/norma-run/norma/manifest"
	"github.com/norma-run/norma/plugin"
	"github.com/norma-run/norma/plugin/host"
	"github.com/norma-run/norma/secret"
)

// mcpServer is an installed plugin seen as an MCP server.
type mcpServer struct {
	state    *plugin.State
	dir      string
	manifest *manifest.Manifest
	source   *mcpadd.Source // nil for a plugin not added by `mcp add`
}

func (s *mcpServer) scope() string {
	if s.state.Workspace != "" {
		return "workspace " + s.state.Workspace
	}
	return "user"
}

// mcpServers lists the installed plugins with their manifests and sources.
func mcpServers(cmd *cobra.Command) ([]*mcpServer, error) {
	m, done, err := manager(cmd, false, "", true)
	if err != nil {
		return nil, err
	}
	defer done()
	list, err := m.List()
	if err != nil {
		return nil, pluginErr(err)
	}
	var out []*mcpServer
	for _, st := range list {
		s := &mcpServer{state: st, dir: m.Dir(st.ID, st.Active)}
		if s.manifest, err = manifest.ParseFile(filepath.Join(s.dir, "manifest.yaml")); err != nil {
			return nil, exitWith(exitInternal, err)
		}
		s.source, _ = mcpadd.ReadSource(s.dir)
		out = append(out, s)
	}
	return out, nil
}

// findServer is the installed plugin whose server name (or id) is name.
func findServer(cmd *cobra.Command, name string) (*mcpServer, bool, error) {
	all, err := mcpServers(cmd)
	if err != nil {
		return nil, false, err
	}
	for _, s := range all {
		if s.state.ServerName() == name || s.state.ID == name {
			return s, true, nil
		}
	}
	return nil, false, nil
}

// openServer finds the server called name and opens the plugin manager
// of the state directory; call done when finished.
func openServer(cmd *cobra.Command, name string) (*mcpServer, *plugin.Manager, func(), error) {
	s, err := mustFindServer(cmd, name)
	if err != nil {
		return nil, nil, nil, err
	}
	m, done, err := manager(cmd, false, "", true)
	if err != nil {
		return nil, nil, nil, err
	}
	return s, m, done, nil
}

func mustFindServer(cmd *cobra.Command, name string) (*mcpServer, error) {
	s, ok, err := findServer(cmd, name)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, exitWith(exitFailed, fmt.Errorf("no MCP server named %s (see norma mcp list)", name))
	}
	return s, nil
}

func sourceLine(s *mcpadd.Source) string {
	if s == nil {
		return "(installed as a plugin package)"
	}
	return fmt.Sprintf("%s %s@%s", s.Kind, s.Package, s.Version)
}

func newMCPListCmd() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "list [--json]",
		Short: "List the MCP servers: name, plugin id, version, scope, source",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			all, err := mcpServers(cmd)
			if err != nil {
				return err
			}
			if asJSON {
				out := []map[string]any{}
				for _, s := range all {
					out = append(out, map[string]any{"name": s.state.ServerName(), "id": s.state.ID, "version": s.state.Active, "scope": s.scope(), "source": s.source})
				}
				return writeJSON(cmd.OutOrStdout(), out)
			}
			w := cmd.OutOrStdout()
			fmt.Fprintln(w, "NAME\tID\tVERSION\tSCOPE\tSOURCE")
			for _, s := range all {
				cols := []string{s.state.ServerName(), s.state.ID, s.state.Active, s.scope(), sourceLine(s.source)}
				for i, c := range cols {
					cols[i] = termtext.Escape(c)
				}
				fmt.Fprintln(w, strings.Join(cols, "\t"))
			}
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

// toolJSON is one tool in `mcp get --json`.
type toolJSON struct {
	Name     string            `json:"name"`
	Tool     string            `json:"tool"`
	Effects  *manifest.Effects `json:"effects"`
	Approval string            `json:"approval"`
}

func newMCPGetCmd() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "get NAME [--json]",
		Short: "Show an MCP server: source pin, launch line, tools with their effects, grant",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, m, done, err := openServer(cmd, args[0])
			if err != nil {
				return err
			}
			defer done()
			g, _, err := m.Grant(s.state.ID)
			if err != nil {
				return pluginErr(err)
			}
			items := plugin.GrantItems(g.Permissions)
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), mcpGetJSON(s, groupsJSON(items)))
			}
			printServer(cmd.OutOrStdout(), s, items)
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func serverTools(s *mcpServer) []toolJSON {
	out := []toolJSON{}
	for _, t := range s.manifest.Tools {
		out = append(out, toolJSON{Name: host.ToolName(s.state.ServerName(), t.Name), Tool: t.Name, Effects: t.Effects, Approval: t.Approval})
	}
	return out
}

func mcpGetJSON(s *mcpServer, grant map[string][]string) map[string]any {
	vs := s.state.Versions[s.state.Active]
	return map[string]any{"name": s.state.ServerName(), "id": s.state.ID, "version": s.state.Active, "scope": s.scope(),
		"source": s.source, "merkle_root": vs.MerkleRoot.String(), "launch": manifest.LaunchLine(s.manifest), "data_dir": s.manifest.DataDir,
		"tools": serverTools(s), "grant": grant, "untrusted": vs.Untrusted}
}

func printServer(w io.Writer, s *mcpServer, grant map[plugin.Group][]string) {
	vs := s.state.Versions[s.state.Active]
	p := func(format string, a ...any) { fmt.Fprint(w, termtext.EscapeText(fmt.Sprintf(format, a...))) }
	p("%s: %s %s (%s)\n", s.state.ServerName(), s.state.ID, s.state.Active, s.scope())
	p("  source      %s\n", termtext.Escape(sourceLine(s.source)))
	if s.source != nil {
		p("  integrity   %s\n  command     %s\n", termtext.Escape(s.source.Integrity), termtext.Escape(strings.Join(s.source.Command, " ")))
	}
	p("  merkle root %s\n  starts      %s\n", vs.MerkleRoot, manifest.LaunchLine(s.manifest))
	if s.manifest.DataDir {
		p("  data dir    STATE/plugins/%s/data\n", s.state.ID)
	}
	p("  tools:\n")
	for _, t := range serverTools(s) {
		appr := "no approval"
		if t.Approval != "never" {
			appr = "approval " + t.Approval
		}
		p("    %-40s data %s, external state %s, %s\n", t.Name, t.Effects.Data, t.Effects.ExternalState, appr)
	}
	p("  grant:\n")
	for _, grp := range plugin.Groups {
		for _, it := range grant[grp] {
			p("    %s %s\n", grp, it)
		}
	}
}

func newMCPRemoveCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "remove NAME",
		Short: "Remove an MCP server: its plugin, its data directory and its secrets in the vault",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, m, done, err := openServer(cmd, args[0])
			if err != nil {
				return err
			}
			defer done()
			if err := m.Remove(cmd.Context(), s.state.ID); err != nil {
				return pluginErr(err)
			}
			if err := removeSecrets(cmd, s); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "removed %s (%s)\n", termtext.Escape(args[0]), s.state.ID)
			return nil
		},
	}
}

// removeSecrets deletes the vault entries `mcp add` stored for s: the
// secrets its manifest declares under their mcp_NAME_ names. A plugin
// installed otherwise names the user's own secrets, which stay.
func removeSecrets(cmd *cobra.Command, s *mcpServer) error {
	var names []string
	for _, sec := range s.manifest.Permissions.Secrets {
		if want, err := mcpadd.SecretName(s.state.ServerName(), sec.Env); s.source != nil && err == nil && want == sec.Name {
			names = append(names, sec.Name)
		}
	}
	if len(names) == 0 {
		return nil
	}
	v, err := openVault(cmd)
	if err != nil {
		return err
	}
	for _, n := range names {
		if err := v.Delete(cmd.Context(), n); err != nil && !errors.Is(err, secret.ErrNotFound) {
			return secretErr(err)
		}
	}
	return nil
}
