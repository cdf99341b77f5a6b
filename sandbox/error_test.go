package sandbox_test

import (
	"errors"
	"io/fs"
	"strings"
	"testing"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/sandbox"
)

func TestNewError(t *testing.T) {
	cause := &fs.PathError{Op: "lstat", Path: "/x", Err: fs.ErrNotExist}
	tests := []struct {
		name          string
		op, path, msg string
		want          string
	}{
		{"op and path", "exec", "/bin/x", "", "SANDBOX_EXEC_FAILED (layer sandbox): exec /bin/x"},
		{"op and msg", "namespaces", "", "cannot create user/mount/pid/net namespaces",
			"SANDBOX_EXEC_FAILED (layer sandbox): namespaces: cannot create user/mount/pid/net namespaces"},
		{"hostile path", "grant", "/tmp/a\nSANDBOX_OK", "", `SANDBOX_EXEC_FAILED (layer sandbox): grant "/tmp/a\nSANDBOX_OK"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := sandbox.NewError(capability.ReasonSandboxExecFailed, tt.op, tt.path, tt.msg, cause)
			if got := err.Error(); got != tt.want {
				t.Errorf("NewError(%q, %q, %q).Error() = %q, want %q", tt.op, tt.path, tt.msg, got, tt.want)
			}
			if !errors.Is(err, fs.ErrNotExist) || capability.ReasonOf(err) != capability.ReasonSandboxExecFailed {
				t.Errorf("NewError: cause or code lost: %v", err)
			}
		})
	}
}

// TestSpecEnvNotShown: a malformed environment entry may be a value passed
// by mistake; the message names its index, never its text.
func TestSpecEnvNotShown(t *testing.T) {
	const canary = "CANARY-env-51a0"
	_, err := sandbox.Run(t.Context(), sandbox.Spec{Argv: []string{"true"}, Env: []string{"A=1", canary}})
	if capability.ReasonOf(err) != capability.ReasonSandboxSpecInvalid {
		t.Fatalf("Run(bad env) = %v, want SANDBOX_SPEC_INVALID", err)
	}
	if strings.Contains(err.Error(), canary) {
		t.Errorf("Run(bad env) error %q shows the entry", err)
	}
	if !strings.Contains(err.Error(), "malformed entry 1") {
		t.Errorf("Run(bad env) error %q does not name the entry's index", err)
	}
}
