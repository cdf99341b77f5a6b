package store_test

import (
	"database/sql"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/store"
)

func openDB(t *testing.T) (*store.DB, string) {
	t.Helper()
	p := filepath.Join(t.TempDir(), store.FileName)
	db, err := store.Open(t.Context(), p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db, p
}

// TestLockRun: a run has one holder. A second LockRun, through another
// handle on the same file (as another process would open it), fails with
// RUN_LOCKED naming the holder; after unlock the run can be taken again.
func TestLockRun(t *testing.T) {
	db, p := openDB(t)
	other, err := store.Open(t.Context(), p)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	unlock, err := db.LockRun(t.Context(), "run-1")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []*store.DB{db, other} {
		_, err := d.LockRun(t.Context(), "run-1")
		if capability.ReasonOf(err) != capability.ReasonRunLocked || !strings.Contains(err.Error(), "pid ") {
			t.Errorf("second LockRun = %v, want RUN_LOCKED naming the holder", err)
		}
	}
	if u, err := other.LockRun(t.Context(), "run-2"); err != nil {
		t.Errorf("another run: %v", err)
	} else {
		u()
	}
	if err := unlock(); err != nil {
		t.Fatal(err)
	}
	u, err := other.LockRun(t.Context(), "run-1")
	if err != nil {
		t.Fatalf("LockRun after unlock: %v", err)
	}
	u()
}

// TestLockRunConcurrent: of many handles racing for one run, one wins.
func TestLockRunConcurrent(t *testing.T) {
	_, p := openDB(t)
	var wg sync.WaitGroup
	var mu sync.Mutex
	won, locked := 0, 0
	for range 8 {
		wg.Go(func() {
			d, err := store.Open(t.Context(), p)
			if err != nil {
				t.Error(err)
				return
			}
			defer d.Close()
			_, err = d.LockRun(t.Context(), "run-race")
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				won++
			case capability.ReasonOf(err) == capability.ReasonRunLocked:
				locked++
			default:
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if won != 1 || locked != 7 {
		t.Errorf("won %d, locked %d; want 1 and 7", won, locked)
	}
}

// TestLockRunStale: a lock whose holder is gone is taken over — on this
// machine when its pid no longer runs (or runs another process), elsewhere
// when its heartbeat is older than LockStaleAfter — and a live one is not.
func TestLockRunStale(t *testing.T) {
	db, p := openDB(t)
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	boot, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	ns, _ := os.Readlink("/proc/self/ns/pid")
	here := strings.TrimSpace(string(boot)) + "/" + ns
	start := func(pid int) string {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		return f[19]
	}
	now, old := time.Now().UnixNano(), time.Now().Add(-store.LockStaleAfter-time.Minute).UnixNano()
	tests := []struct {
		name      string
		machine   string
		pid       int
		pidStart  string
		heartbeat int64
		stale     bool
	}{
		{"here, exited", here, dead.Process.Pid, "12345", now, true},
		{"here, pid reused by another process", here, os.Getpid(), "1", now, true},
		{"here, alive", here, os.Getpid(), start(os.Getpid()), old, false},
		{"elsewhere, silent", "other-boot/pid:[1]", 1, "1", old, true},
		{"elsewhere, beating", "other-boot/pid:[1]", 1, "1", now, false},
	}
	raw, err := sql.Open("sqlite", "file:"+p+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			run := "run-stale-" + strconv.Itoa(i)
			if _, err := raw.Exec(`INSERT INTO run_locks (run_id, nonce, host, machine, pid, pid_start, acquired_ns, heartbeat_ns)
				VALUES (?,?,?,?,?,?,?,?)`, run, "n", "h", tt.machine, tt.pid, tt.pidStart, now, tt.heartbeat); err != nil {
				t.Fatal(err)
			}
			u, err := db.LockRun(t.Context(), run)
			if tt.stale {
				if err != nil {
					t.Fatalf("stale lock not taken over: %v", err)
				}
				u()
				return
			}
			if capability.ReasonOf(err) != capability.ReasonRunLocked {
				t.Fatalf("live lock: LockRun = %v, want RUN_LOCKED", err)
			}
		})
	}
}
