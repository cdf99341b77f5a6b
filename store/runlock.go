package store

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/norma-run/norma/capability"
)

// Run locks: one process at a time runs a run. The holder is recorded in
// the run_locks table as its host name, its machine (the kernel's boot id
// and the pid namespace), its pid and the start time of that pid, with a
// random nonce that only the holder knows.
//
// A lock is stale, and is taken over, when
//   - its holder is on this machine (same boot id and pid namespace) and
//     no process with its pid and start time runs: the holder exited
//     without unlocking (kill -9, a crash, a power loss); or
//   - its holder is elsewhere (another host, container or boot) and it
//     has not renewed its heartbeat for [LockStaleAfter].
//
// The holder renews the heartbeat every [LockHeartbeat] while it runs.
const (
	LockHeartbeat  = 30 * time.Second
	LockStaleAfter = 2 * time.Minute
)

// holder identifies this process as a lock holder.
type holder struct {
	host, machine, pidStart string
	pid                     int
}

var self = sync.OnceValue(func() holder {
	h := holder{pid: os.Getpid()}
	h.host, _ = os.Hostname()
	boot, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	ns, _ := os.Readlink("/proc/self/ns/pid")
	if b := bytes.TrimSpace(boot); len(b) > 0 && ns != "" {
		h.machine = string(b) + "/" + ns
	}
	h.pidStart = procStart(h.pid)
	return h
})

// procStart returns the start time of process pid in clock ticks since
// boot (field 22 of /proc/PID/stat), or "" when there is no such process.
func procStart(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return ""
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 20 { // fields 3.. after the name; field 22 is f[19]
		return ""
	}
	return string(f[19])
}

type lockRow struct {
	nonce, host, machine, pidStart string
	pid                            int
	acquired, heartbeat            int64
}

// stale reports whether the holder of l is gone.
func (l lockRow) stale(me holder, now time.Time) bool {
	if me.machine != "" && l.machine == me.machine {
		return procStart(l.pid) != l.pidStart
	}
	return now.Sub(time.Unix(0, l.heartbeat)) > LockStaleAfter
}

// LockRun gives run runID to this process until unlock is called (at the
// end of the session). When a live process holds it, LockRun fails with a
// *capability.Error of reason RUN_LOCKED naming the holder; a stale lock
// (see [LockHeartbeat]) is taken over. A second LockRun of the same run in
// the same process fails too.
func (d *DB) LockRun(ctx context.Context, runID string) (unlock func() error, err error) {
	if runID == "" {
		return nil, errors.New("store: lock: empty run id")
	}
	me := self()
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, err
	}
	nonce := hex.EncodeToString(b[:])
	var held *lockRow
	err = d.tx(ctx, func(tx *sql.Tx) error {
		var l lockRow
		err := tx.QueryRowContext(ctx, `SELECT nonce, host, machine, pid, pid_start, acquired_ns, heartbeat_ns FROM run_locks WHERE run_id = ?`, runID).
			Scan(&l.nonce, &l.host, &l.machine, &l.pid, &l.pidStart, &l.acquired, &l.heartbeat)
		now := time.Now()
		switch {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return err
		case !l.stale(me, now):
			held = &l
			return nil
		}
		_, err = tx.ExecContext(ctx, `INSERT OR REPLACE INTO run_locks
			(run_id, nonce, host, machine, pid, pid_start, acquired_ns, heartbeat_ns) VALUES (?,?,?,?,?,?,?,?)`,
			runID, nonce, me.host, me.machine, me.pid, me.pidStart, now.UnixNano(), now.UnixNano())
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: lock run %s: %w", runID, err)
	}
	if held != nil {
		return nil, &capability.Error{
			Decision: capability.Decision{Mode: capability.Deny, Reason: capability.ReasonRunLocked, Layer: capability.LayerAgent, Request: runID},
			Detail: fmt.Sprintf("run %s is in use by another norma process (pid %d on host %s, since %s); wait for it to end",
				runID, held.pid, strconv.Quote(held.host), time.Unix(0, held.acquired).UTC().Format(time.RFC3339)),
		}
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go d.heartbeat(runID, nonce, stop, done)
	var once sync.Once
	return func() error {
		var err error
		once.Do(func() {
			close(stop)
			<-done
			err = d.tx(context.Background(), func(tx *sql.Tx) error {
				_, err := tx.Exec(`DELETE FROM run_locks WHERE run_id = ? AND nonce = ?`, runID, nonce)
				return err
			})
		})
		return err
	}, nil
}

// heartbeat renews the lock's heartbeat until stop is closed.
func (d *DB) heartbeat(runID, nonce string, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(LockHeartbeat)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case now := <-t.C:
			_ = d.tx(context.Background(), func(tx *sql.Tx) error {
				_, err := tx.Exec(`UPDATE run_locks SET heartbeat_ns = ? WHERE run_id = ? AND nonce = ?`, now.UnixNano(), runID, nonce)
				return err
			})
		}
	}
}
