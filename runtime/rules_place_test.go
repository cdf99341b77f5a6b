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

// TestRulesPlacedByDefault: a rule written with an absolute path (//abs)
// or under the home directory (~/) denies in a runtime whose caller
// placed nothing (norma run, an embedder): the runtime places it at the
// workspace, symbolic links resolved, and this user's home.
func TestRulesPlacedByDefault(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	ws, _ := filepath.EvalSymlinks(filepath.Join(home))
	dir := filepath.Join(ws, "proj")
	for _, f := range []string{"proj/secret.txt", "proj/keys/id.txt", "proj/ok.txt"} {
		p := filepath.Join(ws, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rules := policy.Rules{Allow: []string{"Read"}, Deny: []string{"Read(/" + dir + "/secret.txt)", "Read(~/proj/keys/**)"}}
	rt, err := runtime.Open(t.Context(), runtime.Options{Dir: dir, Home: t.TempDir(), Rules: rules, Audit: nopSink{}})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	for path, want := range map[string]capability.Mode{"secret.txt": capability.Deny, "keys/id.txt": capability.Deny, "ok.txt": capability.Allow} {
		in, _ := json.Marshal(map[string]string{"path": path})
		e, err := rt.Explain(t.Context(), "Read", in)
		if err != nil || e.Decision.Mode != want {
			t.Errorf("Read %s = %v %s, %v; want %v", path, e.Decision.Mode, e.Decision.Reason, err, want)
		}
	}
}
