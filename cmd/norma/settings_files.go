package main

import (
	"os"
	"path/filepath"

	"github.com/norma-run/norma/settings"
)

// settingsFiles names the settings files of a command besides the
// workspace's own: the user's ($XDG_CONFIG_HOME/norma, else
// ~/.config/norma), flag (--settings) and the managed file
// (/etc/norma/managed-settings.yaml, refused unless owned by root and not
// writable by others). No variable moves the managed file: the
// administrator's settings cannot be switched off from a user's shell.
func settingsFiles(flag string) settings.Options {
	o := settings.Options{Flag: flag, Managed: settings.ManagedPath}
	if d := os.Getenv("XDG_CONFIG_HOME"); d != "" {
		o.UserDir = filepath.Join(d, "norma")
	} else if h, err := os.UserHomeDir(); err == nil {
		o.UserDir = filepath.Join(h, ".config", "norma")
	}
	return o
}
