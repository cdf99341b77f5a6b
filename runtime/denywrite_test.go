package runtime_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/policy"
	"github.com/norma-run/norma/runtime"
)

// TestDenyOneVerb: a deny on one verb denies that verb. Under
// deny: Edit(./protected/**), the file tools' writes and a Bash command's
// writes of protected/ are denied, its reads are not; under
// deny: Read(./secret.txt), the file is neither read nor written.
func TestDenyOneVerb(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"protected/a.txt", "secret.txt", "README.md"} {
		p := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rules := policy.Rules{Allow: []string{"Read", "Write", "Edit", "Bash(cat:*)", "Bash(echo:*)", "Bash(cp:*)"},
		Deny: []string{"Edit(./protected/**)", "Read(./secret.txt)"}}
	rt, err := runtime.Open(t.Context(), runtime.Options{Dir: dir, Home: t.TempDir(), Rules: rules, Audit: nopSink{}})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	fsl := rt.Layer().Permissions.Filesystem
	if len(fsl.DenyWrite) != 1 {
		t.Errorf("the workspace layer's deny_write = %q, want the Edit rule's glob", fsl.DenyWrite)
	}
	for _, tt := range []struct {
		tool string
		in   map[string]string
		want capability.Mode
	}{
		{"Read", map[string]string{"path": "protected/a.txt"}, capability.Allow},
		{"Grep", map[string]string{"pattern": "x", "path": "protected"}, capability.Allow},
		{"Glob", map[string]string{"pattern": "protected/*"}, capability.Allow},
		{"Bash", map[string]string{"command": "cat protected/a.txt"}, capability.Allow},
		{"Write", map[string]string{"path": "protected/a.txt", "content": "y"}, capability.Deny},
		{"Write", map[string]string{"path": "protected/new.txt", "content": "y"}, capability.Deny},
		{"Edit", map[string]string{"path": "protected/a.txt", "old_string": "x", "new_string": "y"}, capability.Deny},
		{"Bash", map[string]string{"command": "echo x > protected/a.txt"}, capability.Deny},
		{"Bash", map[string]string{"command": "echo x > PROTECTED/b.txt"}, capability.Deny},
		{"Write", map[string]string{"path": "README.md", "content": "y"}, capability.Allow},
		{"Read", map[string]string{"path": "secret.txt"}, capability.Deny},
		{"Write", map[string]string{"path": "secret.txt", "content": "y"}, capability.Deny},
	} {
		in, _ := json.Marshal(tt.in)
		e, err := rt.Explain(t.Context(), tt.tool, in)
		if err == nil && e.Decision.Mode == capability.Deny && tt.in["path"] != "secret.txt" && e.Decision.Reason != capability.ReasonRuleDenied {
			t.Errorf("%s %s: reason %s, want %s", tt.tool, in, e.Decision.Reason, capability.ReasonRuleDenied)
		}
		if err != nil || e.Decision.Mode != tt.want {
			t.Errorf("%s %s = %v %s %s, %v; want %v", tt.tool, in, e.Decision.Mode, e.Decision.Reason, e.Decision.Rule, err, tt.want)
		}
	}
}
