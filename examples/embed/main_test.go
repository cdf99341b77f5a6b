package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestEmbedRuns builds and runs the example the way its doc comment says
// (go run ./examples/embed) and checks every decision it prints.
func TestEmbedRuns(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	cmd := exec.CommandContext(t.Context(), goBin, "run", ".")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go run ./examples/embed: %v\n%s", err, out)
	}
	want := []string{
		"approval asked: Ticket (t3)",
		"t1 Ticket allow          ALLOWED",
		"t2 Ticket deny           SCHEMA_INVALID",
		"t3 Ticket allow          ALLOWED",
		"t4 Bash   deny           TOOL_UNKNOWN",
		"status: completed, approvals: 1",
		"model said: Let me look up the ticket. | Ticket 42 is closed.",
	}
	got := strings.Split(strings.TrimSpace(string(out)), "\n")
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("go run ./examples/embed printed:\n%s\nwant:\n%s", out, strings.Join(want, "\n"))
	}
}
