package shell

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/norma-run/norma/audit"
	"github.com/norma-run/norma/policy"
	"github.com/norma-run/norma/secret"
)

// splitSecret is a vault value the attacks print in two halves, with a
// pause between them, so that each half lands in another read.
const splitSecret = "SPLIT-s3cr3t-1b2c3d4e5f60"

func splitFixture(t *testing.T) *fixture {
	t.Helper()
	red := secret.NewRedactor()
	if err := red.AddValue("api_token", secret.NewValue([]byte(splitSecret))); err != nil {
		t.Fatal(err)
	}
	rules := policy.Rules{Allow: append([]string{"Bash(head:*)", "Bash(tail:*)"}, defaultRules.Allow...), Deny: defaultRules.Deny}
	f := newFixture(t, fixtureOpts{redactor: red, rules: rules})
	if err := os.WriteFile(filepath.Join(f.ws, "src", "split.txt"), []byte(splitSecret), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

// noHalf fails when s holds the secret or either half of it.
func noHalf(t *testing.T, where, s string) {
	t.Helper()
	for _, c := range []string{splitSecret, splitSecret[:12], splitSecret[12:]} {
		if strings.Contains(s, c) {
			t.Errorf("%s holds %q: %q", where, c, s)
		}
	}
}

const splitCommand = "head -c 12 src/split.txt; sleep 2; tail -c +13 src/split.txt; echo; echo END"

// TestTaskOutputSplitSecret: a background task prints a secret in two
// halves two seconds apart and the model reads its output twice: neither
// read shows a half; the second shows the mask, and the audit log has the
// output_redacted event of the call that started the task.
func TestTaskOutputSplitSecret(t *testing.T) {
	requireSandbox(t)
	f := splitFixture(t)
	f.mustExec(t, "Bash", map[string]any{"command": splitCommand, "run_in_background": true})
	f.mustExec(t, "Bash", map[string]any{"command": "sleep 1"})
	first := f.mustExec(t, "TaskOutput", map[string]any{"task_id": "t1"})
	second := f.mustExec(t, "TaskOutput", map[string]any{"task_id": "t1", "block": true, "timeout_ms": 20000})
	// Until the task has exited: its stream is then flushed and reported.
	for i := 0; i < 10 && !strings.Contains(second, "exit code"); i++ {
		second += f.mustExec(t, "TaskOutput", map[string]any{"task_id": "t1", "block": true, "timeout_ms": 20000})
	}
	noHalf(t, "the first read", first)
	noHalf(t, "the second read", second)
	if !strings.Contains(first+second, "[REDACTED:api_token]") {
		t.Errorf("reads = %q, %q; want the mask", first, second)
	}
	if !redactedEvent(f, "api_token") {
		t.Errorf("no output_redacted event for api_token: %v", f.sink.Events())
	}
}

// TestPTYSplitSecret: the same through a terminal, read with PtyRead.
func TestPTYSplitSecret(t *testing.T) {
	requireSandbox(t)
	f := splitFixture(t)
	id := openPTY(t, f)
	f.mustExec(t, "PtySend", map[string]any{"pty_id": id, "text": splitCommand})
	first := f.mustExec(t, "PtyRead", map[string]any{"pty_id": id, "timeout_ms": 1200})
	second := f.mustExec(t, "PtyRead", map[string]any{"pty_id": id, "timeout_ms": 20000, "until": "END"})
	noHalf(t, "the first read", first)
	noHalf(t, "the second read", second)
	if !strings.Contains(first+second, "[REDACTED:api_token]") {
		t.Errorf("reads = %q, %q; want the mask", first, second)
	}
	f.mustExec(t, "PtyClose", map[string]any{"pty_id": id})
	f.m.Close() // the terminal's stream is flushed and reported when it ends
	if !redactedEvent(f, "api_token") {
		t.Errorf("no output_redacted event for api_token: %v", f.sink.Events())
	}
}

func redactedEvent(f *fixture, name string) bool {
	for _, e := range f.sink.Events() {
		if e.Type == audit.TypeOutputRedacted && e.Detail["redacted."+name] != "" {
			return true
		}
	}
	return false
}
