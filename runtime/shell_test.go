package runtime_test

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/policy"
	"github.com/norma-run/norma/runtime"
	"github.com/norma-run/norma/sandbox/sandboxtest"
)

// TestBashThroughTheRun: the run's Bash gets its process capability from
// the runtime (built from the one built-in policy) through the gate: a
// command writes a file in the workspace and the next one reads it back;
// a workspace policy that denies spawning stops both, and nothing runs.
func TestBashThroughTheRun(t *testing.T) {
	sandboxtest.Require(t)
	const script = `turns:
  - tool_calls:
      - {id: b1, name: Bash, input: {command: "echo from-the-sandbox > made.txt"}}
  - tool_calls:
      - {id: b2, name: Bash, input: {command: "cat made.txt"}}
  - tool_calls:
      - {id: b3, name: Bash, input: {command: "echo task > task.txt", run_in_background: true}}
  - text: done
`
	rules := policy.Rules{Allow: []string{"Bash(echo:*)", "Bash(cat:*)", "Write(workspace://**)"}}
	tests := []struct {
		name   string
		policy string
		want   capability.Reason
	}{
		{"spawning allowed", "", capability.ReasonAllowed},
		{"workspace policy denies spawning", "schema_version: 2\nkind: workspace\npermissions:\n  process:\n    spawn: deny\n", capability.ReasonProcessSpawnDenied},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := newWorkspace(t, tt.policy)
			rt, err := runtime.Open(t.Context(), runtime.Options{Dir: dir, Rules: rules, Audit: nopSink{}})
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Close()
			s := scriptedSession(t, rt, script)
			out, err := s.Run(t.Context(), "write and read")
			if err != nil {
				t.Fatal(err)
			}
			if len(out.Calls) != 3 {
				t.Fatalf("calls = %+v, want 3", out.Calls)
			}
			for _, c := range out.Calls {
				if c.Reason != string(tt.want) {
					t.Errorf("call %s = %s, want %s", c.ID, c.Reason, tt.want)
				}
			}
			b, err := os.ReadFile(filepath.Join(dir, "made.txt"))
			if tt.want != capability.ReasonAllowed {
				if !errors.Is(err, os.ErrNotExist) {
					t.Fatalf("made.txt exists after a refused Bash call (%q, %v)", b, err)
				}
				return
			}
			if err != nil || strings.TrimSpace(string(b)) != "from-the-sandbox" {
				t.Fatalf("made.txt = %q, %v", b, err)
			}
			// The model was shown what cat read back inside the sandbox.
			sum := sha256.Sum256([]byte("from-the-sandbox\n[exit code 0]"))
			if got, want := out.Calls[1].OutputDigest, "sha256:"+hex.EncodeToString(sum[:]); got != want {
				t.Errorf("cat made.txt output digest = %s, want %s (the file's line and exit code 0)", got, want)
			}
		})
	}
}
