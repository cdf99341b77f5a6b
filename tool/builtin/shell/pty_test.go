package shell

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/norma-run/norma/capability"
)

// openPTY opens a shell through the gate and waits for its first prompt.
func openPTY(t *testing.T, f *fixture) string {
	t.Helper()
	out := f.mustExec(t, "PtyOpen", map[string]any{"cols": 100, "rows": 30})
	if !strings.HasPrefix(out, "opened p") {
		t.Fatalf("PtyOpen = %q", out)
	}
	id := strings.TrimSuffix(strings.Fields(out)[1], ":")
	f.mustExec(t, "PtyRead", map[string]any{"pty_id": id, "timeout_ms": 10000, "until": `\$ $`})
	return id
}

// sendRead sends a line and reads until pattern.
func sendRead(t *testing.T, f *fixture, id, line, until string) string {
	t.Helper()
	f.mustExec(t, "PtySend", map[string]any{"pty_id": id, "text": line})
	got := f.mustExec(t, "PtyRead", map[string]any{"pty_id": id, "timeout_ms": 10000, "until": until})
	if strings.Contains(got, "timed out waiting") {
		t.Fatalf("PtySend(%q) then PtyRead(until %q) = %q", line, until, got)
	}
	return got
}

func TestPTYRoundTrip(t *testing.T) {
	requireSandbox(t)
	f := newFixture(t, fixtureOpts{})
	id := openPTY(t, f)
	got := sendRead(t, f, id, "echo hello-$((6*7))", "hello-42")
	if !strings.Contains(got, "hello-42") {
		t.Fatalf("echo round trip = %q", got)
	}
	// The PTY sees the same sandbox as Bash.
	got = sendRead(t, f, id, "cat .env; cat src/visible.txt", visible)
	noCanary(t, "PTY cat .env", got)
	// Resize is seen by the terminal.
	f.mustExec(t, "PtyResize", map[string]any{"pty_id": id, "cols": 91, "rows": 17})
	if got := sendRead(t, f, id, "stty size", `17 91`); !strings.Contains(got, "17 91") {
		t.Fatalf("stty size after resize = %q", got)
	}
	// ^C interrupts the foreground job; the shell survives.
	f.mustExec(t, "PtySend", map[string]any{"pty_id": id, "text": "sleep 300"})
	f.mustExec(t, "PtySend", map[string]any{"pty_id": id, "control": "c"})
	if got := sendRead(t, f, id, "echo alive-after-intr", "alive-after-intr\n"); !strings.Contains(got, "alive-after-intr") {
		t.Fatalf("after ^C = %q", got)
	}
	// Close kills the tree.
	pid := f.m.ptys[id].proc.Pid()
	f.mustExec(t, "PtyClose", map[string]any{"pty_id": id})
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("kill(%d, 0) after PtyClose = %v, want ESRCH", pid, err)
	}
	if r := f.exec(t, "PtySend", map[string]any{"pty_id": id, "text": "echo hi"}); r.Reason != capability.ReasonPtyUnknown {
		t.Fatalf("PtySend after close = %s, want PTY_UNKNOWN", r.Reason)
	}
}

// TestPTYDeniedInput: a line the rules do not allow, or input the terminal
// would rewrite, never reaches the shell; the side-effect file is never
// created, and the shell still works afterwards.
func TestPTYDeniedInput(t *testing.T) {
	requireSandbox(t)
	f := newFixture(t, fixtureOpts{})
	id := openPTY(t, f)
	pwned := filepath.Join(f.ws, "pwned")
	tests := []struct {
		name string
		text string
		want capability.Reason
	}{
		{"unlisted command", "touch pwned", capability.ReasonApprovalRequired},
		{"unlisted command on a later line", "echo ok\ntouch pwned", capability.ReasonApprovalRequired},
		{"deny rule", "rm -f pwned; touch pwned", capability.ReasonRuleDenied},
		{"carriage return splits the line for the tty", "echo hi\rtouch pwned", capability.ReasonSchemaInvalid},
		{"backspace rewrites a word", "echo x; touchX\x7f pwned", capability.ReasonSchemaInvalid},
		{"escape sequence", "echo \x1b[A", capability.ReasonSchemaInvalid},
		// The gate reports a declaration the tool refuses with its code.
		{"line continuation", "echo a; tou\\", capability.ReasonPtyInputRefused},
		{"unterminated quote", "echo 'x", capability.ReasonApprovalRequired},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := f.exec(t, "PtySend", map[string]any{"pty_id": id, "text": tt.text})
			if r.Reason != tt.want {
				t.Fatalf("PtySend(%q) = %s %q, want %s", tt.text, r.Reason, r.Content, tt.want)
			}
		})
	}
	// The shell is alive, read every byte it got: no trace of the lines.
	got := sendRead(t, f, id, "echo still-here", "still-here\n")
	if strings.Contains(got, "touch") || strings.Contains(got, "pwned") {
		t.Fatalf("refused input reached the shell: %q", got)
	}
	if _, err := os.Lstat(pwned); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a refused line created %s (stat err %v)", pwned, err)
	}
	// Refused even when a caller skips the schema.
	for _, in := range []string{"echo hi\rtouch pwned", "a\x15b", "echo \\\nx", "tou\\"} {
		if err := checkText(in); capability.ReasonOf(err) != capability.ReasonPtyInputRefused {
			t.Fatalf("checkText(%q) = %v, want PTY_INPUT_REFUSED", in, err)
		}
	}
	for _, in := range []string{"echo ok", "printf 'a\tb'\necho \\\\", ""} {
		if err := checkText(in); err != nil {
			t.Fatalf("checkText(%q) = %v, want nil", in, err)
		}
	}
}

func TestPTYsDieWithClose(t *testing.T) {
	requireSandbox(t)
	f := newFixture(t, fixtureOpts{rules: compoundRules})
	var pids []int
	for range 2 {
		id := openPTY(t, f)
		f.mustExec(t, "PtySend", map[string]any{"pty_id": id, "text": "sleep 300 &"})
		pids = append(pids, f.m.ptys[id].proc.Pid())
	}
	if err := f.m.Close(); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Fatalf("kill(%d, 0) after Manager.Close = %v, want ESRCH", pid, err)
		}
	}
	if r := f.exec(t, "PtyOpen", map[string]any{}); r.Reason != capability.ReasonShellClosed {
		t.Fatalf("PtyOpen after Close = %s, want SHELL_CLOSED", r.Reason)
	}
}
