package shell

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/norma-run/norma/capability"
)

// TestProcessCapabilityFromEnv: Bash gets its process capability from the
// Env of the call, which the gate hands out. With it, a command runs in the
// sandbox and its write lands in the workspace; without it (an Env without
// Exec, or a policy that denies spawning) Bash, a background task and
// PtyOpen are refused and nothing runs.
func TestProcessCapabilityFromEnv(t *testing.T) {
	requireSandbox(t)
	t.Run("present", func(t *testing.T) {
		f := newFixture(t, fixtureOpts{})
		f.mustExec(t, "Bash", map[string]any{"command": "echo through-the-gate > src/cap.txt"})
		if got := f.mustExec(t, "Bash", map[string]any{"command": "cat src/cap.txt"}); !strings.Contains(got, "through-the-gate") {
			t.Fatalf("Bash(cat src/cap.txt) = %q, want the line written by the previous call", got)
		}
		if b, err := os.ReadFile(filepath.Join(f.ws, "src/cap.txt")); err != nil || string(b) != "through-the-gate\n" {
			t.Fatalf("src/cap.txt on the host = %q, %v", b, err)
		}
	})
	spawnDenied := strings.Replace(testManifest, "spawn: allow", "spawn: deny", 1)
	marker := "echo ran > marker"
	absent := []struct {
		name string
		o    fixtureOpts
		want capability.Reason
	}{
		{"env without Exec", fixtureOpts{noExec: true}, capability.ReasonCapabilityMissing},
		{"policy denies process.spawn", fixtureOpts{manifest: spawnDenied}, capability.ReasonProcessSpawnDenied},
	}
	for _, tt := range absent {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, tt.o)
			calls := []struct {
				tool  string
				input map[string]any
			}{
				{"Bash", map[string]any{"command": marker}},
				{"Bash", map[string]any{"command": marker, "run_in_background": true}},
				{"PtyOpen", map[string]any{}},
			}
			for _, c := range calls {
				r := f.exec(t, c.tool, c.input)
				if r.Reason != tt.want || !r.IsError {
					t.Errorf("Execute(%s %v) = %s %q, want %s", c.tool, c.input, r.Reason, r.Content, tt.want)
				}
			}
			if len(f.m.Tasks()) != 0 || len(f.m.ptys) != 0 {
				t.Errorf("tasks %v, %d PTYs after refusals; want none", f.m.Tasks(), len(f.m.ptys))
			}
			if _, err := os.Lstat(filepath.Join(f.ws, "marker")); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("a refused call ran: marker exists (stat err %v)", err)
			}
		})
	}
}

// TestRunnerDenyRule: the gate checks what the capability is asked to
// start, not only what the call declared. A deny rule on the shell binary
// never matches the declared command line (echo, a redirection) but does
// match the argv the tool hands the runner (/bin/bash -c …), so the
// command, foreground or background, never starts.
func TestRunnerDenyRule(t *testing.T) {
	requireSandbox(t)
	rules := defaultRules
	rules.Deny = append([]string{"Bash(bash:*)", "Bash(sh:*)"}, rules.Deny...)
	f := newFixture(t, fixtureOpts{rules: rules})
	for _, bg := range []bool{false, true} {
		r := f.exec(t, "Bash", map[string]any{"command": "echo ran > marker", "run_in_background": bg})
		if r.Reason != capability.ReasonRuleDenied || r.Decision.Mode != capability.Allow {
			t.Errorf("Execute(Bash, background %v) = %s (decision %s %s) %q; want the gate to allow the call and the runner to refuse it with RULE_DENIED",
				bg, r.Reason, r.Decision.Mode, r.Decision.Reason, r.Content)
		}
		if !strings.Contains(r.Content, "Bash(bash:*)") && !strings.Contains(r.Content, "Bash(sh:*)") {
			t.Errorf("Execute(Bash) = %q, want the rule named", r.Content)
		}
	}
	if _, err := os.Lstat(filepath.Join(f.ws, "marker")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a command the rules deny ran: marker exists (stat err %v)", err)
	}
	if len(f.m.Tasks()) != 0 {
		t.Fatalf("Tasks() = %v, want none", f.m.Tasks())
	}
}
