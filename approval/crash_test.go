package approval_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/norma-run/norma/approval"
	"github.com/norma-run/norma/audit"
	"github.com/norma-run/norma/store"
)

const crashEnv = "NORMA_APPROVAL_CRASH_CHILD"

func TestMain(m *testing.M) {
	if phase := os.Getenv(crashEnv); phase != "" {
		if err := crashChild(phase, os.Getenv("NORMA_DB"), os.Getenv("NORMA_EFFECTS"), os.Getenv("NORMA_INPUT")); err != nil {
			fmt.Println("ERROR", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// execute is the modelled side effect: it appends the key to the effects
// file unless the key is already there, the way a remote API honours an
// Idempotency-Key header.
func execute(path, key string) error {
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if l == key {
			return nil
		}
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(key + "\n"); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

const crashRun = "run-crash"

// crashChild is one process lifetime of a run: recover unfinished
// executions, then (unless phase is "recover") authorize and execute one
// action, blocking at the point named by phase until it is killed.
func crashChild(phase, dbPath, effects, input string) error {
	ctx := context.Background()
	db, err := store.Open(ctx, dbPath)
	if err != nil {
		return err
	}
	log, err := audit.Open(db, nil)
	if err != nil {
		return err
	}
	s, err := approval.NewService(db, &approval.Options{Sink: log, Approver: approval.Auto{Grant: true}})
	if err != nil {
		return err
	}
	pending, err := s.Unfinished(ctx, crashRun)
	if err != nil {
		return err
	}
	for _, tk := range pending {
		if err := runTicket(ctx, s, log, effects, tk); err != nil {
			return err
		}
		fmt.Println("RECOVERED", tk.IdempotencyKey)
	}
	if phase == "recover" {
		fmt.Println("DONE")
		return nil
	}
	h, err := approval.HashAction(approval.Action{Plugin: "p", Version: "1", ManifestDigest: "sha256:m", Tool: "issues.comment", Input: json.RawMessage(input), RunID: crashRun})
	if err != nil {
		return err
	}
	tk, err := s.Authorize(ctx, approval.Request{RunID: crashRun, Tool: "issues.comment", Plugin: "p", PluginVersion: "1", ActionHash: h, Target: "example-org/demo-repo#42"})
	if err != nil {
		return err
	}
	fmt.Println("AUTHORIZED", tk.IdempotencyKey)
	if phase == "kill-before-exec" {
		select {}
	}
	if err := log.Record(ctx, audit.Event{Type: audit.TypeToolCallStarted, RunID: crashRun, Tool: "issues.comment", ApprovalID: tk.ApprovalID}); err != nil {
		return err
	}
	if err := execute(effects, tk.IdempotencyKey); err != nil {
		return err
	}
	fmt.Println("EXECUTED", tk.IdempotencyKey)
	if phase == "kill-before-result" {
		select {}
	}
	return finishTicket(ctx, s, log, tk)
}

func runTicket(ctx context.Context, s *approval.Service, log *audit.Log, effects string, tk approval.Ticket) error {
	if err := log.Record(ctx, audit.Event{Type: audit.TypeToolCallStarted, RunID: crashRun, Tool: "issues.comment", ApprovalID: tk.ApprovalID, Detail: map[string]string{"recovery": "true"}}); err != nil {
		return err
	}
	if err := execute(effects, tk.IdempotencyKey); err != nil {
		return err
	}
	return finishTicket(ctx, s, log, tk)
}

func finishTicket(ctx context.Context, s *approval.Service, log *audit.Log, tk approval.Ticket) error {
	if err := log.Record(ctx, audit.Event{Type: audit.TypeToolCallFinished, RunID: crashRun, Tool: "issues.comment", ApprovalID: tk.ApprovalID}); err != nil {
		return err
	}
	return s.Finish(ctx, tk)
}

// startChild runs the test binary as a child in phase and returns once
// it printed a line starting with waitFor; then it is SIGKILLed unless
// phase ends on its own.
func runChild(t *testing.T, phase, dbPath, effects, input, killAfter string) []string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashEnv+"="+phase, "NORMA_DB="+dbPath, "NORMA_EFFECTS="+effects, "NORMA_INPUT="+input)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var lines []string
	sc := bufio.NewScanner(out)
	timer := time.AfterFunc(60*time.Second, func() { cmd.Process.Kill() })
	defer timer.Stop()
	for sc.Scan() {
		line := sc.Text()
		lines = append(lines, line)
		if strings.HasPrefix(line, "ERROR") {
			t.Fatalf("child %s: %s", phase, line)
		}
		if killAfter != "" && strings.HasPrefix(line, killAfter) {
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	err = cmd.Wait()
	if killAfter != "" {
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
			t.Fatalf("child %s: %v, want killed by SIGKILL (output %q)", phase, err, lines)
		}
	} else if err != nil {
		t.Fatalf("child %s: %v (output %q)", phase, err, lines)
	}
	return lines
}

func effectLines(t *testing.T, path string) []string {
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return strings.Fields(string(b))
}

// TestCrashRecovery kills a run between approval and execution, and
// between execution and result; after each restart every approved action
// ran exactly once, with the key it was approved under, and the audit chain
// verifies.
func TestCrashRecovery(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns child processes")
	}
	dir := t.TempDir()
	dbPath, effects := filepath.Join(dir, store.FileName), filepath.Join(dir, "effects.log")

	// 1: killed after the approval was consumed, before execution.
	out := runChild(t, "kill-before-exec", dbPath, effects, `{"body":"first"}`, "AUTHORIZED")
	key1 := strings.Fields(out[len(out)-1])[1]
	if got := effectLines(t, effects); len(got) != 0 {
		t.Fatalf("effects after kill before exec = %v, want none", got)
	}
	out = runChild(t, "recover", dbPath, effects, "", "")
	if !contains(out, "RECOVERED "+key1) {
		t.Errorf("restart output %q, want RECOVERED %s", out, key1)
	}

	// 2: killed after execution, before the result was recorded.
	out = runChild(t, "kill-before-result", dbPath, effects, `{"body":"second"}`, "EXECUTED")
	key2 := strings.Fields(out[len(out)-1])[1]
	out = runChild(t, "recover", dbPath, effects, "", "")
	if !contains(out, "RECOVERED "+key2) {
		t.Errorf("restart output %q, want RECOVERED %s", out, key2)
	}
	// 3: a further restart has nothing left to do.
	out = runChild(t, "recover", dbPath, effects, "", "")
	if len(out) != 1 || out[0] != "DONE" {
		t.Errorf("second restart output %q, want only DONE", out)
	}

	if got := effectLines(t, effects); len(got) != 2 || got[0] != key1 || got[1] != key2 {
		t.Errorf("effects = %v, want exactly [%s %s]", got, key1, key2)
	}
	ctx := t.Context()
	db, err := store.Open(ctx, dbPath)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	res, err := audit.VerifyBackend(ctx, db)
	if err != nil || !res.OK() {
		t.Fatalf("Verify = %+v, %v; want intact", res, err)
	}
	recs, err := db.ListApprovals(ctx, approval.ListFilter{RunID: crashRun})
	if err != nil || len(recs) != 2 {
		t.Fatalf("approvals = %v, %v; want 2", recs, err)
	}
	for _, r := range recs {
		if r.State != approval.StateConsumed || r.Uses != 1 {
			t.Errorf("approval %s: state %s uses %d; want consumed once", r.ID, r.State, r.Uses)
		}
	}
}

func contains(lines []string, s string) bool {
	for _, l := range lines {
		if l == s {
			return true
		}
	}
	return false
}
