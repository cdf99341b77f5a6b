package settings

import (
	"strings"
	"testing"
)

// Managed settings may set the search variables (PATH, GIT_*, …), never a
// shell's or the loader's; no other scope may set either.
func TestEnvCodeVariablesByScope(t *testing.T) {
	for _, tc := range []struct {
		scope   Scope
		env     string
		refused bool
	}{
		{ScopeManaged, "PATH: /opt/corp/bin:/usr/bin", false},
		{ScopeManaged, "GIT_SSH_COMMAND: ssh -i /etc/corp/key", false},
		{ScopeManaged, "BASH_ENV: /etc/corp/rc", true},
		{ScopeManaged, "LD_PRELOAD: /x.so", true},
		{ScopeUser, "PATH: /usr/bin", true},
		{ScopeFlag, "NODE_OPTIONS: --require x", true},
		{ScopeWorkspace, "PATH: ./bin", true},
		{ScopeLocal, "PYTHONPATH: .", true},
		{ScopeWorkspace, "LANG: C.UTF-8", false},
		{ScopeWorkspace, "GITHUB_ORG: x", false},
	} {
		data := []byte("env:\n  " + tc.env + "\n")
		_, err := Parse("s.yaml", data, tc.scope, testWorkspace)
		if got := err != nil; got != tc.refused {
			t.Errorf("%v %q: error %v, want refused %v", tc.scope, tc.env, err, tc.refused)
			continue
		}
		if err != nil && !strings.HasPrefix(err.Error(), "s.yaml:2:3: env.") {
			t.Errorf("%v %q: %v, want the key's position and field", tc.scope, tc.env, err)
		}
	}
}

// Import leaves out the variables a workspace file may not set, with a
// note, and converts the rest.
func TestImportClaudeCodeEnv(t *testing.T) {
	out, notes, err := ImportClaude([]byte(`{"env": {"PATH": "./bin:/usr/bin", "LD_PRELOAD": "x.so", "NODE_ENV": "test"}}`), testWorkspace)
	if err != nil {
		t.Fatal(err)
	}
	if s := string(out); !strings.Contains(s, "NODE_ENV: test") || strings.Contains(s, "PATH") || strings.Contains(s, "LD_PRELOAD") {
		t.Errorf("converted:\n%s", s)
	}
	want := []string{"env.LD_PRELOAD: not converted (it changes which code runs)", "env.PATH: not converted (it changes which code runs)"}
	if strings.Join(notes, "\n") != strings.Join(want, "\n") {
		t.Errorf("notes %q, want %q", notes, want)
	}
}
