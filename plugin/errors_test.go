package plugin

import (
	"errors"
	"io/fs"
	"strings"
	"testing"

	"github.com/norma-run/norma/capability"
)

func TestNewErr(t *testing.T) {
	const canary = "CANARY-9c2e"
	cause := &fs.PathError{Op: "open", Path: canary, Err: fs.ErrPermission}
	tests := []struct {
		name          string
		op, path, msg string
		cause         error
		want          string
	}{
		{"op path msg", "install", "/tmp/p.tar.gz", "cannot read package", nil,
			"PLUGIN_STATE (layer plugin): install /tmp/p.tar.gz: cannot read package"},
		{"no path", "pack", "", "cannot write archive", cause,
			"PLUGIN_STATE (layer plugin): pack: cannot write archive"},
		{"no msg", "init", "/home/n", "", cause,
			"PLUGIN_STATE (layer plugin): init /home/n"},
		{"path only", "", "bin/x", "absolute path", nil,
			"PLUGIN_STATE (layer plugin): bin/x: absolute path"},
		// A hostile entry name cannot forge a second line or a code.
		{"hostile entry name", "unpack", "a\nPLUGIN_STATE: ok", "duplicate entry", nil,
			`PLUGIN_STATE (layer plugin): unpack "a\nPLUGIN_STATE: ok": duplicate entry`},
		{"spaces quoted", "unpack", "a b", "", nil, `PLUGIN_STATE (layer plugin): unpack "a b"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := newErr(capability.ReasonPluginState, tt.op, tt.path, tt.msg, tt.cause)
			if got := err.Error(); got != tt.want {
				t.Errorf("newErr(%q, %q, %q).Error() = %q, want %q", tt.op, tt.path, tt.msg, got, tt.want)
			}
			if strings.Contains(err.Error(), canary) {
				t.Errorf("Error() = %q holds the cause", err)
			}
			if got := capability.ReasonOf(err); got != capability.ReasonPluginState {
				t.Errorf("ReasonOf = %q, want PLUGIN_STATE", got)
			}
			if tt.cause != nil && !errors.Is(err, fs.ErrPermission) {
				t.Errorf("errors.Is(err, fs.ErrPermission) = false, want true through the cause")
			}
		})
	}
}
