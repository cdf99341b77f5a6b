package main

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/norma-run/norma/door/usage"
	"github.com/norma-run/norma/internal/termtext"
	"github.com/norma-run/norma/manifest"
	"github.com/norma-run/norma/plugin"
	"github.com/norma-run/norma/plugin/host"
)

// newPluginUsageCmd is `norma plugin usage ID`: from the audit log, what
// the installed manifest declares that no event of the last N days used,
// and the narrower manifest. It reads only; it never changes the grant.
func newPluginUsageCmd() *cobra.Command {
	var days int
	var asJSON bool
	c := &cobra.Command{
		Use:   "usage ID [--days N] [--json]",
		Short: "Show which declared permissions a plugin has not used, with a narrower manifest (changes nothing)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if days < 1 {
				return exitWith(exitUsage, fmt.Errorf("--days must be at least 1"))
			}
			home, err := stateDir(cmd)
			if err != nil {
				return exitWith(exitInternal, err)
			}
			// No audit sink: this command records nothing.
			m, err := plugin.NewManager(plugin.Options{Home: home})
			if err != nil {
				return pluginErr(err)
			}
			st, err := m.Info(args[0])
			if err != nil {
				return pluginErr(err)
			}
			mf, err := manifest.ParseFile(filepath.Join(m.Dir(st.ID, st.Active), plugin.ManifestName))
			if err != nil {
				return exitWith(exitInternal, err)
			}
			db, err := openStore(cmd.Context(), cmd, home)
			if err != nil {
				return err
			}
			defer db.Close()
			server := st.ServerName()
			r, err := usage.Analyze(cmd.Context(), db, usage.Input{
				Manifest: mf, InstalledAt: st.Versions[st.Active].InstalledAt, Days: days, Now: time.Now(),
				ToolName: func(n string) string { return host.ToolName(server, n) },
			})
			if err != nil {
				return exitWith(exitInternal, err)
			}
			if asJSON {
				notUsed := []string{}
				for _, e := range r.NotUsed() {
					notUsed = append(notUsed, e.ID)
				}
				return writeJSON(cmd.OutOrStdout(), struct {
					*usage.Report
					NotUsed []string `json:"not_used"`
				}{r, notUsed})
			}
			printUsage(cmd.OutOrStdout(), r)
			return nil
		},
	}
	c.Flags().IntVar(&days, "days", 30, "the window, in days back from now")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

// printUsage writes the report; everything from the manifest is escaped.
func printUsage(w io.Writer, r *usage.Report) {
	fmt.Fprintf(w, "%s %s (manifest %s)\n", termtext.Escape(r.Plugin), termtext.Escape(r.Version), r.ManifestDigest)
	window := fmt.Sprintf("the last %d days", r.Days)
	switch {
	case r.HistoryFrom.IsZero():
		fmt.Fprintf(w, "history: the audit log is empty: nothing can be called unused\n")
		window = "the history"
	case !r.Complete:
		fmt.Fprintf(w, "history: only since %s (%s), less than the %d days asked: what is listed was not used in that time, which is too short to call it unused\n",
			r.HistoryFrom.Format(time.RFC3339), time.Since(r.HistoryFrom).Round(time.Second), r.Days)
		window = "the history so far"
	default:
		fmt.Fprintf(w, "history: covers %s (since %s)\n", window, r.Since.Format(time.RFC3339))
	}
	fmt.Fprintf(w, "events of this manifest: %d\n", r.Events)
	var used, notUsed, unseen []usage.Entry
	for _, e := range r.Entries {
		switch {
		case !e.Observable:
			unseen = append(unseen, e)
		case e.Uses == 0:
			notUsed = append(notUsed, e)
		default:
			used = append(used, e)
		}
	}
	section := func(title string, es []usage.Entry, line func(usage.Entry) string) {
		if len(es) == 0 {
			return
		}
		fmt.Fprintf(w, "\n%s:\n", title)
		for _, e := range es {
			fmt.Fprintf(w, "  %-16s %-38s %s%s\n", e.Kind, e.ID, termtext.Escape(e.Item), line(e))
		}
	}
	none := func(usage.Entry) string { return "" }
	section("not used in "+window, notUsed, func(e usage.Entry) string {
		if e.Kept != "" {
			return "  (kept: " + e.Kept + ")"
		}
		return ""
	})
	section("used", used, func(e usage.Entry) string {
		return fmt.Sprintf("  uses: %d, last %s", e.Uses, e.Last.Format(time.RFC3339))
	})
	section("not observable (the sandbox enforces it in the kernel; no event shows a use), kept", unseen, none)
	if len(notUsed) == 0 {
		fmt.Fprintf(w, "\nnothing to narrow: every observable permission was used\n")
		return
	}
	fmt.Fprintf(w, "\nsuggested manifest (nothing was changed; publish it as a new version to narrow the plugin):\n%s", indent(termtext.EscapeText(r.Suggested)))
	fmt.Fprintf(w, "\ndiff:\n%s", indent(termtext.EscapeText(r.Diff)))
}

func indent(s string) string {
	if s == "" {
		return ""
	}
	return "  " + strings.ReplaceAll(strings.TrimSuffix(s, "\n"), "\n", "\n  ") + "\n"
}
