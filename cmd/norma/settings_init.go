package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/norma-run/norma/internal/atomicfile"
	"github.com/norma-run/norma/internal/termtext"
	"github.com/norma-run/norma/runtime"
	"github.com/norma-run/norma/settings"
)

func newSettingsInitCmd() *cobra.Command {
	var ws string
	var force bool
	c := &cobra.Command{
		Use:   "init [--workspace DIR] [--force]",
		Short: "Write a commented starter .norma/settings.yaml: read-only git work runs without asking, the rest asks",
		Long: "Write the workspace's settings file (.norma/settings.yaml) from a commented starter that\n" +
			"allows what a read-only git workflow needs without asking (Read, Grep, Glob, LS; git status,\n" +
			"diff, log, show and blame; ls, cat, head, tail, wc, pwd), asks before every file change,\n" +
			"denies reading private keys (*.pem, *.key) and asks for everything else. An existing file is\n" +
			"kept (exit 1) unless --force replaces it. The file is written atomically and recorded as\n" +
			"accepted (you wrote it: see norma policy trust); its path is printed.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, err := filepath.Abs(ws)
			if err != nil {
				return exitWith(exitFailed, err)
			}
			if fi, err := os.Stat(dir); err != nil {
				return exitWith(exitFailed, fmt.Errorf("settings init: %w", err))
			} else if !fi.IsDir() {
				return exitWith(exitFailed, fmt.Errorf("settings init: workspace %s is not a directory", dir))
			}
			path := filepath.Join(dir, settings.WorkspaceFile)
			if _, err := os.Lstat(path); err == nil && !force {
				return exitWith(exitFailed, fmt.Errorf("settings init: %s exists; nothing written (--force replaces it)", path))
			} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
				return exitWith(exitFailed, fmt.Errorf("settings init: %w", err))
			}
			data := settings.Starter()
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				return exitWith(exitFailed, fmt.Errorf("settings init: %w", err))
			}
			if err := atomicfile.Write(path, data, 0o644); err != nil {
				return exitWith(exitFailed, fmt.Errorf("settings init: %w", err))
			}
			// The user wrote the file: what it holds is what they accepted
			// (runtime.TrustedFiles), as for `norma settings import --out`.
			home, err := stateDir(cmd)
			if err == nil {
				err = runtime.AcceptContent(dir, home, settings.WorkspaceFile, data, "norma settings init")
			}
			if err != nil {
				return exitWith(exitInternal, fmt.Errorf("settings init: %s written, but not recorded as accepted (norma policy trust accepts it): %w", path, err))
			}
			fmt.Fprintln(cmd.OutOrStdout(), termtext.Escape(path))
			return nil
		},
	}
	c.Flags().StringVar(&ws, "workspace", ".", "workspace directory")
	c.Flags().BoolVar(&force, "force", false, "replace an existing .norma/settings.yaml")
	return c
}
