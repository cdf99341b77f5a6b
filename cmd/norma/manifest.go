package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/norma-run/norma/internal/termtext"
	"github.com/norma-run/norma/manifest"
	"github.com/spf13/cobra"
)

func newManifestCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "manifest",
		Short: "Lint, show and compare plugin manifests (schema_version 2)",
	}
	c.AddCommand(newManifestLintCmd(), newManifestShowCmd(), newManifestDiffCmd(), newManifestSchemaCmd())
	return c
}

// printProblems prints every problem of err as FILE:LINE:COL: field: message.
// The file's name, the field (a key of the file) and the message (which
// quotes the file's values) are escaped for the terminal (termtext).
func printProblems(w io.Writer, err error) {
	var probs manifest.Errors
	if errors.As(err, &probs) {
		for _, p := range probs {
			p.File, p.Field, p.Msg = termtext.Escape(p.File), termtext.Escape(p.Field), termtext.Escape(p.Msg)
			fmt.Fprintln(w, p.String())
		}
		return
	}
	fmt.Fprintln(w, termtext.EscapeText(err.Error()))
}

func newManifestLintCmd() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "lint FILE...",
		Short: "Validate manifests; exit 0 when all are valid, 1 otherwise",
		Long: "Validate manifests (or policy layer files, recognised by their `kind:` field).\n" +
			"Every problem is printed as FILE:LINE:COL: field.path: message.",
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			bad := false
			var all []manifest.Problem
			for _, f := range args {
				err := lintOne(f)
				if err == nil {
					if !asJSON {
						fmt.Fprintf(cmd.OutOrStdout(), "%s: ok\n", f)
					}
					continue
				}
				bad = true
				var probs manifest.Errors
				if errors.As(err, &probs) {
					all = append(all, probs...)
				} else {
					all = append(all, manifest.Problem{File: f, Msg: err.Error()})
				}
				if !asJSON {
					printProblems(cmd.ErrOrStderr(), err)
				}
			}
			if asJSON {
				if all == nil {
					all = []manifest.Problem{}
				}
				writeJSON(cmd.OutOrStdout(), map[string]any{"valid": !bad, "problems": all})
			}
			if bad {
				return exitWith(exitFailed, nil)
			}
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print {valid, problems} as JSON")
	return c
}

// lintOne validates a manifest or, when the file has a top-level kind:, a
// policy layer file.
func lintOne(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if isLayerFile(data) {
		_, err = manifest.ParseLayer(path, data)
		return err
	}
	_, err = manifest.Parse(path, data)
	return err
}

func isLayerFile(data []byte) bool {
	for _, line := range splitLines(data) {
		if len(line) > 5 && string(line[:5]) == "kind:" {
			return true
		}
	}
	return false
}

func splitLines(b []byte) [][]byte {
	var out [][]byte
	for len(b) > 0 {
		i := 0
		for i < len(b) && b[i] != '\n' {
			i++
		}
		out = append(out, b[:i])
		if i < len(b) {
			i++
		}
		b = b[i:]
	}
	return out
}

func newManifestShowCmd() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "show FILE",
		Short: "Show the install screen: what this plugin can do",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			m, err := manifest.ParseFile(args[0])
			if err != nil {
				printProblems(cmd.ErrOrStderr(), err)
				return exitWith(exitFailed, nil)
			}
			if asJSON {
				writeJSON(cmd.OutOrStdout(), map[string]any{"manifest": m, "digest": m.Digest(), "summary": manifest.Summary(m)})
				return nil
			}
			manifest.Show(cmd.OutOrStdout(), m)
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the normalized manifest and its digest as JSON")
	return c
}

func newManifestDiffCmd() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "diff OLD NEW",
		Short: "Show the permission delta; exit 0 when no re-consent is needed, 3 when it is",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			var ms [2]*manifest.Manifest
			for i, f := range args {
				m, err := manifest.ParseFile(f)
				if err != nil {
					printProblems(cmd.ErrOrStderr(), err)
					return exitWith(exitFailed, nil)
				}
				ms[i] = m
			}
			d := manifest.Diff(ms[0], ms[1])
			if asJSON {
				writeJSON(cmd.OutOrStdout(), map[string]any{
					"old": ms[0].Ref(), "new": ms[1].Ref(),
					"oldDigest": ms[0].Digest(), "newDigest": ms[1].Digest(),
					"delta": nonNilDelta(d), "reconsent": d.NeedsConsent(),
				})
			} else {
				printDelta(cmd.OutOrStdout(), ms[0], ms[1], d)
			}
			if d.NeedsConsent() {
				return exitWith(exitConsent, nil)
			}
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the delta as JSON")
	return c
}

func nonNilDelta(d manifest.Delta) manifest.Delta {
	for _, p := range []*[]manifest.Change{&d.Added, &d.Removed, &d.Widened, &d.Narrowed} {
		if *p == nil {
			*p = []manifest.Change{}
		}
	}
	return d
}

func printDelta(w io.Writer, o, n *manifest.Manifest, d manifest.Delta) {
	fmt.Fprintf(w, "%s → %s\n", o.Ref(), n.Ref())
	if d.Empty() {
		fmt.Fprintln(w, "No permission changes.")
		return
	}
	section := func(title string, cs []manifest.Change) {
		if len(cs) == 0 {
			return
		}
		fmt.Fprintf(w, "\n%s:\n", title)
		for _, c := range cs {
			fmt.Fprintf(w, "  %s\n", c)
		}
	}
	section("Added (needs consent)", d.Added)
	section("Widened (needs consent)", d.Widened)
	section("Narrowed", d.Narrowed)
	section("Removed", d.Removed)
	if d.NeedsConsent() {
		fmt.Fprintln(w, "\nRe-consent required.")
	} else {
		fmt.Fprintln(w, "\nNo re-consent needed: the new version can do less.")
	}
}

func newManifestSchemaCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "schema",
		Short: "Print the manifest JSON Schema (2020-12) for editors",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			_, err := cmd.OutOrStdout().Write(manifest.SchemaJSON())
			return err
		},
	}
}
