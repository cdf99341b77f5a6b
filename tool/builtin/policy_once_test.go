package builtin_test

import (
	"testing"

	"github.com/norma-run/norma/manifest"
	"github.com/norma-run/norma/policy"
	"github.com/norma-run/norma/tool/builtin"
	"github.com/norma-run/norma/tool/builtin/shell"
)

// TestBuildCompilesPolicyOnce: the built-in policy is compiled exactly
// once, with the manifest Build returns, and that value is the one Build
// hands back for the gate, the file guard, the HTTP client and the shell.
func TestBuildCompilesPolicyOnce(t *testing.T) {
	calls := 0
	var compiled *policy.Set
	var seen *manifest.Manifest
	b, err := builtin.Build(builtin.Config{
		Shell: &shell.Config{SessionID: "once"},
		Policy: func(m *manifest.Manifest) (*policy.Set, error) {
			calls++
			seen = m
			s, err := policy.Compile(policy.Inputs{Manifest: m, Host: policy.Host{Sandbox: true}})
			compiled = s
			return s, err
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Shell.Close()
	if calls != 1 {
		t.Errorf("Build compiled the policy %d times, want 1", calls)
	}
	if b.Policy != compiled || seen != b.Manifest {
		t.Error("Build.Policy is not the value compiled from Build.Manifest")
	}
}
