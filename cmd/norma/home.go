package main

import (
	"errors"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
)

// stateDir returns the state directory: --home, else $NORMA_HOME, else
// $XDG_STATE_HOME/norma, else ~/.local/state/norma. It is created with
// mode 0700 when missing.
func stateDir(cmd *cobra.Command) (string, error) {
	dir, _ := cmd.Flags().GetString("home")
	if dir == "" {
		dir = os.Getenv("NORMA_HOME")
	}
	if dir == "" {
		if x := os.Getenv("XDG_STATE_HOME"); x != "" {
			dir = filepath.Join(x, "norma")
		} else {
			h, err := os.UserHomeDir()
			if err != nil {
				return "", errors.New("no state directory: pass --home or set NORMA_HOME")
			}
			dir = filepath.Join(h, ".local", "state", "norma")
		}
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	return dir, nil
}
