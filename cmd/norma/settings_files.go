package main

import (
	"os"
	"path/filepath"

	"github.com/norma-run/norma/settings"
)

// settingsFiles names the settings files of a command besides the
// workspace's own: the user's ($XDG_CONFIG_HOME/norma, else
// ~/.config/norma), flag (--settings) and the managed file
// ($NORMA_MANAGED_SETTINGS, else /etc/norma/managed-settings.yaml; it is
// refused unless owned by root and not writable by others).
func settingsFiles(flag string) settings.Options {
	o := settings.Options{Flag: flag, Managed: settings.ManagedPath}
	if p := os.Getenv("NORMA_MANAGED_SETTINGS"); p != "" {
		o.Managed = p
	}
	if d := os.Getenv("XDG_CONFIG_HOME"); d != "" {
		o.UserDir = filepath.Join(d, "norma")
	} else if h, err := os.UserHomeDir(); err == nil {
		o.UserDir = filepath.Join(h, ".config", "norma")
	}
	return o
}
