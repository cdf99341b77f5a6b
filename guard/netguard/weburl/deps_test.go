package weburl

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDeps keeps weburl a leaf, and keeps manifest and policy, which
// normalize origins and URLs through it, free of HTTP and dialing: a rule
// that is only checked in review drifts, and an import of net/http in the
// decision path is the first step toward a policy that does I/O.
func TestDeps(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool in PATH")
	}
	const mod = "github.com/norma-run/norma/"
	tests := []struct {
		pkg string
		bad map[string]string // package => why it must not be imported
	}{
		{mod + "guard/netguard/weburl", map[string]string{
			"net":                  "a leaf does not dial",
			"net/http":             "a leaf does not speak HTTP",
			"crypto/tls":           "a leaf does not speak TLS",
			"os/exec":              "a leaf does not run processes",
			mod + "guard/netguard": "the guard depends on weburl, not the other way",
			mod + "manifest":       "weburl is below manifest",
			mod + "policy":         "weburl is below policy",
		}},
		{mod + "manifest", map[string]string{
			"net/http":             "manifest parses files; it never fetches",
			mod + "guard/netguard": "manifest needs normalization only (weburl), not dialing",
			mod + "broker":         "manifest is below the broker",
		}},
		{mod + "policy", map[string]string{
			"net/http":             "policy is a pure decision (no I/O)",
			"os/exec":              "policy is a pure decision (no I/O)",
			mod + "guard/netguard": "policy needs normalization only (weburl), not dialing",
			mod + "broker":         "policy is below the broker",
		}},
	}
	for _, tt := range tests {
		t.Run(strings.TrimPrefix(tt.pkg, mod), func(t *testing.T) {
			out, err := exec.CommandContext(t.Context(), goTool, "list", "-deps", tt.pkg).Output()
			if err != nil {
				t.Fatalf("go list -deps %s: %v", tt.pkg, err)
			}
			for _, dep := range strings.Fields(string(out)) {
				if why, ok := tt.bad[dep]; ok {
					t.Errorf("%s imports %s: %s", tt.pkg, dep, why)
				}
			}
		})
	}
}
