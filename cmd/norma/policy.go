package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/gate"
	"github.com/norma-run/norma/guard/fsguard"
	"github.com/norma-run/norma/manifest"
	"github.com/norma-run/norma/plugin/host"
	"github.com/norma-run/norma/policy"
	"github.com/norma-run/norma/tool"
	"github.com/norma-run/norma/tools"
	"github.com/norma-run/norma/tools/shell"
	"github.com/spf13/cobra"
)

func init() { commands = append(commands, newPolicyCmd) }

func newPolicyCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "policy",
		Short: "Explain and test capability decisions",
	}
	c.AddCommand(newPolicyExplainCmd(), newPolicyTestCmd())
	return c
}

// LayerFiles names the files a policy set is compiled from.
type LayerFiles struct {
	Manifest        string `yaml:"manifest"`
	Grant           string `yaml:"grant,omitempty"`
	WorkspacePolicy string `yaml:"workspace_policy,omitempty"`
	RunPolicy       string `yaml:"run_policy,omitempty"`
	Workspace       string `yaml:"workspace,omitempty"`

	builtin bool // the request is a built-in tool's: the manifest defaults to tools.Manifest
}

// load compiles the set. A workspace directory with .norma/policy.yaml
// supplies the workspace policy when no file is named.
func (f LayerFiles) load() (*policy.Set, policy.Inputs, error) {
	var in policy.Inputs
	var m *manifest.Manifest
	var err error
	if f.Manifest == "" {
		if !f.builtin {
			return nil, in, errors.New("--manifest is required (it may be left out for a built-in --tool)")
		}
		m, err = tools.Manifest()
	} else {
		m, err = manifest.ParseFile(f.Manifest)
	}
	if err != nil {
		return nil, in, err
	}
	in.Manifest = m
	ws := f.WorkspacePolicy
	if ws == "" && f.Workspace != "" {
		if p := filepath.Join(f.Workspace, ".norma", "policy.yaml"); fileExists(p) {
			ws = p
		}
	}
	for _, x := range []struct {
		path string
		dst  **manifest.Layer
	}{{f.Grant, &in.Grant}, {ws, &in.Workspace}, {f.RunPolicy, &in.Run}} {
		if x.path == "" {
			continue
		}
		l, err := manifest.ParseLayerFile(x.path)
		if err != nil {
			return nil, in, err
		}
		*x.dst = l
	}
	in.Host = policy.Host{Sandbox: sandboxAvailable(), OutOfProcess: true}
	s, err := policy.Compile(in)
	return s, in, err
}

func fileExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}

// request builds the normalized request for --op, or for --tool/--input.
func (f LayerFiles) request(s *policy.Set, m *manifest.Manifest, op, tool, input string) (capability.Request, error) {
	var resolve func(string) (string, error)
	if f.Workspace != "" {
		ws, err := fsguard.New(f.Workspace, capability.AllowAll)
		if err != nil {
			return capability.Request{}, err
		}
		defer ws.Close()
		resolve = ws.Resolve
	}
	if op != "" {
		return policy.ParseOp(op, resolve)
	}
	return toolRequest(m, tool, input)
}

// builtinTool returns the built-in tool named name, if there is one. The
// shell tools are built against a scratch workspace: explain only asks them
// what their input declares, it never runs them.
func builtinTool(name string) (tool.CoreTool, bool) {
	b, err := tools.Build(tools.Config{
		Shell: &shell.Config{Workspace: os.TempDir(), SessionID: "explain"},
		Policy: func(m *manifest.Manifest) (*policy.Set, error) {
			return policy.Compile(policy.Inputs{Manifest: m, Host: policy.Host{Sandbox: true}})
		},
	})
	if err != nil {
		return nil, false
	}
	if b.Shell != nil {
		defer b.Shell.Close()
	}
	for _, t := range b.Tools {
		if t.Name() == name {
			return t, true
		}
	}
	return nil, false
}

// explainBuiltin decides a built-in tool call on the capability requests
// its input declares, normalized as the gate's policy step normalizes them,
// and returns the most restrictive decision with every request's trace.
func (f LayerFiles) explainBuiltin(ctx context.Context, s *policy.Set, t tool.CoreTool, input string) (capability.Decision, error) {
	in, err := tool.ParseInput([]byte(input))
	if err != nil {
		return capability.Decision{}, fmt.Errorf("--input: %w", err)
	}
	// The gate validates before it decides; so does explain.
	schema, err := gate.CompileSchema(t.Name(), t.InputSchema())
	if err != nil {
		return capability.Decision{}, err
	}
	if v := schema.Validate(in); len(v) > 0 {
		return capability.Decision{Mode: capability.Deny, Reason: capability.ReasonSchemaInvalid, Layer: "gate",
			Request: "tool " + t.Name() + ": " + v[0].Keyword + ": " + v[0].Message, ManifestDigest: s.ManifestDigest()}, nil
	}
	d, ok := t.(tool.Declarer)
	if !ok {
		return capability.Decision{Mode: capability.Deny, Reason: capability.ReasonPolicyError, Layer: "gate", Request: "tool " + t.Name(),
			ManifestDigest: s.ManifestDigest()}, nil
	}
	acc, err := d.Accesses(in)
	if err != nil {
		return capability.Decision{}, fmt.Errorf("--input: %w", err)
	}
	var resolve func(string) (string, error)
	if f.Workspace != "" {
		ws, err := fsguard.New(f.Workspace, capability.AllowAll)
		if err != nil {
			return capability.Decision{}, err
		}
		defer ws.Close()
		resolve = ws.Resolve
	}
	reqs, unknown, bad := gate.Requests(t.Name(), acc, resolve)
	switch {
	case bad != nil:
		bad.ManifestDigest = s.ManifestDigest()
		return *bad, nil
	case unknown != "":
		return capability.Decision{Mode: capability.Deny, Reason: capability.ReasonCommandUnparseable, Layer: "gate",
			Request: "tool " + t.Name() + ": " + unknown, ManifestDigest: s.ManifestDigest()}, nil
	case len(reqs) == 0:
		return capability.Decision{Mode: capability.Allow, Reason: capability.ReasonAllowed, Request: "tool " + t.Name() + " (no capability requested)",
			ManifestDigest: s.ManifestDigest()}, nil
	}
	var out capability.Decision
	var names []string
	for i, r := range reqs {
		e := s.Explain(ctx, r)
		names = append(names, e.Request)
		if i == 0 || e.Mode < out.Mode {
			trace := append(out.Trace, e.Trace...)
			out = e
			out.Trace = trace
		} else {
			out.Trace = append(out.Trace, e.Trace...)
		}
	}
	out.Request = strings.Join(names, "; ")
	return out, nil
}

// toolRequest maps a plugin tool call to the capability it exercises: an
// external write for tools that declare one, else a read-only call that
// only needs to be declared.
func toolRequest(m *manifest.Manifest, name, input string) (capability.Request, error) {
	if input == "" {
		input = "{}"
	}
	in, err := tool.ParseInput([]byte(input))
	if err != nil {
		return capability.Request{}, fmt.Errorf("--input: %w", err)
	}
	t, ok := m.Tool(name)
	if !ok || t.WritesExternal() {
		return capability.Request{Kind: capability.ExternalWrite, Tool: name, Target: host.Target(in)}, nil
	}
	return capability.Request{}, nil
}

func newPolicyExplainCmd() *cobra.Command {
	var f LayerFiles
	var op, tool, input string
	var asJSON bool
	c := &cobra.Command{
		Use:   "explain --manifest FILE [--grant FILE] [--workspace-policy FILE] [--run-policy FILE] [--workspace DIR] (--op 'KIND ARGS...' | --tool NAME --input JSON)",
		Short: "Decide one request and show the reason and the per-layer trace; exit 0 when decided",
		Long: "Decide one request against the layers and explain it.\n\nOps: fs.read PATH | fs.write PATH | net.request METHOD URL | secret.use NAME ORIGIN |\n" +
			"     process.spawn ARGV... | external.write TOOL TARGET\n\nExit 0 when a decision was made (allow, deny or approval_required), 1 on bad input.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if (op == "") == (tool == "") {
				return exitWith(exitUsage, errors.New("give exactly one of --op or --tool"))
			}
			bt, isBuiltin := builtinTool(tool)
			f.builtin = isBuiltin && op == ""
			s, in, err := f.load()
			if err != nil {
				printProblems(cmd.ErrOrStderr(), err)
				return exitWith(exitFailed, nil)
			}
			if f.builtin {
				if _, declared := in.Manifest.Tool(tool); declared || f.Manifest == "" {
					d, err := f.explainBuiltin(cmd.Context(), s, bt, input)
					if err != nil {
						return exitWith(exitFailed, err)
					}
					if asJSON {
						writeJSON(cmd.OutOrStdout(), explainJSON(d))
					} else {
						printDecision(cmd.OutOrStdout(), d)
					}
					return nil
				}
			}
			var d capability.Decision
			req, err := f.request(s, in.Manifest, op, tool, input)
			switch {
			case err != nil && capability.ReasonOf(err) != "":
				// A refused request (escape, bad URL) is a decision, explained like any other.
				var ce *capability.Error
				errors.As(err, &ce)
				d = ce.Decision
				d.ManifestDigest = s.ManifestDigest()
				if d.Request == "" {
					d.Request = strings.TrimSpace(op)
				}
				d.Trace = []capability.LayerResult{{Layer: d.Layer, Mode: d.Mode, Reason: d.Reason, Rule: d.Rule}}
			case err != nil:
				return exitWith(exitFailed, err)
			case tool != "" && req.Kind == capability.KindInvalid:
				t, _ := in.Manifest.Tool(tool)
				d = capability.Decision{Mode: capability.Allow, Reason: capability.ReasonAllowed, Rule: "plugin:tools." + t.Name,
					Request: "tool " + tool, ManifestDigest: s.ManifestDigest(),
					Trace: []capability.LayerResult{{Layer: policy.LayerPlugin, Mode: capability.Allow, Reason: capability.ReasonAllowed, Rule: "plugin:tools." + t.Name}}}
			default:
				d = s.Explain(cmd.Context(), req)
				if tool != "" {
					if _, ok := in.Manifest.Tool(tool); !ok {
						d.Reason, d.Layer = capability.ReasonToolUndeclared, policy.LayerPlugin
					}
				}
			}
			if asJSON {
				writeJSON(cmd.OutOrStdout(), explainJSON(d))
				return nil
			}
			printDecision(cmd.OutOrStdout(), d)
			return nil
		},
	}
	fl := c.Flags()
	fl.StringVar(&f.Manifest, "manifest", "", "plugin manifest (required)")
	fl.StringVar(&f.Grant, "grant", "", "user grant layer file")
	fl.StringVar(&f.WorkspacePolicy, "workspace-policy", "", "workspace policy file (default DIR/.norma/policy.yaml with --workspace)")
	fl.StringVar(&f.RunPolicy, "run-policy", "", "run policy file")
	fl.StringVar(&f.Workspace, "workspace", "", "workspace directory: paths are resolved in it (symlinks followed)")
	fl.StringVar(&op, "op", "", "the request, e.g. 'fs.write workspace://.agent-output/r.md'")
	fl.StringVar(&tool, "tool", "", "a tool name of the manifest")
	fl.StringVar(&input, "input", "", "the tool input as JSON (with --tool)")
	fl.BoolVar(&asJSON, "json", false, "print the decision as one JSON object")
	return c
}

func explainJSON(d capability.Decision) map[string]any {
	trace := d.Trace
	if trace == nil {
		trace = []capability.LayerResult{}
	}
	return map[string]any{
		"decision": d.Mode.String(), "reason": d.Reason, "layer": d.Layer, "rule": d.Rule,
		"request": d.Request, "manifestDigest": d.ManifestDigest, "policyGeneration": d.PolicyGeneration,
		"trace": trace,
	}
}

func printDecision(w io.Writer, d capability.Decision) {
	fmt.Fprintf(w, "%s  %s\n", strings.ToUpper(d.Mode.String()), d.Request)
	fmt.Fprintf(w, "  reason %s", d.Reason)
	if d.Layer != "" {
		fmt.Fprintf(w, "  layer %s", d.Layer)
	}
	if d.Rule != "" {
		fmt.Fprintf(w, "  rule %s", d.Rule)
	}
	fmt.Fprintf(w, "\n  manifest %s  policy generation %d\n", d.ManifestDigest, d.PolicyGeneration)
	if len(d.Trace) > 0 {
		fmt.Fprintln(w, "  trace:")
		for _, t := range d.Trace {
			fmt.Fprintf(w, "    %-10s %-18s %-28s %s\n", t.Layer, t.Mode, t.Reason, t.Rule)
		}
	}
}

// policyTestFile is the format of `norma policy test`.
type policyTestFile struct {
	LayerFiles `yaml:",inline"`
	Cases      []policyCase `yaml:"cases"`
}

type policyCase struct {
	Name   string `yaml:"name,omitempty"`
	Op     string `yaml:"op,omitempty"`
	Tool   string `yaml:"tool,omitempty"`
	Input  string `yaml:"input,omitempty"`
	Expect string `yaml:"expect"`
	Reason string `yaml:"reason,omitempty"`
	// Per-case layer overrides, relative to the test file.
	Grant           string `yaml:"grant,omitempty"`
	WorkspacePolicy string `yaml:"workspace_policy,omitempty"`
	RunPolicy       string `yaml:"run_policy,omitempty"`
}

func newPolicyTestCmd() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "test FILE",
		Short: "Run a file of policy cases; exit 1 on any mismatch",
		Long: "Run policy test cases so a team can keep its policies under test in CI.\n\n" +
			"File format (paths relative to the file):\n" +
			"  manifest: plugin/manifest.yaml\n  grant: grant.yaml\n  workspace_policy: policy.yaml\n  run_policy: run.yaml\n" +
			"  cases:\n    - {name: no env, op: 'fs.read docs/.env', expect: deny, reason: FILESYSTEM_READ_DENIED}\n" +
			"    - {op: 'net.request GET https://api.example.invalid/repos/a/issues', expect: allow}\n\n" +
			"Also warns about rules that can never match (shadowed by a deny, or outside another layer).",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			data, err := os.ReadFile(args[0])
			if err != nil {
				return exitWith(exitFailed, err)
			}
			var tf policyTestFile
			if err := yaml.UnmarshalWithOptions(data, &tf, yaml.Strict()); err != nil {
				return exitWith(exitFailed, fmt.Errorf("%s: %s", args[0], yaml.FormatError(err, false, true)))
			}
			dir := filepath.Dir(args[0])
			rel := func(p string) string {
				if p == "" || filepath.IsAbs(p) {
					return p
				}
				return filepath.Join(dir, p)
			}
			out := cmd.OutOrStdout()
			type result struct {
				Case   int    `json:"case"`
				Name   string `json:"name,omitempty"`
				Op     string `json:"op"`
				Expect string `json:"expect"`
				Got    string `json:"got"`
				Reason string `json:"reason"`
				Layer  string `json:"layer,omitempty"`
				Rule   string `json:"rule,omitempty"`
				Pass   bool   `json:"pass"`
			}
			var results []result
			var warnings []policy.Warning
			failed := 0
			base := LayerFiles{Manifest: rel(tf.Manifest), Grant: rel(tf.Grant), WorkspacePolicy: rel(tf.WorkspacePolicy), RunPolicy: rel(tf.RunPolicy), Workspace: rel(tf.Workspace)}
			if _, in, err := base.load(); err == nil {
				warnings = policy.Lint(in)
			}
			for i, pc := range tf.Cases {
				f := base
				if pc.Grant != "" {
					f.Grant = rel(pc.Grant)
				}
				if pc.WorkspacePolicy != "" {
					f.WorkspacePolicy = rel(pc.WorkspacePolicy)
				}
				if pc.RunPolicy != "" {
					f.RunPolicy = rel(pc.RunPolicy)
				}
				r := result{Case: i + 1, Name: pc.Name, Op: pc.Op, Expect: pc.Expect}
				if pc.Tool != "" {
					r.Op = "tool " + pc.Tool
				}
				s, in, err := f.load()
				if err != nil {
					printProblems(cmd.ErrOrStderr(), err)
					return exitWith(exitFailed, nil)
				}
				req, err := f.request(s, in.Manifest, pc.Op, pc.Tool, pc.Input)
				var d capability.Decision
				switch {
				case err != nil && capability.ReasonOf(err) != "":
					var ce *capability.Error
					errors.As(err, &ce)
					d = ce.Decision
				case err != nil:
					return exitWith(exitFailed, fmt.Errorf("case %d: %w", i+1, err))
				case req.Kind == capability.KindInvalid:
					d = capability.Decision{Mode: capability.Allow, Reason: capability.ReasonAllowed}
				default:
					d = s.Decide(cmd.Context(), req)
				}
				r.Got, r.Reason, r.Layer, r.Rule = d.Mode.String(), string(d.Reason), d.Layer, d.Rule
				r.Pass = r.Got == pc.Expect && (pc.Reason == "" || pc.Reason == r.Reason)
				if !r.Pass {
					failed++
				}
				results = append(results, r)
			}
			if asJSON {
				if warnings == nil {
					warnings = []policy.Warning{}
				}
				writeJSON(out, map[string]any{"passed": len(results) - failed, "failed": failed, "cases": results, "warnings": warnings})
			} else {
				for _, r := range results {
					label := r.Op
					if r.Name != "" {
						label = r.Name + ": " + r.Op
					}
					if r.Pass {
						fmt.Fprintf(out, "ok    %d %s\n", r.Case, label)
						continue
					}
					want := tf.Cases[r.Case-1]
					fmt.Fprintf(out, "FAIL  %d %s\n", r.Case, label)
					fmt.Fprintf(out, "  - expect: %s %s\n", want.Expect, want.Reason)
					fmt.Fprintf(out, "  + got:    %s %s (layer %s, rule %s)\n", r.Got, r.Reason, r.Layer, r.Rule)
				}
				for _, w := range warnings {
					fmt.Fprintf(out, "warning: %s\n", w)
				}
				fmt.Fprintf(out, "%d passed, %d failed\n", len(results)-failed, failed)
			}
			if failed > 0 {
				return exitWith(exitFailed, nil)
			}
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print results as JSON")
	return c
}
