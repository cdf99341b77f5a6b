package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/norma-run/norma/sandbox/sandboxtest"
)

// TestDoorHookLockedStateDir: another process holds the state
// directory's audit key lock (a hung norma, or anyone with write access
// to it). The command hook used to wait on it without bound, until
// Claude Code's own hook timeout, after which Claude Code runs the call.
// It now answers a deny with exit 2 and the TIMEOUT code, well within
// the 30 seconds the installer gives the hook.
func TestDoorHookLockedStateDir(t *testing.T) {
	sandboxtest.Require(t)
	h := newHookEnv(t)
	env := filepath.Join(h.ws, ".env")
	read := h.pre("Read", "toolu_lock0", map[string]any{"file_path": env})
	// A first hook makes the state directory, its key store included.
	if code, out, _ := h.hook(t, read); code != 0 || parsePre(t, out).HookSpecificOutput.PermissionDecision != "deny" {
		t.Fatalf("first hook: exit %d %s", code, out)
	}
	lock, err := os.OpenFile(filepath.Join(h.home, keyStoreDir, ".lock"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	before := len(h.auditEventsUnlocked(t, lock))
	start := time.Now()
	code, out, errs := h.hook(t, h.pre("Read", "toolu_lock1", map[string]any{"file_path": filepath.Join(h.ws, "a.txt")}))
	took := time.Since(start)
	a := parsePre(t, out)
	if code != 2 || a.HookSpecificOutput.PermissionDecision != "deny" || !strings.HasPrefix(a.HookSpecificOutput.PermissionDecisionReason, "NORMA TIMEOUT") ||
		!strings.Contains(errs, "NORMA TIMEOUT") {
		t.Fatalf("exit %d, %s, stderr %q; want exit 2 and a TIMEOUT deny", code, out, errs)
	}
	if took > 20*time.Second {
		t.Fatalf("the hook answered after %v, too close to the agent's timeout", took)
	}
	// Nothing was decided as allowed behind the lock: the log holds no
	// new decision.
	if after := len(h.auditEventsUnlocked(t, lock)); after != before {
		t.Fatalf("audit events %d → %d while the lock was held", before, after)
	}
}

// auditEventsUnlocked lists the audit events with lock released for the
// query, then takes it again.
func (h *hookEnv) auditEventsUnlocked(t *testing.T, lock *os.File) []map[string]any {
	t.Helper()
	syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_EX)
	return h.auditEvents(t)
}
