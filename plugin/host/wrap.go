package host

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/norma-run/norma/manifest"
	"github.com/norma-run/norma/sandbox"
	"github.com/norma-run/norma/sandbox/sandboxpolicy"
)

// WrapOptions configures Wrap.
type WrapOptions struct {
	// ID and Version of the generated manifest (defaults: local.wrapped.NAME, 0.1.0).
	ID, Version string
	// Description of the generated manifest (default: the command line).
	Description string
	// Entrypoint is the path, inside the future package, that starts the
	// server (default: argv[0]'s base name under bin/).
	Entrypoint string
	// ReadOnly are the host paths the server needs to start (its own
	// files); the current directory and existing paths among argv are added.
	ReadOnly []string
	// Exact makes ReadOnly all the probe sees: the current directory and
	// the paths among argv are not added.
	Exact bool
	// ReadWrite are host paths the probe may write (the proposed data
	// directory of a server that gets one).
	ReadWrite []string
	// ProbeEnv is added to the probe's environment (K=V, templates
	// already expanded).
	ProbeEnv []string
	// Args, Env, DataDir and Secrets go into the manifest as given (with
	// their templates): the command line the installed server starts with.
	Args    []string
	Env     map[string]string
	DataDir bool
	Secrets []manifest.Secret
	// Filesystem, when set, is requested as the manifest's filesystem
	// permission (the workspace folders the server was pointed at).
	Filesystem *manifest.Filesystem
	Runner     sandbox.Runner
	Timeout    time.Duration
}

// Wrap starts an existing stdio MCP server inside the sandbox — no network,
// read-only access to its own files and nothing else — lists its tools and
// returns a starting manifest. Each tool's effects are proposed from its
// MCP annotations (see [toolEffects]), marked in a comment as the server's
// own, untrusted claims; a tool without annotations is an external write
// that needs approval per call. No file, network or process permission is
// granted. The user reviews it, or `norma mcp add` shows it on the install
// screen and asks.
func Wrap(ctx context.Context, argv []string, o WrapOptions) ([]byte, error) {
	if len(argv) == 0 {
		return nil, fmt.Errorf("plugin wrap: no command")
	}
	argv, err := resolveCommand(argv)
	if err != nil {
		return nil, err
	}
	if o.Timeout <= 0 {
		o.Timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	tools, err := probeTools(ctx, argv, o)
	if err != nil {
		return nil, err
	}
	return wrapManifest(argv, o, tools)
}

// resolveCommand makes argv[0] absolute: a path with a slash (relative
// to the current directory) as it is, a bare name through PATH.
func resolveCommand(argv []string) ([]string, error) {
	argv = slices.Clone(argv)
	if strings.Contains(argv[0], "/") {
		abs, err := filepath.Abs(argv[0])
		if err != nil {
			return nil, fmt.Errorf("plugin wrap: %w", err)
		}
		if _, err := os.Stat(abs); err != nil {
			return nil, fmt.Errorf("plugin wrap: %s: %w", argv[0], err)
		}
		argv[0] = abs
		return argv, nil
	}
	p, err := exec.LookPath(argv[0])
	if err != nil {
		return nil, fmt.Errorf("plugin wrap: %s not found in PATH (give a path, e.g. ./%s)", argv[0], argv[0])
	}
	if argv[0], err = filepath.Abs(p); err != nil {
		return nil, fmt.Errorf("plugin wrap: %w", err)
	}
	return argv, nil
}

// probeTools starts argv in the sandbox and returns the tools it lists.
func probeTools(ctx context.Context, argv []string, o WrapOptions) ([]*mcp.Tool, error) {
	var stderr ringBuffer
	stderr.n = 16 << 10
	ro := o.ReadOnly
	if !o.Exact {
		ro = wrapReadOnly(argv, o.ReadOnly)
	}
	proc, err := o.Runner.Start(ctx, sandbox.Spec{
		Argv: argv, Dir: "/tmp", ReadOnly: ro, ReadWrite: o.ReadWrite,
		Env:    append([]string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/tmp", "LANG=C.UTF-8"}, o.ProbeEnv...),
		Stderr: &stderr, Limits: sandboxpolicy.DefaultLimits,
	})
	if err != nil {
		return nil, fmt.Errorf("plugin wrap: start: %w", err)
	}
	defer func() { proc.Kill(); proc.Wait() }()
	// The probe declares what a loaded plugin's client declares, so the
	// server lists the same (conditional) tools.
	client := mcp.NewClient(ClientImplementation, ClientOptions(Handlers{}))
	session, err := client.Connect(ctx, &mcp.IOTransport{Reader: proc.Stdout, Writer: proc.Stdin}, nil)
	if err != nil {
		return nil, fmt.Errorf("plugin wrap: connect: %w (stderr: %s)", err, lastLine(stderr.String()))
	}
	defer session.Close()
	res, err := session.ListTools(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("plugin wrap: tools/list: %w", err)
	}
	return res.Tools, nil
}

// wrapReadOnly returns the sorted, distinct host paths a wrapped server
// sees: ro, the current directory and the existing paths among argv (never
// "/").
func wrapReadOnly(argv, ro []string) []string {
	ro = slices.Clone(ro)
	if wd, err := os.Getwd(); err == nil && wd != "/" {
		ro = append(ro, wd)
	}
	for _, a := range argv {
		if fi, err := os.Stat(a); err == nil && (strings.Contains(a, "/") || fi.Mode().IsRegular()) {
			if abs, err := filepath.Abs(a); err == nil && abs != "/" {
				ro = append(ro, abs)
			}
		}
	}
	return dedupe(ro)
}

// wrapTool is one tool of the generated manifest.
type wrapTool struct {
	Name        string            `yaml:"name"`
	Description string            `yaml:"description,omitempty"`
	Effects     *manifest.Effects `yaml:"effects"`
	Approval    string            `yaml:"approval"`
}

// wrapOut is the generated manifest, in the order a reader expects.
type wrapOut struct {
	SchemaVersion int               `yaml:"schema_version"`
	ID            string            `yaml:"id"`
	Version       string            `yaml:"version"`
	Description   string            `yaml:"description"`
	Entrypoint    string            `yaml:"entrypoint"`
	Args          []string          `yaml:"args,omitempty"`
	Env           map[string]string `yaml:"env,omitempty"`
	DataDir       bool              `yaml:"data_dir,omitempty"`
	Tools         []wrapTool        `yaml:"tools"`
	Permissions   map[string]any    `yaml:"permissions"`
}

const wrapHeader = "# Generated by Norma from the server's own tools/list. Tool effects come from\n" +
	"# the server's MCP annotations: they are the server's claims, untrusted\n" +
	"# suggestions, not facts; a tool without annotations is an external write\n" +
	"# that needs approval. Nothing else is granted. Review before consenting.\n"

// wrapManifest returns the starting manifest of a server run as argv that
// serves tools, validated.
func wrapManifest(argv []string, o WrapOptions, tools []*mcp.Tool) ([]byte, error) {
	name := strings.ToLower(filepath.Base(argv[0]))
	o = wrapDefaults(argv, name, o)
	out := wrapOut{
		SchemaVersion: 2, ID: o.ID, Version: o.Version, Entrypoint: o.Entrypoint, Description: o.Description,
		Args: o.Args, Env: o.Env, DataDir: o.DataDir,
		Permissions: map[string]any{"process": map[string]string{"spawn": "deny"}, "external_writes": map[string]string{"default": "approval_required"}},
	}
	if len(o.Secrets) > 0 {
		out.Permissions["secrets"] = o.Secrets
	}
	if fs := o.Filesystem; fs != nil && len(fs.Read)+len(fs.Write) > 0 {
		out.Permissions["filesystem"] = map[string][]string{"read": fs.Read, "write": fs.Write, "deny": fs.Deny}
	}
	comments := yaml.CommentMap{}
	for i, t := range tools {
		eff, approval, note := toolEffects(t.Annotations)
		out.Tools = append(out.Tools, wrapTool{Name: t.Name, Description: shortDescription(t.Description), Effects: eff, Approval: approval})
		comments[fmt.Sprintf("$.tools[%d]", i)] = []*yaml.Comment{yaml.HeadComment(" " + note)}
	}
	if len(out.Tools) == 0 {
		return nil, fmt.Errorf("plugin wrap: the server offers no tools")
	}
	b, err := yaml.MarshalWithOptions(out, yaml.IndentSequence(true), yaml.WithComment(comments))
	if err != nil {
		return nil, err
	}
	b = append([]byte(wrapHeader), b...)
	if _, err := manifest.Parse("wrapped-manifest.yaml", b); err != nil {
		return nil, fmt.Errorf("plugin wrap: generated manifest does not validate: %w", err)
	}
	return b, nil
}

func wrapDefaults(argv []string, name string, o WrapOptions) WrapOptions {
	if o.ID == "" {
		o.ID = "local.wrapped." + sanitizeID(name)
	}
	if o.Version == "" {
		o.Version = "0.1.0"
	}
	if o.Entrypoint == "" {
		o.Entrypoint = "bin/" + name
	}
	if o.Description == "" {
		o.Description = "Wrapped MCP server: " + strings.Join(argv, " ") + ". Review every tool and permission before installing."
	}
	o.Env = maps.Clone(o.Env)
	return o
}

// shortDescription is the first line of d, at most 200 bytes on a rune
// boundary.
func shortDescription(d string) string {
	d, _, _ = strings.Cut(d, "\n")
	if len(d) <= 200 {
		return d
	}
	for i := 200; i > 0; i-- {
		if (d[i] & 0xC0) != 0x80 {
			return d[:i]
		}
	}
	return ""
}

// toolEffects proposes a tool's effects and approval from its MCP
// annotations, with a comment saying what they were. readOnlyHint makes it
// a read that needs no approval; an open world (openWorldHint true, or
// absent: the protocol's default) makes the data it handles "send";
// anything not read-only is an external write that needs approval per
// call, destructive or not (destructiveHint and idempotentHint are only
// noted). No annotations: an external write with approval.
func toolEffects(a *mcp.ToolAnnotations) (*manifest.Effects, string, string) {
	if a == nil {
		return &manifest.Effects{Data: "send", ExternalState: "write"}, "per_action", "no annotations from the server: treated as an external write that needs approval"
	}
	open := a.OpenWorldHint == nil || *a.OpenWorldHint
	destructive := a.DestructiveHint == nil || *a.DestructiveHint
	note := fmt.Sprintf("the server claims (untrusted): readOnlyHint=%t destructiveHint=%t idempotentHint=%t openWorldHint=%t", a.ReadOnlyHint, destructive, a.IdempotentHint, open)
	data := "read"
	if open {
		data = "send"
	}
	if a.ReadOnlyHint {
		return &manifest.Effects{Data: data, ExternalState: "none"}, "never", note
	}
	return &manifest.Effects{Data: data, ExternalState: "write"}, "per_action", note
}

func sanitizeID(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	out := strings.Trim(b.String(), "-")
	if out == "" {
		return "server"
	}
	return out
}

// SanitizeID is the id segment of a name: lower-case letters and digits,
// anything else a '-'.
func SanitizeID(s string) string { return sanitizeID(strings.ToLower(s)) }

func dedupe(s []string) []string {
	slices.Sort(s)
	return slices.Compact(s)
}
