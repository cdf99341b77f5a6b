package main

import (
	"fmt"
	"io/fs"
	"testing"

	"github.com/norma-run/norma/capability"
)

func TestErrText(t *testing.T) {
	errno := &fs.PathError{Op: "open", Path: "/home/n/plugins", Err: fs.ErrPermission}
	inner := &capability.Error{Decision: capability.Decision{Reason: capability.ReasonSandboxExecFailed, Layer: capability.LayerSandbox},
		Detail: "exec x", Err: errno}
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"nil", nil, ""},
		{"plain", fmt.Errorf("flag: bad"), "flag: bad"},
		{"no cause", &capability.Error{Decision: capability.Decision{Reason: capability.ReasonPluginState, Layer: capability.LayerPlugin}, Detail: "init /h"},
			"PLUGIN_STATE (layer plugin): init /h"},
		{"cause", &capability.Error{Decision: capability.Decision{Reason: capability.ReasonPluginState, Layer: capability.LayerPlugin}, Detail: "init /h", Err: errno},
			"PLUGIN_STATE (layer plugin): init /h: open /home/n/plugins: permission denied"},
		{"wrapped, coded cause", fmt.Errorf("run: %w", &capability.Error{Decision: capability.Decision{Reason: capability.ReasonProviderFailed}, Detail: "p", Err: inner}),
			"run: PROVIDER_FAILED: p: SANDBOX_EXEC_FAILED (layer sandbox): exec x: open /home/n/plugins: permission denied"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := errText(tt.err); got != tt.want {
				t.Errorf("errText(%v) = %q, want %q", tt.err, got, tt.want)
			}
		})
	}
}
