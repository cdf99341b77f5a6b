package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/norma-run/norma/door/mcpadd"
	"github.com/norma-run/norma/internal/termtext"
	"github.com/norma-run/norma/manifest"
	"github.com/norma-run/norma/plugin"
	"github.com/norma-run/norma/plugin/host"
	"github.com/norma-run/norma/sandbox"
	"github.com/norma-run/norma/secret"
)

func newMCPCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "mcp",
		Short: "Add, list, show, remove and import MCP servers (npx, uvx, python -m, node, a program), confined",
	}
	c.AddCommand(newMCPAddCmd(), newMCPListCmd(), newMCPGetCmd(), newMCPRemoveCmd(), newMCPImportCmd(), newMCPProxyCmd())
	return c
}

// addRequest is one server to add: `mcp add` gives one, `mcp import` one
// per server of the file.
type addRequest struct {
	name      string
	argv      []string
	env       map[string]string // --env, secret values included
	secrets   map[string]string // variable → origin
	scope     string
	workspace string
	grantFile string
	yes       bool
	asJSON    bool
}

// addFlags are the flags add and import share.
type addFlags struct {
	env, secrets []string
	scope        string
	workspace    string
	grantFile    string
	yes, asJSON  bool
}

func (f *addFlags) register(c *cobra.Command) {
	fl := c.Flags()
	fl.StringArrayVar(&f.env, "env", nil, "K=V for the server's environment (repeatable; V may use ${data}, ${workspace}, ${package})")
	fl.StringArrayVar(&f.secrets, "secret", nil, "K=ORIGIN: K is a secret sent only to ORIGIN; its value comes from --env K=... or $K and goes to the vault (repeatable)")
	fl.StringVar(&f.scope, "scope", "user", "user (every workspace) or workspace (only --workspace)")
	fl.StringVar(&f.workspace, "workspace", ".", "the workspace root: an argument equal to it becomes ${workspace}")
	fl.StringVar(&f.grantFile, "grant", "", "grant layer file (kind: grant) to consent with, with --yes")
	fl.BoolVar(&f.yes, "yes", false, "do not ask; requires --grant FILE")
	fl.BoolVar(&f.asJSON, "json", false, "print one JSON object per server, one a line")
}

// request turns the flags into a request for server name.
func (f *addFlags) request(name string, argv []string) (*addRequest, error) {
	r := &addRequest{name: name, argv: argv, env: map[string]string{}, secrets: map[string]string{}, scope: f.scope,
		grantFile: f.grantFile, yes: f.yes, asJSON: f.asJSON}
	if f.scope != "user" && f.scope != "workspace" {
		return nil, exitWith(exitUsage, fmt.Errorf("--scope %q: want user or workspace", f.scope))
	}
	ws, err := filepath.Abs(f.workspace)
	if err != nil {
		return nil, exitWith(exitUsage, err)
	}
	r.workspace = ws
	for _, kv := range f.env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, exitWith(exitUsage, fmt.Errorf("--env %q: want K=V", k))
		}
		r.env[k] = v
	}
	for _, kv := range f.secrets {
		k, origin, ok := strings.Cut(kv, "=")
		if !ok || k == "" || origin == "" {
			return nil, exitWith(exitUsage, fmt.Errorf("--secret %q: want K=ORIGIN (e.g. GITHUB_TOKEN=https://api.github.com)", k))
		}
		r.secrets[k] = origin
	}
	return r, nil
}

func newMCPAddCmd() *cobra.Command {
	var f addFlags
	c := &cobra.Command{
		Use:   "add NAME [--scope user|workspace] [--env K=V]... [--secret K=ORIGIN]... [--grant FILE --yes] [--json] -- COMMAND ARGS...",
		Short: "Install an MCP server ahead of time, propose its manifest from its tools, ask consent and register it as NAME",
		Long: "Install the server the command names (npx -y PKG, uvx PKG, python3 -m MODULE, node FILE, or a program) on the host\n" +
			"(npm runs with --ignore-scripts), pin its version and digest, start it once in the sandbox to list its tools,\n" +
			"show the install screen and ask consent (or take --grant FILE --yes). Its tools are mcp__NAME__TOOL.",
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.ArgsLenAtDash() != 1 {
				return exitWith(exitUsage, errors.New("give the server's command after --: norma mcp add NAME -- COMMAND ARGS..."))
			}
			r, err := f.request(args[0], args[1:])
			if err != nil {
				return err
			}
			return addServer(cmd, r)
		},
	}
	f.register(c)
	return c
}

// addServer builds, installs and registers one server, and stores its
// secrets in the vault.
func addServer(cmd *cobra.Command, r *addRequest) error {
	if !plugin.ValidServerName(r.name) {
		return exitWith(exitUsage, fmt.Errorf("server name %q: use letters, digits, '-' and '_' (at most 48, no \"__\")", r.name))
	}
	values, err := secretValues(r)
	if err != nil {
		return err
	}
	g, err := loadGrant(r.yes, r.grantFile)
	if err != nil {
		return err
	}
	// What the request itself refuses (a credential in --env or an
	// argument) is said before whether anyone can consent.
	if err := mcpadd.CheckEnv(mcpadd.Options{Name: r.name, Argv: r.argv, Env: r.env, Secrets: r.secrets}); err != nil {
		if errors.Is(err, mcpadd.ErrCredential) {
			return exitWith(exitUsage, err)
		}
		return exitWith(exitFailed, fmt.Errorf("mcp add %s: %w", r.name, err))
	}
	if !r.yes && noAnswer(cmd.InOrStdin()) {
		// Fail before installing anything: nobody could consent.
		return exitWith(exitUsage, fmt.Errorf("mcp add %s: nobody can consent: stdin is not a terminal and gives no answer; run it in a terminal, or pass --grant FILE --yes (the grant file's format: README, \"MCP servers\")", r.name))
	}
	if err := checkNameFree(cmd, r.name); err != nil {
		return err
	}
	p, err := mcpadd.Build(cmd.Context(), mcpadd.Options{Name: r.name, Argv: r.argv, Env: r.env, Secrets: r.secrets,
		Workspace: r.workspace, Runner: sandbox.Runner{}, Log: cmd.ErrOrStderr()})
	if err != nil {
		if errors.Is(err, mcpadd.ErrCredential) {
			return exitWith(exitUsage, err)
		}
		return exitWith(exitFailed, fmt.Errorf("mcp add %s: %w", r.name, err))
	}
	defer p.Cleanup()
	return register(cmd, r, p, g, values)
}

// register installs the built package, then stores the secrets; if the
// vault fails the plugin is removed again.
func register(cmd *cobra.Command, r *addRequest, p *mcpadd.Package, g *manifest.Layer, values map[string]secret.Value) error {
	m, done, err := manager(cmd, !r.yes, "", r.asJSON)
	if err != nil {
		return err
	}
	defer done()
	o := plugin.InstallOptions{Dev: true, Name: r.name, Grant: g}
	if r.scope == "workspace" {
		o.Workspace = r.workspace
	}
	if !r.asJSON {
		fmt.Fprint(cmd.OutOrStdout(), untrustedNote)
	}
	res, err := m.Install(cmd.Context(), p.Dir, o)
	if err != nil {
		return pluginErr(err)
	}
	if err := storeSecrets(cmd, r.name, values); err != nil {
		m.Remove(cmd.Context(), res.ID)
		return err
	}
	return printAdded(cmd, r, res, p)
}

// untrustedNote precedes the install screen of a server added by `mcp add`.
const untrustedNote = "The tools' effects below were proposed from the server's own MCP annotations (readOnlyHint,\n" +
	"destructiveHint, openWorldHint): they are the server's claims, untrusted. A tool that claims to only read\n" +
	"needs no approval; everything else asks. Review them before you consent.\n"

// secretValues takes each declared secret's value from --env (removing it
// there) or the host environment, checked as `secret set` checks it.
func secretValues(r *addRequest) (map[string]secret.Value, error) {
	out := map[string]secret.Value{}
	for k := range r.secrets {
		raw, ok := r.env[k]
		delete(r.env, k)
		if !ok {
			raw, ok = os.LookupEnv(k)
		}
		if !ok || raw == "" {
			return nil, exitWith(exitUsage, fmt.Errorf("secret %s has no value: set %s in the environment (or pass --env %s=...)", k, k, k))
		}
		name, err := mcpadd.SecretName(r.name, k)
		if err != nil {
			return nil, exitWith(exitUsage, err)
		}
		v := secret.NewValue([]byte(raw))
		if err := secret.CheckValue(name, v); err != nil {
			return nil, exitWith(exitFailed, err)
		}
		out[name] = v
	}
	return out, nil
}

func storeSecrets(cmd *cobra.Command, name string, values map[string]secret.Value) error {
	if len(values) == 0 {
		return nil
	}
	v, err := openVault(cmd)
	if err != nil {
		return err
	}
	for n, val := range values {
		if err := v.Set(cmd.Context(), n, val); err != nil {
			return secretErr(err)
		}
	}
	return nil
}

// checkNameFree refuses, before anything is downloaded, a name an
// installed plugin goes by (Install checks it again).
func checkNameFree(cmd *cobra.Command, name string) error {
	if _, ok, err := findServer(cmd, name); err != nil {
		return err
	} else if ok {
		return exitWith(exitFailed, fmt.Errorf("an MCP server named %s is already added; remove it first: norma mcp remove %s", name, name))
	}
	return nil
}

// addedJSON is the --json output of add.
type addedJSON struct {
	Name    string              `json:"name"`
	ID      string              `json:"id"`
	Version string              `json:"version"`
	Scope   string              `json:"scope"`
	Source  mcpadd.Source       `json:"source"`
	Tools   []string            `json:"tools"`
	Grant   map[string][]string `json:"grant,omitempty"`
}

func printAdded(cmd *cobra.Command, r *addRequest, res *plugin.Result, p *mcpadd.Package) error {
	out := addedJSON{Name: r.name, ID: res.ID, Version: res.Version, Scope: r.scope, Source: p.Source, Tools: []string{}}
	mf, err := manifest.Parse("manifest.yaml", p.Manifest)
	if err != nil {
		return exitWith(exitInternal, err)
	}
	for _, t := range mf.Tools {
		out.Tools = append(out.Tools, host.ToolName(r.name, t.Name))
	}
	if res.Grant != nil {
		out.Grant = groupsJSON(plugin.GrantItems(res.Grant.Permissions))
	}
	if r.asJSON {
		return writeJSONLine(cmd.OutOrStdout(), out) // one line per server, for import
	}
	fmt.Fprintf(cmd.OutOrStdout(), "added %s: %s %s (%s %s, %s)\ntools: %s\n", r.name, res.ID, res.Version, p.Source.Kind,
		termtext.Escape(p.Source.Package), p.Source.Integrity, termtext.Escape(strings.Join(out.Tools, ", ")))
	return nil
}

// noAnswer reports whether r, the stdin consent would be read from, can
// give no answer: not a terminal, and /dev/null (a character device), an
// empty file, or a pipe already closed with nothing in it (seen within
// 100 ms). A pipe that may still answer (a script's "y") is read.
func noAnswer(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok || stdinIsTerminal(r) {
		return false
	}
	fi, err := f.Stat()
	if err != nil {
		return true
	}
	switch {
	case fi.Mode()&os.ModeCharDevice != 0:
		return true
	case fi.Mode().IsRegular():
		return fi.Size() == 0
	case fi.Mode()&os.ModeNamedPipe != 0:
		fds := []unix.PollFd{{Fd: int32(f.Fd()), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, 100)
		return err == nil && n == 1 && fds[0].Revents&unix.POLLHUP != 0 && fds[0].Revents&unix.POLLIN == 0
	}
	return false
}
