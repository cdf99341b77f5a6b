package main

import (
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/norma-run/norma/hook"
	"github.com/norma-run/norma/internal/termtext"
	"github.com/norma-run/norma/runtime"
	"github.com/norma-run/norma/settings"
	"github.com/norma-run/norma/store"
)

func newSettingsCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "settings",
		Short: "Start, show, lint and import the layered settings files (rules, hooks, network, env)",
		Long: `Settings files, lowest precedence first: the user's ($XDG_CONFIG_HOME/norma/settings.yaml),
the workspace's (.norma/settings.yaml, .norma/settings.local.yaml), --settings FILE, and
managed settings (/etc/norma/managed-settings.yaml, refused unless owned by root and not
writable by others). See the README's settings section.`,
	}
	c.AddCommand(newSettingsInitCmd(), newSettingsShowCmd(), newSettingsLintCmd(), newSettingsImportCmd()) // init: settings_init.go
	return c
}

type settingsFlags struct {
	workspace, file string
	asJSON          bool
}

func (f *settingsFlags) bind(c *cobra.Command) {
	c.Flags().StringVar(&f.workspace, "workspace", ".", "workspace directory")
	c.Flags().StringVar(&f.file, "settings", "", "one more settings file, as norma run's --settings")
}

func (f settingsFlags) load() (*settings.Settings, error) {
	dir, err := filepath.Abs(f.workspace)
	if err != nil {
		return nil, err
	}
	o := settingsFiles(f.file)
	o.Workspace = dir
	return settings.Load(o)
}

// loadOrReport loads the settings, printing every problem of a bad file
// and returning the exit error.
func (f settingsFlags) loadOrReport(cmd *cobra.Command) (*settings.Settings, error) {
	st, err := f.load()
	if err != nil {
		printProblems(cmd.ErrOrStderr(), err)
		return nil, exitWith(exitFailed, nil)
	}
	return st, nil
}

func newSettingsShowCmd() *cobra.Command {
	var f settingsFlags
	c := &cobra.Command{
		Use:   "show [--workspace DIR] [--settings FILE] [--json]",
		Short: "The effective settings, with the file, line and column each rule and hook came from",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := f.loadOrReport(cmd)
			if err != nil {
				return err
			}
			if f.asJSON {
				writeJSON(cmd.OutOrStdout(), st)
				return nil
			}
			printSettings(cmd.OutOrStdout(), st)
			return nil
		},
	}
	f.bind(c)
	c.Flags().BoolVar(&f.asJSON, "json", false, "print the effective settings as JSON")
	return c
}

func printSettings(w io.Writer, st *settings.Settings) {
	if len(st.Files) == 0 {
		fmt.Fprintln(w, "no settings files")
	}
	for _, s := range st.Files {
		fmt.Fprintf(w, "file  %-9s %s\n", s.Scope, termtext.Escape(s.File))
	}
	for _, r := range st.Rules {
		fmt.Fprintf(w, "%-5s %-40s %s\n", r.List, strconv.Quote(r.Text), r.Source)
	}
	if st.DefaultMode != "" {
		fmt.Fprintf(w, "mode  %-40s %s\n", termtext.Escape(st.DefaultMode), st.DefaultModeSource)
	}
	for _, h := range st.Hooks {
		trust := "needs `norma hooks trust`"
		if h.Trusted() {
			trust = "trusted (" + h.Source.Scope.String() + ")"
		}
		fmt.Fprintf(w, "hook  %s %q %s  %s, %s\n", termtext.Escape(string(h.Event)), h.Matcher, strconv.Quote(h.Command), h.Source, trust)
	}
	if n := st.Network; n != nil {
		for _, r := range n.Requests {
			fmt.Fprintf(w, "net   %s %s %s\n", escapeList(r.Methods), termtext.Escape(r.Origin), escapeList(r.Paths))
		}
		for _, p := range n.AllowPrivate {
			fmt.Fprintf(w, "net   allow_private %s\n", termtext.Escape(p))
		}
	}
	for _, e := range st.EnvList() {
		fmt.Fprintf(w, "env   %s\n", strconv.Quote(e))
	}
	printPluginTimeouts(w, st.Plugins)
	if st.Store != "" { // a URL may hold a password: never printed
		fmt.Fprintf(w, "store %s  %s\n", termtext.Escape(store.Redact(st.Store)), st.StoreSource)
	}
	for _, s := range st.Ignored {
		fmt.Fprintf(w, "ignored: %s\n", termtext.Escape(s))
	}
}

// printPluginTimeouts prints the plugin call timeouts the files set, and
// the managed caps.
func printPluginTimeouts(w io.Writer, p settings.PluginTimeouts) {
	if p.Call > 0 {
		fmt.Fprintf(w, "timeout plugins.callTimeout %s  %s\n", p.Call, p.CallSource)
	}
	for _, name := range slices.Sorted(maps.Keys(p.Tools)) {
		fmt.Fprintf(w, "timeout %s %s  %s\n", termtext.Escape(name), p.Tools[name], p.ToolSources[name])
	}
	if p.MaxCall > 0 {
		fmt.Fprintf(w, "timeout at most %s for every plugin call (managed)\n", p.MaxCall)
	}
	for _, name := range slices.Sorted(maps.Keys(p.MaxTools)) {
		fmt.Fprintf(w, "timeout at most %s for %s (managed)\n", p.MaxTools[name], termtext.Escape(name))
	}
}

// escapeList prints values a settings file holds as [a b], each escaped
// for the terminal.
func escapeList(vs []string) string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = termtext.Escape(v)
	}
	return "[" + strings.Join(out, " ") + "]"
}

func newSettingsLintCmd() *cobra.Command {
	var f settingsFlags
	c := &cobra.Command{
		Use:   "lint [FILE...]",
		Short: "Validate settings files (default: every file the workspace's runs read); every problem as FILE:LINE:COL: field: message",
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				if _, err := f.load(); err != nil {
					printProblems(cmd.ErrOrStderr(), err)
					return exitWith(exitFailed, nil)
				}
				fmt.Fprintln(cmd.OutOrStdout(), "settings: ok")
				return nil
			}
			dir, _ := filepath.Abs(f.workspace)
			bad := false
			for _, a := range args {
				if _, err := settings.ReadFile(a, settings.ScopeFlag, dir); err != nil {
					printProblems(cmd.ErrOrStderr(), err)
					bad = true
					continue
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s: ok\n", termtext.Escape(a))
			}
			if bad {
				return exitWith(exitFailed, nil)
			}
			return nil
		},
	}
	f.bind(c)
	return c
}

func newSettingsImportCmd() *cobra.Command {
	var out, ws string
	c := &cobra.Command{
		Use:   "import claude [PATH] [--out FILE]",
		Short: "Convert Claude Code's settings.json (permissions, hooks, env) and say what could not be converted",
		Long: "Convert Claude Code's settings (default .claude/settings.json) into a Norma settings file,\n" +
			"printed on stdout or written to --out (never over an existing file). Everything that\n" +
			"could not be converted is listed on stderr.",
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if args[0] != "claude" {
				return exitWith(exitUsage, fmt.Errorf("settings import: unknown source %q (claude)", args[0]))
			}
			path := filepath.Join(".claude", "settings.json")
			if len(args) == 2 {
				path = args[1]
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return exitWith(exitFailed, err)
			}
			dir, _ := filepath.Abs(ws)
			conv, notes, err := settings.ImportClaude(data, dir)
			if err != nil {
				return exitWith(exitFailed, err)
			}
			for _, n := range notes {
				fmt.Fprintf(cmd.ErrOrStderr(), "norma: %s: %s\n", termtext.Escape(path), termtext.Escape(n))
			}
			if out == "" {
				_, err = cmd.OutOrStdout().Write(conv)
				return err
			}
			fd, err := os.OpenFile(out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
			if err != nil {
				return exitWith(exitFailed, err)
			}
			if _, err := fd.Write(conv); err != nil {
				fd.Close()
				return exitWith(exitFailed, err)
			}
			if err := fd.Close(); err != nil {
				return exitWith(exitFailed, err)
			}
			// The user wrote a workspace settings file: what it holds is
			// what they accepted (see runtime.TrustedFiles).
			if rel, ok := runtime.TrustedFileOf(dir, out); ok {
				home, err := stateDir(cmd)
				if err == nil {
					err = runtime.AcceptContent(dir, home, rel, conv, "norma settings import")
				}
				if err != nil {
					return exitWith(exitInternal, fmt.Errorf("settings import: %s written, but not recorded as accepted: %w", out, err))
				}
			}
			return nil
		},
	}
	c.Flags().StringVar(&out, "out", "", "write the settings file here (refused if it exists)")
	c.Flags().StringVar(&ws, "workspace", ".", "workspace directory ($CLAUDE_PROJECT_DIR in hook commands)")
	return c
}

func newHooksCmd() *cobra.Command {
	c := &cobra.Command{Use: "hooks", Short: "List the settings' command hooks and trust the workspace's (and its subagent, skill and command definitions)"}
	c.AddCommand(newHooksListCmd(), newHooksTrustCmd())
	return c
}

func hookTrust(cmd *cobra.Command) (*hook.TrustStore, error) {
	home, err := stateDir(cmd)
	if err != nil {
		return nil, err
	}
	return hook.OpenTrustStore(filepath.Join(home, runtime.HookTrustFile))
}

func newHooksListCmd() *cobra.Command {
	var f settingsFlags
	c := &cobra.Command{
		Use:   "list [--workspace DIR]",
		Short: "Every command hook of the settings and whether it runs",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := f.loadOrReport(cmd)
			if err != nil {
				return err
			}
			ts, err := hookTrust(cmd)
			if err != nil {
				return exitWith(exitInternal, err)
			}
			for _, h := range st.Hooks {
				state := "trusted (" + h.Source.Scope.String() + ")"
				dir, _ := filepath.Abs(f.workspace)
				if needs, err := runtime.HookNeedsTrust(dir, h); err != nil {
					state = "REFUSED: " + err.Error()
				} else if needs {
					state = "trusted"
					if data, err := os.ReadFile(h.Argv[0]); err != nil || ts.Check(h.Argv[0], h.Argv[1:], data) != nil {
						state = "NOT TRUSTED: runs of this workspace deny what it gates until `norma hooks trust`"
					}
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s %q %s\n  %s\n  %s\n", termtext.Escape(string(h.Event)), h.Matcher, strconv.Quote(h.Command), h.Source, state)
			}
			ws, _ := filepath.Abs(f.workspace)
			return listDefinitions(cmd, ws) // hooks_definitions.go
		},
	}
	f.bind(c)
	return c
}

func newHooksTrustCmd() *cobra.Command {
	var f settingsFlags
	c := &cobra.Command{
		Use:   "trust [--workspace DIR]",
		Short: "Record the current content of every workspace hook program and definition, so that they run",
		Long: "Trust records the sha256 of each hook program the workspace's settings name. A program\n" +
			"that changes afterwards is untrusted again, and the calls its hook gates are denied.\n" +
			"It records as well each subagent, skill and command definition of the project\n" +
			"(.claude/agents, .claude/skills, .claude/commands), whose frontmatter runs on the host\n" +
			"when Claude Code starts it: a changed one is refused again (DEFINITION_UNTRUSTED).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := f.loadOrReport(cmd)
			if err != nil {
				return err
			}
			ts, err := hookTrust(cmd)
			if err != nil {
				return exitWith(exitInternal, err)
			}
			// Every program is checked before any is trusted: all or nothing.
			dir, _ := filepath.Abs(f.workspace)
			for _, h := range st.Hooks {
				if _, err := runtime.HookNeedsTrust(dir, h); err != nil {
					return exitWith(exitFailed, fmt.Errorf("%s: nothing trusted: %w", h.Source, err))
				}
			}
			defs, err := pendingDefinitions(cmd, dir) // hooks_definitions.go
			if err != nil {
				return exitWith(exitFailed, fmt.Errorf("nothing trusted: %w", err))
			}
			n := 0
			for _, h := range st.Hooks {
				if needs, _ := runtime.HookNeedsTrust(dir, h); !needs {
					continue
				}
				d, err := ts.Trust(h.Argv[0], h.Argv[1:]...)
				if err != nil {
					return exitWith(exitFailed, err)
				}
				n++
				fmt.Fprintf(cmd.OutOrStdout(), "trusted %s %s (%s)\n", strconv.Quote(h.Argv[0]), termtext.Escape(d), h.Source)
			}
			m, err := trustDefinitions(cmd, defs)
			if err != nil {
				return exitWith(exitFailed, err)
			}
			if n+m == 0 {
				fmt.Fprintln(cmd.OutOrStdout(), "no workspace hooks to trust")
			}
			return nil
		},
	}
	f.bind(c)
	return c
}
