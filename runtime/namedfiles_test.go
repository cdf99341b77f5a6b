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

// TestNamedFilesRules: the file rules apply to the files a command names
// and to the REV:PATH operands of git show, cat-file and diff, deny and
// ask rules alike: under ask: Read(./notes/**) and allow: Bash(cat:*),
// cat notes/a.txt asks (behind an agent's hook, where the command runs
// outside the sandbox); under deny: Read(./config.yml) or the hidden
// floor (.env), git show HEAD:config.yml is denied even under
// allow: Bash(git show:*), and in a run's own Bash too, where the sandbox
// cannot stop git from reading its objects.
func TestNamedFilesRules(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"notes/a.txt", "README.md", ".env"} {
		p := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rules := policy.Rules{Allow: []string{"Bash(cat:*)", "Bash(git show:*)", "Bash(git cat-file:*)", "Bash(git diff:*)"},
		Ask: []string{"Read(./notes/**)"}, Deny: []string{"Read(./config.yml)"}}
	rt, err := runtime.Open(t.Context(), runtime.Options{Dir: dir, Home: t.TempDir(), Rules: rules, Audit: nopSink{}})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	for _, tt := range []struct {
		cmd                  string
		unconfined, confined capability.Mode
	}{
		{"cat notes/a.txt", capability.ApprovalRequired, capability.Allow},
		{"cat README.md notes/a.txt", capability.ApprovalRequired, capability.Allow},
		{"cat README.md", capability.Allow, capability.Allow},
		{"git show HEAD:config.yml", capability.Deny, capability.Deny},
		{"git show main:./CONFIG.yml", capability.Deny, capability.Deny},
		{"git -C . show HEAD:config.yml", capability.Deny, capability.Deny},
		{"git cat-file -p :0:config.yml", capability.Deny, capability.Deny},
		{"git diff HEAD:README.md HEAD:config.yml", capability.Deny, capability.Deny},
		{"git show HEAD:.env", capability.Deny, capability.Deny},
		{"cd notes && git show HEAD:config.yml", capability.Deny, capability.Deny},
		{"git show HEAD:notes/a.txt", capability.ApprovalRequired, capability.ApprovalRequired},
		{"git show HEAD~1", capability.Allow, capability.Allow},
		{"git show HEAD:README.md", capability.Allow, capability.Allow},
	} {
		in, _ := json.Marshal(map[string]string{"command": tt.cmd})
		e, err := rt.ExplainUnconfined(t.Context(), "Bash", in, envShell())
		if err != nil || e.Decision.Mode != tt.unconfined {
			t.Errorf("unconfined %q = %v %s %s, %v; want %v", tt.cmd, e.Decision.Mode, e.Decision.Reason, e.Decision.Rule, err, tt.unconfined)
		}
		e, err = rt.Explain(t.Context(), "Bash", in)
		if err != nil || e.Decision.Mode != tt.confined {
			t.Errorf("confined %q = %v %s %s, %v; want %v", tt.cmd, e.Decision.Mode, e.Decision.Reason, e.Decision.Rule, err, tt.confined)
		}
	}
}
