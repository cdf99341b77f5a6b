package capability_test

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"testing"

	"github.com/norma-run/norma/capability"
)

// canary stands for a secret value or file content that reached a cause: it
// must never appear in the public message.
const canary = "CANARY-s3cr3t-7f1d"

func TestError(t *testing.T) {
	canaryErr := fmt.Errorf("decode %s: %w", canary, fs.ErrNotExist)
	tests := []struct {
		name   string
		err    *capability.Error
		want   string              // Error()
		is     []capability.Reason // codes errors.Is matches
		isNot  []capability.Reason // codes it must not match
		cause  error               // errors.Is(err, cause) through Unwrap
		unwrap error               // errors.Unwrap(err)
	}{
		{
			name:  "code only",
			err:   &capability.Error{Decision: capability.Decision{Reason: capability.ReasonPathEscape}},
			want:  "PATH_ESCAPE",
			is:    []capability.Reason{capability.ReasonPathEscape},
			isNot: []capability.Reason{capability.ReasonPolicyError, ""},
		},
		{
			name: "layer and detail",
			err: &capability.Error{Decision: capability.Decision{Reason: capability.ReasonSandboxExecFailed, Layer: capability.LayerSandbox},
				Detail: "exec /bin/x"},
			want:  "SANDBOX_EXEC_FAILED (layer sandbox): exec /bin/x",
			is:    []capability.Reason{capability.ReasonSandboxExecFailed},
			isNot: []capability.Reason{capability.ReasonSandboxSetupFailed},
		},
		{
			name: "layer, rule and detail",
			err: &capability.Error{Decision: capability.Decision{Reason: capability.ReasonFilesystemDenyRule, Layer: capability.LayerWorkspace,
				Rule: "filesystem.deny[0]"}, Detail: "fs.read workspace://.env"},
			want: "FILESYSTEM_DENY_RULE (layer workspace, rule filesystem.deny[0]): fs.read workspace://.env",
			is:   []capability.Reason{capability.ReasonFilesystemDenyRule},
		},
		{
			name: "cause with a canary stays internal",
			err: &capability.Error{Decision: capability.Decision{Reason: capability.ReasonStateCorrupt, Layer: capability.LayerAgent},
				Detail: "run r1", Err: canaryErr},
			want:   "STATE_CORRUPT (layer agent): run r1",
			is:     []capability.Reason{capability.ReasonStateCorrupt},
			isNot:  []capability.Reason{capability.ReasonStateUnavailable},
			cause:  fs.ErrNotExist,
			unwrap: canaryErr,
		},
		{
			name: "coded cause: Is is shallow",
			err: &capability.Error{Decision: capability.Decision{Reason: capability.ReasonProviderFailed, Layer: capability.LayerAgent},
				Detail: "scripted", Err: &capability.Error{Decision: capability.Decision{Reason: capability.ReasonTimeout}, Detail: canary}},
			want: "PROVIDER_FAILED (layer agent): scripted",
			// The cause's code still matches through errors.Is's own
			// walk of the chain; Is itself compares only the outer code.
			is: []capability.Reason{capability.ReasonProviderFailed, capability.ReasonTimeout},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.err.Error(); got != tt.want {
				t.Errorf("Error() = %q, want %q", got, tt.want)
			}
			if strings.Contains(tt.err.Error(), canary) || strings.Contains(tt.err.Detail, canary) {
				t.Errorf("Error() = %q, Detail = %q: the cause leaked", tt.err.Error(), tt.err.Detail)
			}
			// Wrapped with %w, the text is still the public one.
			if w := fmt.Errorf("tool: %w", tt.err); strings.Contains(w.Error(), canary) {
				t.Errorf("wrapped Error() = %q: the cause leaked", w)
			}
			for _, r := range tt.is {
				target := &capability.Error{Decision: capability.Decision{Reason: r}}
				if !errors.Is(tt.err, target) {
					t.Errorf("errors.Is(err, %s) = false, want true", r)
				}
				if !errors.Is(fmt.Errorf("wrapped: %w", tt.err), target) {
					t.Errorf("errors.Is(wrapped err, %s) = false, want true", r)
				}
			}
			for _, r := range tt.isNot {
				if errors.Is(tt.err, &capability.Error{Decision: capability.Decision{Reason: r}}) {
					t.Errorf("errors.Is(err, %q) = true, want false", r)
				}
			}
			if got := capability.ReasonOf(fmt.Errorf("wrapped: %w", tt.err)); got != tt.err.Decision.Reason {
				t.Errorf("ReasonOf(wrapped) = %q, want %q", got, tt.err.Decision.Reason)
			}
			if got := errors.Unwrap(tt.err); got != tt.err.Err {
				t.Errorf("Unwrap() = %v, want %v", got, tt.err.Err)
			}
			if tt.unwrap != nil && errors.Unwrap(tt.err) != tt.unwrap {
				t.Errorf("Unwrap() = %v, want the cause %v", errors.Unwrap(tt.err), tt.unwrap)
			}
			if tt.cause != nil && !errors.Is(tt.err, tt.cause) {
				t.Errorf("errors.Is(err, %v) = false, want true (through Unwrap)", tt.cause)
			}
		})
	}
}

// TestErrorIsShallow: Is compares the codes of the two values only, and is
// not fooled by a non-*Error target or a different code.
func TestErrorIsShallow(t *testing.T) {
	inner := &capability.Error{Decision: capability.Decision{Reason: capability.ReasonTimeout}}
	outer := &capability.Error{Decision: capability.Decision{Reason: capability.ReasonProviderFailed}, Err: inner}
	if outer.Is(&capability.Error{Decision: capability.Decision{Reason: capability.ReasonTimeout}}) {
		t.Error("outer.Is(TIMEOUT) = true, want false (Is must not unwrap)")
	}
	if outer.Is(errors.New("PROVIDER_FAILED")) {
		t.Error("outer.Is(errors.New(code)) = true, want false")
	}
	if capability.ReasonOf(errors.New("PROVIDER_FAILED")) != "" {
		t.Error(`ReasonOf(plain error) != ""`)
	}
	if capability.ReasonOf(nil) != "" {
		t.Error(`ReasonOf(nil) != ""`)
	}
}
