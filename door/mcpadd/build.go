package mcpadd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/norma-run/norma/manifest"
	"github.com/norma-run/norma/plugin"
	"github.com/norma-run/norma/plugin/host"
	"github.com/norma-run/norma/sandbox"
	"github.com/norma-run/norma/secret"
	"github.com/norma-run/norma/tool/builtin"
)

// Options configures Build.
type Options struct {
	// Name is the server name (mcp__NAME__TOOL).
	Name string
	// Argv is the server's command line: COMMAND ARGS.
	Argv []string
	// Env is the server's environment, without secrets; values may use
	// ${data}, ${workspace} and ${package}.
	Env map[string]string
	// Secrets maps a variable to the origin its secret is for.
	Secrets map[string]string
	// Workspace is the workspace root; an argument equal to it becomes
	// ${workspace}.
	Workspace string
	Runner    sandbox.Runner
	// Log receives the installers' output (npm, pip).
	Log     io.Writer
	Timeout time.Duration
}

// Package is a built, unsigned package ready for `plugin install --dev`.
type Package struct {
	Dir      string
	Source   Source
	Manifest []byte
}

// Cleanup removes the package directory.
func (p *Package) Cleanup() { os.RemoveAll(p.Dir) }

// ID is the plugin id of server name.
func ID(name string) string { return "local.mcp." + host.SanitizeID(name) }

type builder struct {
	dir  string
	name string
	log  io.Writer
}

// run runs an installer with its output on the log; the error names it.
func (b *builder) run(ctx context.Context, prog string, args ...string) error {
	cmd := exec.CommandContext(ctx, prog, args...)
	cmd.Stdout, cmd.Stderr, cmd.Dir = b.log, b.log, b.dir
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s: %w", filepath.Base(prog), strings.Join(args, " "), err)
	}
	return nil
}

func (b *builder) launcherName() string { return host.SanitizeID(b.name) }

// Build installs the server of o.Argv into a new package directory, records
// its source, starts it once in the sandbox to list its tools and writes
// the proposed manifest. The caller removes the directory (Cleanup).
func Build(ctx context.Context, o Options) (*Package, error) {
	c, err := Parse(o.Argv)
	if err != nil {
		return nil, err
	}
	if err := CheckEnv(o); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "norma-mcp-add-*")
	if err != nil {
		return nil, err
	}
	p := &Package{Dir: dir}
	if err := build(ctx, o, c, p); err != nil {
		p.Cleanup()
		return nil, err
	}
	return p, nil
}

func build(ctx context.Context, o Options, c Command, p *Package) error {
	b := &builder{dir: p.Dir, name: o.Name, log: o.Log}
	if b.log == nil {
		b.log = io.Discard
	}
	src, entry, err := install(ctx, b, c)
	if err != nil {
		return err
	}
	src.Command = slices.Clone(o.Argv)
	p.Source = src
	if err := writeSource(p.Dir, src); err != nil {
		return err
	}
	scratch, err := os.MkdirTemp("", "norma-mcp-probe-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(scratch)
	wo, vars, err := wrapOptions(o, c, src, entry, p.Dir, scratch)
	if err != nil {
		return err
	}
	probe := append([]string{filepath.Join(p.Dir, filepath.FromSlash(entry))}, expandAll(wo.Args, vars)...)
	m, err := host.Wrap(ctx, probe, wo)
	if err != nil {
		return err
	}
	p.Manifest = m
	return os.WriteFile(filepath.Join(p.Dir, "manifest.yaml"), m, 0o644)
}

func install(ctx context.Context, b *builder, c Command) (Source, string, error) {
	switch c.Kind {
	case KindNPM:
		return installNPM(ctx, b, c)
	case KindPython:
		return installPython(ctx, b, c)
	case KindNode:
		return copyNode(b, c)
	}
	return copyBinary(b, c)
}

// CheckEnv refuses what must not reach a file: a credential-looking
// variable that is not declared a secret, one that is both, and a plain
// variable or argument whose value holds a token of a known format
// (ghp_..., AKIA..., a JWT: secret.Redactor's formats), whatever its
// name — the manifest, the install screen and `mcp get` show them in clear.
func CheckEnv(o Options) error {
	if !plugin.ValidServerName(o.Name) {
		return fmt.Errorf("server name %q: use letters, digits, '-' and '_'", o.Name)
	}
	tokens := secret.NewRedactor()
	for k, v := range o.Env {
		if _, ok := o.Secrets[k]; ok {
			return fmt.Errorf("internal: %s is both env and secret", k)
		}
		if LooksLikeCredential(k) {
			return &CredentialError{Key: k}
		}
		if _, c := tokens.RedactCount(v); len(c) > 0 {
			return &CredentialError{Key: k, Value: true}
		}
	}
	for i, a := range o.Argv {
		if _, c := tokens.RedactCount(a); len(c) > 0 {
			return fmt.Errorf("%w: argument %d of the command holds a token (%s); it would be written into the plugin's manifest in clear. "+
				"Pass it in a variable declared a secret instead: --secret K=ORIGIN", ErrCredential, i, strings.Join(sortedKeys(c), ", "))
		}
	}
	return nil
}

// CredentialError refuses a credential given as a plain variable: by its
// name (Key looks like one) or by its value (Value: it holds a token).
type CredentialError struct {
	Key   string
	Value bool
}

func (e *CredentialError) Error() string {
	what := "looks like a credential"
	if e.Value {
		what = "holds a token"
	}
	return fmt.Sprintf("--env %s %s; it would be written into the plugin's manifest in clear. "+
		"Declare it a secret for the origin it is sent to: --secret %s=https://api.example.com "+
		"(the value is then taken from --env %s=... or from %s in your environment and stored in the vault)", e.Key, what, e.Key, e.Key, e.Key)
}

// ErrCredential matches a *CredentialError with errors.Is.
var ErrCredential = errors.New("credential in env")

func (e *CredentialError) Is(target error) bool { return target == ErrCredential }

// wrapOptions is what Wrap writes into the manifest and runs the probe
// with: the templated args and env, the data dir, the secrets' variables
// as placeholders. The probe runs an unreviewed server, so it sees its
// package and nothing of the user's: ${workspace} is an empty stand-in
// (with the folders the arguments name) and ${data} a scratch directory,
// both under scratch and deleted after.
func wrapOptions(o Options, c Command, src Source, entry, dir, scratch string) (host.WrapOptions, manifest.Vars, error) {
	wo := host.WrapOptions{
		ID: ID(o.Name), Version: semverOf(src.Version), Entrypoint: entry, Runner: o.Runner, Timeout: o.Timeout,
		Description: fmt.Sprintf("MCP server %s (%s %s %s), added by norma mcp add.", o.Name, src.Kind, displayPackage(src), src.Version),
		Env:         maps.Clone(o.Env), ReadOnly: []string{dir}, Exact: true,
	}
	if wo.Env == nil {
		wo.Env = map[string]string{}
	}
	if c.Kind == KindNPM || c.Kind == KindPython {
		wo.DataDir = true
		for k, v := range xdgEnv {
			if _, ok := wo.Env[k]; !ok {
				wo.Env[k] = v
			}
		}
	}
	secrets, err := manifestSecrets(o.Name, o.Secrets)
	if err != nil {
		return wo, manifest.Vars{}, err
	}
	wo.Secrets = secrets
	var fs *manifest.Filesystem
	wo.Args, fs = templateArgs(c.Args, o.Workspace)
	if wo.Filesystem, err = withDeny(fs); err != nil {
		return wo, manifest.Vars{}, err
	}
	ws, data := filepath.Join(scratch, "workspace"), filepath.Join(scratch, "data")
	if err := standInWorkspace(ws, wo.Args); err != nil {
		return wo, manifest.Vars{}, err
	}
	v := probeVars(dir, ws)
	wo.ReadOnly = append(wo.ReadOnly, ws)
	if wo.DataDir {
		if err := os.Mkdir(data, 0o700); err != nil {
			return wo, manifest.Vars{}, err
		}
		wo.ReadWrite, v.Data = []string{data}, data
	}
	wo.ProbeEnv, err = probeEnv(wo, v)
	return wo, v, err
}

// standInWorkspace creates ws with the folders that args name under
// ${workspace}, so that a server that checks its directories at start
// finds them.
func standInWorkspace(ws string, args []string) error {
	if err := os.MkdirAll(ws, 0o700); err != nil {
		return err
	}
	for _, a := range args {
		if rel, ok := strings.CutPrefix(a, "${workspace}/"); ok && filepath.IsLocal(filepath.FromSlash(rel)) {
			if err := os.MkdirAll(filepath.Join(ws, filepath.FromSlash(rel)), 0o700); err != nil {
				return err
			}
		}
	}
	return nil
}

// xdgEnv points the XDG base directories into the data directory, so that
// a server that keeps state where the platform says finds a writable place.
var xdgEnv = map[string]string{
	"XDG_CONFIG_HOME": "${data}/config", "XDG_DATA_HOME": "${data}/share",
	"XDG_STATE_HOME": "${data}/state", "XDG_CACHE_HOME": "${data}/cache",
}

func displayPackage(s Source) string {
	if s.Kind == KindNPM || s.Kind == KindPython {
		return s.Package
	}
	return filepath.Base(s.Package)
}

// templateArgs maps an argument that is the workspace root, or a path
// under it, to ${workspace}[/REL], and returns the workspace globs such
// arguments point at: a server told a directory asks to use it, so the
// manifest requests reading and writing there, and the install screen
// asks the user, who may grant less. An argument is such a path when it
// is absolute, or relative as a project's client config writes one ("."
// or "./REL"): that is resolved against the workspace (the directory of
// the imported file is the workspace of `mcp import`), since the server
// will not run there but in the sandbox.
func templateArgs(args []string, ws string) ([]string, *manifest.Filesystem) {
	out := slices.Clone(args)
	var globs []string
	for i, a := range out {
		if ws == "" {
			continue
		}
		if a == "." || strings.HasPrefix(a, "./") {
			a = filepath.Join(ws, a)
		}
		if !filepath.IsAbs(a) {
			continue
		}
		rel, err := filepath.Rel(filepath.Clean(ws), filepath.Clean(a))
		if err != nil || rel == ".." || strings.HasPrefix(rel, "../") || strings.Contains(rel, "${") {
			continue
		}
		if rel == "." {
			out[i], globs = "${workspace}", append(globs, "workspace://**")
		} else {
			out[i], globs = "${workspace}/"+filepath.ToSlash(rel), append(globs, "workspace://"+filepath.ToSlash(rel)+"/**")
		}
	}
	if len(globs) == 0 {
		return out, nil
	}
	globs = slices.Compact(slices.Sorted(slices.Values(globs)))
	return out, &manifest.Filesystem{Read: globs, Write: slices.Clone(globs)}
}

// withDeny adds to fs the deny globs of the built-in tools' manifest
// (.env files, Norma's own policy and settings), so that a server given
// the workspace is kept from them as the built-in tools are.
func withDeny(fs *manifest.Filesystem) (*manifest.Filesystem, error) {
	if fs == nil {
		return nil, nil
	}
	deny, err := builtinDeny()
	if err != nil {
		return nil, err
	}
	fs.Deny = deny
	return fs, nil
}

// builtinDeny is the built-in tools' deny globs (.env files, Norma's own
// policy and settings), which no server is given either.
func builtinDeny() ([]string, error) {
	b, err := builtin.Manifest()
	if err != nil {
		return nil, err
	}
	if b.Permissions.Filesystem == nil || len(b.Permissions.Filesystem.Deny) == 0 {
		return nil, errors.New("the built-in tools' manifest has no deny globs")
	}
	return slices.Clone(b.Permissions.Filesystem.Deny), nil
}

// probeVars are the templates' values for the probe; a secret is a fresh
// placeholder, as the server will see at run time.
func probeVars(dir, ws string) manifest.Vars {
	return manifest.Vars{Package: dir, Workspace: ws, Secret: func(name string) (string, error) {
		p, err := secret.NewPlaceholder(name)
		return p.String(), err
	}}
}

func expandAll(args []string, v manifest.Vars) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i], _ = manifest.Expand(a, v)
	}
	return out
}

// probeEnv is the probe's environment: env expanded, each secret's
// variable its placeholder (never its value).
func probeEnv(wo host.WrapOptions, v manifest.Vars) ([]string, error) {
	var out []string
	for _, k := range sortedKeys(wo.Env) {
		s, err := manifest.Expand(wo.Env[k], v)
		if err != nil {
			return nil, fmt.Errorf("--env %s: %w", k, err)
		}
		out = append(out, k+"="+s)
	}
	for _, s := range wo.Secrets {
		p, err := v.Secret(s.Name)
		if err != nil {
			return nil, err
		}
		out = append(out, s.Env+"="+p)
	}
	return out, nil
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
