package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// These door tests attack the binding of approvals and executions to their
// workspace and run with the built binary: an approval carried to another
// workspace, two processes resuming one run, and a resume after the
// process was killed in the middle of a call.

// doorRun runs `norma --home HOME run --workspace WS --json ARGS...` with
// the built binary and parses its JSON lines.
func doorRun(t *testing.T, home, ws string, args ...string) (int, []map[string]any, string) {
	t.Helper()
	code, out, errs := door(t, append([]string{"--home", home, "run", "--workspace", ws, "--json"}, args...)...)
	return code, jsonLines(t, out), errs
}

// pendingRun starts a headless run of script that stops awaiting approval
// of its first call; it returns the run id and the approval id.
func pendingRun(t *testing.T, e runEnv, script string) (runID, approvalID string) {
	t.Helper()
	code, events, errs := doorRun(t, e.home, e.ws, "--provider", "scripted", "--script", script, "--approval-wait", "0s", "go")
	fin := last(events)
	if code != 0 || fin["status"] != "awaiting_approval" {
		t.Fatalf("first run: exit %d, last %v, stderr %s", code, fin, errs)
	}
	p := fin["pending"].([]any)[0].(map[string]any)
	return fin["run_id"].(string), p["approval_id"].(string)
}

func approve(t *testing.T, home, id string) {
	t.Helper()
	if code, out, errs := door(t, "--home", home, "approvals", "approve", id); code != 0 {
		t.Fatalf("approvals approve %s: exit %d\n%s%s", id, code, out, errs)
	}
}

// TestDoorApprovalBoundToWorkspace: a write approved for run R in
// workspace A does not let `norma run --resume R --workspace B` write in
// B: the call asks again (a new request, pending headless), and neither
// workspace gets the file. Resumed in A, the same approval lets it run.
func TestDoorApprovalBoundToWorkspace(t *testing.T) {
	e := newRunEnv(t)
	other := t.TempDir()
	script := e.script(t, "turns:\n  - tool_calls:\n      - {id: w1, name: Write, input: {path: notes.md, content: n}}\n  - text: written\n")
	runID, approvalID := pendingRun(t, e, script)
	approve(t, e.home, approvalID)

	code, events, errs := doorRun(t, e.home, other, "--provider", "scripted", "--script", script, "--approval-wait", "0s", "--resume", runID)
	fin := last(events)
	if code != 0 || fin["status"] != "awaiting_approval" {
		t.Fatalf("resume in B: exit %d, last %v, stderr %s", code, fin, errs)
	}
	w1 := toolCalls(events)["w1"]
	if w1["reason"] != "APPROVAL_PENDING" || w1["approval_id"] == approvalID {
		t.Errorf("resume in B: w1 = %v, want a new pending approval, not %s", w1, approvalID)
	}
	for _, ws := range []string{other, e.ws} {
		if _, err := os.Stat(filepath.Join(ws, "notes.md")); err == nil {
			t.Errorf("%s/notes.md was written with an approval of another workspace", ws)
		}
	}
	_, show, _ := door(t, "--home", e.home, "approvals", "show", approvalID, "--json")
	if !strings.Contains(show, `"uses": 0`) && !strings.Contains(show, `"uses":0`) {
		t.Errorf("the approval of workspace A was used:\n%s", show)
	}

	// The control: in its own workspace the approval is good.
	code, events, errs = doorRun(t, e.home, e.ws, "--provider", "scripted", "--script", script, "--resume", runID)
	if fin := last(events); code != 0 || fin["status"] != "completed" {
		t.Fatalf("resume in A: exit %d, last %v, stderr %s", code, fin, errs)
	}
	if c := toolCalls(events)["w1"]; c["reason"] != "ALLOWED" || c["approval_id"] != approvalID {
		t.Errorf("resume in A: w1 = %v", c)
	}
	if b, err := os.ReadFile(filepath.Join(e.ws, "notes.md")); err != nil || string(b) != "n" {
		t.Errorf("A/notes.md = %q, %v", b, err)
	}
}

// slowMarkerScript's call appends a line to marker.txt, then sleeps.
const slowMarkerScript = "turns:\n  - tool_calls:\n      - {id: b1, name: Bash, input: {command: \"echo ran >> marker.txt; sleep %s\"}}\n  - text: done\n"

func requireShell(t *testing.T) {
	t.Helper()
	if os.Getenv("NORMA_REQUIRE_SANDBOX") == "" && !sandboxAvailable() {
		t.Skip("no OS sandbox here: no Bash tool")
	}
}

func markerLines(t *testing.T, ws string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(ws, "marker.txt"))
	if err != nil {
		return 0
	}
	return strings.Count(string(b), "ran\n")
}

// TestDoorResumeConcurrent: two `norma run --resume RUN` started at once.
// The call appends to marker.txt and then waits for the test to create
// release, so that whichever process runs it holds the run until the other
// one has ended: exactly one runs the call, the other exits 5 with
// RUN_LOCKED having started nothing, and the call ran once.
func TestDoorResumeConcurrent(t *testing.T) {
	requireShell(t)
	e := newRunEnv(t)
	script := e.script(t, "turns:\n  - tool_calls:\n      - {id: b1, name: Bash, input: {command: "+
		"\"echo ran >> marker.txt; for i in $(seq 300); do [ -e release ] && break; sleep 0.1; done\"}}\n  - text: done\n")
	runID, approvalID := pendingRun(t, e, script)
	approve(t, e.home, approvalID)

	type res struct {
		code     int
		out, err string
	}
	ch := make(chan res, 2)
	for range 2 {
		go func() {
			cmd := exec.Command(normaBin(t), "--home", e.home, "run", "--workspace", e.ws, "--json",
				"--provider", "scripted", "--script", script, "--approval-wait", "0s", "--resume", runID)
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			err := cmd.Run()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err != nil {
				code = -1
			}
			ch <- res{code, out.String(), errb.String()}
		}()
	}
	b := <-ch // the loser ends while the winner waits in the call
	if err := os.WriteFile(filepath.Join(e.ws, "release"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	a := <-ch
	if a.code != 0 || b.code != exitBusy {
		t.Fatalf("exits: winner %d, first to end %d; want 0 and %d\n--- winner\n%s%s\n--- first to end\n%s%s",
			a.code, b.code, exitBusy, a.out, a.err, b.out, b.err)
	}
	if !strings.Contains(b.err, "RUN_LOCKED") || !strings.Contains(b.err, "in use by another norma process") {
		t.Errorf("the refused resume does not say why:\n%s", b.err)
	}
	if b.out != "" {
		t.Errorf("the refused resume started the session:\n%s", b.out)
	}
	if fin := last(jsonLines(t, a.out)); fin["status"] != "completed" {
		t.Errorf("the winner ended %v", fin)
	}
	if n := markerLines(t, e.ws); n != 1 {
		t.Errorf("the call ran %d times, want 1", n)
	}
	// The lock is released at exit: the run can be resumed again.
	code, events, errs := doorRun(t, e.home, e.ws, "--provider", "scripted", "--script", script, "--resume", runID)
	if code != 0 {
		t.Errorf("resume after both ended: exit %d, last %v, stderr %s", code, last(events), errs)
	}
}

// TestDoorResumeAfterKill: the process running an approved call is killed
// (SIGKILL) after the call started; its lock is stale, and the next resume
// — which approves everything — takes the run over but does not run the
// call again: it is answered TOOL_INTERRUPTED and the marker has one line.
func TestDoorResumeAfterKill(t *testing.T) {
	requireShell(t)
	e := newRunEnv(t)
	script := e.script(t, strings.Replace(slowMarkerScript, "%s", "4", 1))
	runID, approvalID := pendingRun(t, e, script)
	approve(t, e.home, approvalID)

	cmd := exec.Command(normaBin(t), "--home", e.home, "run", "--workspace", e.ws, "--json",
		"--provider", "scripted", "--script", script, "--resume", runID)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for markerLines(t, e.ws) == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if markerLines(t, e.ws) == 0 {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatal("the approved call never started")
	}
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // norma and the sandboxed bash
	cmd.Wait()

	code, events, errs := doorRun(t, e.home, e.ws, "--provider", "scripted", "--script", script, "--yes", "--resume", runID)
	if fin := last(events); code != 0 || fin["status"] != "completed" {
		t.Fatalf("resume after kill: exit %d, last %v, stderr %s", code, fin, errs)
	}
	if c := toolCalls(events)["b1"]; c["reason"] != "TOOL_INTERRUPTED" || c["is_error"] != true {
		t.Errorf("b1 after the kill = %v, want TOOL_INTERRUPTED", c)
	}
	time.Sleep(100 * time.Millisecond)
	if n := markerLines(t, e.ws); n != 1 {
		t.Errorf("the call ran %d times, want 1", n)
	}
}
