package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/norma-run/norma/audit"
	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/gate"
	"github.com/norma-run/norma/internal/termtext"
	"github.com/norma-run/norma/manifest"
	"github.com/norma-run/norma/plugin/host"
	"github.com/norma-run/norma/policy"
	"github.com/norma-run/norma/runtime"
)

type explainFlags struct {
	LayerFiles
	mode, op, tool, input string
	asJSON                bool
}

func newPolicyExplainCmd() *cobra.Command {
	var f explainFlags
	c := &cobra.Command{
		Use:   "explain [--workspace DIR] [--mode MODE] (--tool NAME --input JSON | --op 'KIND ARGS...') [--manifest FILE [--grant FILE]] [--workspace-policy FILE] [--run-policy FILE]",
		Short: "Decide one call or request as a run would, and show the reason and the per-layer trace; exit 0 when decided",
		Long: `Decide one tool call the way "norma run" decides it in the same workspace and
mode, and explain it. --tool goes through the run's own gate: lookup, schema
validation, mode and permission rules, every capability layer; it stops
before approval and never runs the call. The answer is allow, deny or
approval_required (a deny with MODE_DENIED in dontAsk), with its reason code,
layer, rule and trace.

--tool names a built-in tool (Read, Bash, WebFetch, ...), an installed
plugin's tool (mcp__PLUGIN__TOOL), or with --manifest a tool of that manifest
(its own name), decided with --grant as the user's grant; a manifest's tool
has no server to give its input schema, so any JSON object passes the schema
step.

--op decides one capability request against the capability layers only (the
policy a call's requests are decided by); without --manifest, the built-in
tools' policy in the workspace.

Ops: fs.read PATH | fs.write PATH | net.request METHOD URL | secret.use NAME ORIGIN |
     process.spawn ARGV... | external.write TOOL TARGET

Exit 0 when a decision was made (allow, deny or approval_required), 1 on bad input.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if (f.op == "") == (f.tool == "") {
				return exitWith(exitUsage, errors.New("give exactly one of --op or --tool"))
			}
			mode, err := gate.ParseMode(f.mode)
			if err != nil || mode == gate.ModeBypass {
				return exitWith(exitUsage, errors.New("--mode must be default, acceptEdits, plan or dontAsk"))
			}
			var d capability.Decision
			if f.tool != "" {
				e, err := explainTool(cmd, f.LayerFiles, mode, f.tool, f.input)
				if err != nil {
					printProblems(cmd.ErrOrStderr(), err)
					return exitWith(exitFailed, nil)
				}
				d = e.Decision
			} else if d, err = explainOp(cmd, f.LayerFiles, f.op); err != nil {
				printProblems(cmd.ErrOrStderr(), err)
				return exitWith(exitFailed, nil)
			}
			if f.asJSON {
				writeJSON(cmd.OutOrStdout(), explainJSON(d))
			} else {
				printDecision(cmd.OutOrStdout(), d)
			}
			return nil
		},
	}
	fl := c.Flags()
	fl.StringVar(&f.Manifest, "manifest", "", "a plugin manifest (not installed) whose tool or request to decide")
	fl.StringVar(&f.Grant, "grant", "", "user grant layer file (with --manifest)")
	fl.StringVar(&f.WorkspacePolicy, "workspace-policy", "", "workspace policy file (default DIR/"+runtime.PolicyFile+")")
	fl.StringVar(&f.RunPolicy, "run-policy", "", "run policy file")
	fl.StringVar(&f.Settings, "settings", "", "one more settings file, as norma run's --settings")
	fl.StringVar(&f.Workspace, "workspace", ".", "workspace directory, as norma run's: paths are resolved in it (symlinks followed)")
	fl.StringVar(&f.mode, "mode", "default", "permission mode: default | acceptEdits | plan | dontAsk (default: the settings' defaultMode)")
	fl.StringVar(&f.op, "op", "", "the request, e.g. 'fs.write workspace://.agent-output/r.md'")
	fl.StringVar(&f.tool, "tool", "", "a tool name: built-in, mcp__PLUGIN__TOOL, or a tool of --manifest")
	fl.StringVar(&f.input, "input", "", "the tool input as JSON (with --tool; default {})")
	fl.BoolVar(&f.asJSON, "json", false, "print the decision as one JSON object")
	return c
}

// layers parses the workspace and run policy files of f; the workspace
// policy defaults to the workspace's own file.
func (f LayerFiles) layers() (ws, run *manifest.Layer, err error) {
	if f.WorkspacePolicy != "" {
		if ws, err = manifest.ParseLayerFile(f.WorkspacePolicy); err != nil {
			return nil, nil, err
		}
	} else if f.Workspace != "" {
		if ws, err = runtime.LoadPolicy(f.Workspace); err != nil {
			return nil, nil, err
		}
	}
	if f.RunPolicy != "" {
		if run, err = manifest.ParseLayerFile(f.RunPolicy); err != nil {
			return nil, nil, err
		}
	}
	return ws, run, nil
}

// openRuntime opens the workspace runtime `norma run` would use, with the
// layers of f: with f.Manifest, that plugin declared as if installed with
// f.Grant; else, with installed, the installed plugins as they were last
// served (explaining starts nothing, opens no vault, writes no state).
func openRuntime(cmd *cobra.Command, f LayerFiles, mode gate.Mode, installed bool) (*runtime.Runtime, error) {
	ws, run, err := f.layers()
	if err != nil {
		return nil, err
	}
	o := runtime.Options{Dir: f.Workspace, Mode: mode, Audit: discardSink{}, Policy: ws, RunPolicy: run,
		ModeGiven: cmd.Flags().Lookup("mode") != nil && cmd.Flags().Changed("mode"), Settings: settingsFiles(f.Settings),
		Warn: func(err error) { fmt.Fprintf(cmd.ErrOrStderr(), "norma: %s\n", termtext.EscapeText(err.Error())) }}
	// The workspace's own policy and settings files count as far as the
	// user accepted them, recorded in the state directory: as in a run.
	if f.WorkspacePolicy == "" {
		o.Policy = nil
	}
	if o.Home, err = stateDir(cmd); err != nil {
		return nil, err
	}
	switch {
	case f.Manifest != "":
		d, err := f.declaration()
		if err != nil {
			return nil, err
		}
		o.Declared = []runtime.Declaration{d}
	case installed:
		o.Describe = true
	}
	return runtime.OpenExplain(cmd.Context(), o)
}

// declaration is the plugin of --manifest with --grant.
func (f LayerFiles) declaration() (runtime.Declaration, error) {
	var d runtime.Declaration
	var err error
	if d.Manifest, err = manifest.ParseFile(f.Manifest); err != nil {
		return d, err
	}
	if f.Grant != "" {
		d.Grant, err = manifest.ParseLayerFile(f.Grant)
	}
	return d, err
}

// explainTool decides one call through the gate of the workspace's runtime.
func explainTool(cmd *cobra.Command, f LayerFiles, mode gate.Mode, name, input string) (gate.Explanation, error) {
	rt, err := openRuntime(cmd, f, mode, true)
	if err != nil {
		return gate.Explanation{}, err
	}
	defer rt.Close()
	if d := rt.Declared(); d != nil && !strings.HasPrefix(name, "mcp__") {
		name = host.ToolName(d.ServerName(), name)
	}
	if input == "" {
		input = "{}"
	}
	return rt.Explain(cmd.Context(), name, json.RawMessage(input))
}

// explainOp decides one capability request against the policy the runtime
// decides with: --manifest's plugin's, else the built-in tools'.
func explainOp(cmd *cobra.Command, f LayerFiles, op string) (capability.Decision, error) {
	rt, err := openRuntime(cmd, f, gate.ModeDefault, false)
	if err != nil {
		return capability.Decision{}, err
	}
	defer rt.Close()
	s := rt.Policy()
	if d := rt.Declared(); d != nil {
		s = d.Policy()
	}
	return decideOp(cmd.Context(), s, f.Workspace, op)
}

// decideOp parses op, resolving paths in the workspace dir, and explains it
// against s. A request refused while parsing (an escape, a bad URL) is a
// decision too.
func decideOp(ctx context.Context, s *policy.Set, dir, op string) (capability.Decision, error) {
	req, err := LayerFiles{Workspace: dir}.request(op)
	if err == nil {
		return s.Explain(ctx, req), nil
	}
	ce, ok := errors.AsType[*capability.Error](err)
	if !ok {
		return capability.Decision{}, fmt.Errorf("--op: %w", err)
	}
	d := ce.Decision
	d.ManifestDigest = s.ManifestDigest()
	if d.Request == "" {
		d.Request = strings.TrimSpace(op)
	}
	d.Trace = []capability.LayerResult{{Layer: d.Layer, Mode: d.Mode, Reason: d.Reason, Rule: d.Rule}}
	return d, nil
}

// discardSink is explain's audit sink: explaining decides nothing that
// happens, so nothing is recorded.
type discardSink struct{}

func (discardSink) Record(context.Context, audit.Event) error { return nil }
