package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/norma-run/norma/door/agenthook"
	"github.com/norma-run/norma/internal/termtext"
	"github.com/norma-run/norma/runtime"
)

// The subagent, skill and command definitions of a workspace (Claude
// Code's .claude/agents, .claude/skills, .claude/commands; see
// runtime.Definitions) are accepted by `norma hooks trust` with the
// workspace's hook programs: both are workspace files whose content runs
// on the host (a definition's frontmatter hooks and MCP servers when it
// starts), accepted by digest, refused once changed. `norma hooks list`
// shows each with its state.

// pendingDefinitions are the definitions of workspace dir that need trust
// and are not trusted as they are now, each with the digest it holds:
// read before anything is trusted, so that one that cannot be read
// trusts nothing.
func pendingDefinitions(cmd *cobra.Command, dir string) ([]runtime.Definition, error) {
	store, err := definitionTrust(cmd)
	if err != nil {
		return nil, err
	}
	defs, err := runtime.Definitions(dir, agenthook.ClaudeSources())
	if err != nil {
		return nil, err
	}
	var out []runtime.Definition
	for _, d := range defs {
		if !d.NeedsTrust {
			continue
		}
		if _, err := runtime.DefinitionDigest(d); err != nil {
			return nil, err
		}
		if s, err := store.State(d); err != nil {
			return nil, err
		} else if s != runtime.DefinitionTrusted {
			out = append(out, d)
		}
	}
	return out, nil
}

// trustDefinitions records each of defs as accepted, printing it with the
// digest recorded, and returns how many.
func trustDefinitions(cmd *cobra.Command, defs []runtime.Definition) (int, error) {
	store, err := definitionTrust(cmd)
	if err != nil {
		return 0, err
	}
	for _, d := range defs {
		dg, err := store.Trust(d)
		if err != nil {
			return 0, err
		}
		fmt.Fprintf(cmd.OutOrStdout(), "trusted %s %s %s (%s)\n", d.Kind, termtext.Escape(d.Rel), termtext.Escape(dg), describeDefinition(d))
	}
	return len(defs), nil
}

// listDefinitions prints each definition of workspace dir that needs
// trust, and its state.
func listDefinitions(cmd *cobra.Command, dir string) error {
	store, err := definitionTrust(cmd)
	if err != nil {
		return exitWith(exitInternal, err)
	}
	defs, err := runtime.Definitions(dir, agenthook.ClaudeSources())
	if err != nil {
		return exitWith(exitFailed, err)
	}
	for _, d := range defs {
		if !d.NeedsTrust {
			continue
		}
		state := "trusted"
		switch s, err := store.State(d); {
		case err != nil:
			state = "REFUSED: " + err.Error()
		case s == runtime.DefinitionChanged:
			state = "CHANGED since trusted: Claude Code's calls that start it are denied until `norma hooks trust`"
		case s != runtime.DefinitionTrusted:
			state = "NOT TRUSTED: Claude Code's calls that start it are denied until `norma hooks trust`"
		}
		fmt.Fprintf(cmd.OutOrStdout(), "%s %s\n  %s\n  %s\n", d.Kind, termtext.Escape(d.Rel), describeDefinition(d), termtext.Escape(state))
	}
	return nil
}

func definitionTrust(cmd *cobra.Command) (*runtime.DefinitionTrust, error) {
	home, err := stateDir(cmd)
	if err != nil {
		return nil, err
	}
	return runtime.OpenDefinitionTrust(home)
}

// describeDefinition is what the user accepts of d: its names and what
// it runs on the host.
func describeDefinition(d runtime.Definition) string {
	names := "names " + strings.Join(d.Names, ", ")
	if d.AnyName {
		names = "any name (its frontmatter does not parse)"
	}
	runs := "names no hooks, MCP servers or !`command` lines"
	if len(d.Runs) > 0 {
		runs = "runs " + strings.Join(d.Runs, ", ")
	}
	if d.Isolation != "" {
		runs += ", isolation " + d.Isolation
	}
	return termtext.Escape(string(d.Scope) + "; " + names + "; " + runs)
}
