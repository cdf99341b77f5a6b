package main

import (
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
	"github.com/norma-run/norma/internal/termtext"
	"github.com/norma-run/norma/policy"
	"github.com/norma-run/norma/runtime"
	"github.com/spf13/cobra"
)

func newPolicyCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "policy",
		Short: "Explain and test capability decisions",
	}
	c.AddCommand(newPolicyExplainCmd(), newPolicyTestCmd(), newPolicyTrustCmd())
	return c
}

// newPolicyTrustCmd shows how the workspace's policy and settings files
// differ from the versions accepted last, and records what they hold now
// as accepted: a run applies a widening change only after this (or a yes
// at its terminal prompt).
func newPolicyTrustCmd() *cobra.Command {
	var dir string
	var yes bool
	c := &cobra.Command{
		Use:   "trust [--workspace DIR] [--yes]",
		Short: "Show how the workspace's policy and settings files changed since accepted, and accept them",
		Long: `Show the delta of each workspace file that decides what runs (` + strings.Join(runtime.TrustedFiles, ", ") + `)
against the version accepted last (at first sight, against the built-in
defaults), then record what the files hold now as accepted, in the state
directory. A run applies a change that only narrows at once; one that widens
is held, and the run keeps the accepted version, until it is accepted here or
at the run's terminal prompt. Without --yes, asks on the terminal; exit 3 when
not accepted.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			home, err := stateDir(cmd)
			if err != nil {
				return exitWith(exitInternal, err)
			}
			abs, err := filepath.Abs(dir)
			if err != nil {
				return exitWith(exitUsage, err)
			}
			changes, err := runtime.Changes(abs, home)
			if err != nil {
				printProblems(cmd.ErrOrStderr(), err)
				return exitWith(exitFailed, nil)
			}
			w := cmd.OutOrStdout()
			if len(changes) == 0 {
				fmt.Fprintln(w, "nothing to accept: the workspace's policy and settings files are as accepted")
				return nil
			}
			widens := false
			for _, c := range changes {
				fmt.Fprintf(w, "%s:%s\n", c.File, map[bool]string{true: " widens", false: " only narrows"}[c.Held])
				for _, l := range runtime.DeltaLines(c.Delta) {
					fmt.Fprintln(w, "  "+l)
				}
				widens = widens || c.Held
			}
			if widens && !yes {
				fmt.Fprint(w, "Accept these files as they are now for this workspace? [y/N] ")
				var answer string
				fmt.Fscanln(cmd.InOrStdin(), &answer)
				if answer != "y" && answer != "Y" && answer != "yes" {
					return exitWith(exitConsent, errors.New("not accepted; runs keep the accepted versions"))
				}
			}
			if err := runtime.Trust(abs, home, "norma policy trust", changes); err != nil {
				printProblems(cmd.ErrOrStderr(), err)
				return exitWith(exitFailed, nil)
			}
			fmt.Fprintln(w, "accepted: runs in "+termtext.Escape(abs)+" apply these files as they are now")
			return nil
		},
	}
	c.Flags().StringVar(&dir, "workspace", ".", "workspace directory")
	c.Flags().BoolVar(&yes, "yes", false, "accept without asking")
	return c
}

// LayerFiles names the files a policy set is compiled from.
type LayerFiles struct {
	Manifest        string `yaml:"manifest"`
	Grant           string `yaml:"grant,omitempty"`
	WorkspacePolicy string `yaml:"workspace_policy,omitempty"`
	RunPolicy       string `yaml:"run_policy,omitempty"`
	Workspace       string `yaml:"workspace,omitempty"`
	Settings        string `yaml:"settings,omitempty"`
}

// lintInputs are the layers of f, for policy.Lint.
func (f LayerFiles) lintInputs() (policy.Inputs, error) {
	d, err := f.declaration()
	if err != nil {
		return policy.Inputs{}, err
	}
	ws, run, err := f.layers()
	return policy.Inputs{Manifest: d.Manifest, Grant: d.Grant, Workspace: ws, Run: run}, err
}

// request parses op into a normalized request, its paths resolved in the
// workspace directory (symlinks followed) as the gate resolves them.
func (f LayerFiles) request(op string) (capability.Request, error) {
	var resolve func(string) (string, error)
	if f.Workspace != "" {
		dir, err := filepath.Abs(f.Workspace)
		if err != nil {
			return capability.Request{}, err
		}
		ws, err := fsguard.New(dir, capability.AllowAll{})
		if err != nil {
			return capability.Request{}, err
		}
		defer ws.Close()
		resolve = ws.Resolve
	}
	return policy.ParseOp(op, resolve)
}

func explainJSON(d capability.Decision) map[string]any {
	trace := d.Trace
	if trace == nil {
		trace = []capability.LayerResult{}
	}
	return map[string]any{
		"decision": d.Mode.String(), "reason": d.Reason, "layer": d.Layer, "rule": d.Rule,
		"request": d.Request, "manifest_digest": d.ManifestDigest, "policy_generation": d.PolicyGeneration,
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

// decideCase decides one case of a policy test file the way explain does:
// a tool call through the run's gate, an op against the capability layers.
func (f LayerFiles) decideCase(cmd *cobra.Command, pc policyCase) (capability.Decision, error) {
	if pc.Tool != "" {
		e, err := explainTool(cmd, f, gate.ModeDefault, pc.Tool, pc.Input)
		return e.Decision, err
	}
	return explainOp(cmd, f, pc.Op)
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
			base := LayerFiles{Manifest: rel(tf.Manifest), Grant: rel(tf.Grant), WorkspacePolicy: rel(tf.WorkspacePolicy), RunPolicy: rel(tf.RunPolicy), Workspace: rel(tf.Workspace), Settings: rel(tf.Settings)}
			if in, err := base.lintInputs(); err == nil {
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
				d, err := f.decideCase(cmd, pc)
				if err != nil {
					printProblems(cmd.ErrOrStderr(), fmt.Errorf("case %d: %w", i+1, err))
					return exitWith(exitFailed, nil)
				}
				r.Got, r.Reason, r.Layer, r.Rule = d.Mode.String(), string(d.Reason), string(d.Layer), d.Rule
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
