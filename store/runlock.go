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

// self is this process as a lock holder, read once.
var self = sync.OnceValue(func() LockHolder {
	h := LockHolder{PID: os.Getpid()}
	h.Host, _ = os.Hostname()
	boot, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	ns, _ := os.Readlink("/proc/self/ns/pid")
	if b := bytes.TrimSpace(boot); len(b) > 0 && ns != "" {
		h.Machine = string(b) + "/" + ns
	}
	h.PIDStart = procStart(h.PID)
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

// LockHolder is the recorded holder of a run lock.
type LockHolder struct {
	Host, Machine, PIDStart string
	PID                     int
	// Acquired and Heartbeat are when it took the lock and last renewed it.
	Acquired, Heartbeat time.Time
}

// Self is this process as a lock holder (times zero).
func Self() LockHolder { return self() }

// Stale reports whether holder h is gone, as seen by this process at
// now (see [LockHeartbeat]). Every store decides a lock's staleness here.
func (h LockHolder) Stale(now time.Time) bool {
	me := self()
	if me.Machine != "" && h.Machine == me.Machine {
		return procStart(h.PID) != h.PIDStart
	}
	return now.Sub(h.Heartbeat) > LockStaleAfter
}

// LockedError is the refusal of a lock of runID that live holder h holds.
func LockedError(runID string, h LockHolder) error {
	return &capability.Error{
		Decision: capability.Decision{Mode: capability.Deny, Reason: capability.ReasonRunLocked, Layer: capability.LayerAgent, Request: runID},
		Detail: fmt.Sprintf("run %s is in use by another norma process (pid %d on host %s, since %s); wait for it to end",
			runID, h.PID, strconv.Quote(h.Host), h.Acquired.UTC().Format(time.RFC3339)),
	}
}

// LockNonce returns a fresh random nonce that identifies one holding of a
// lock: only its holder knows it, so only it renews or removes the row.
func LockNonce() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(b[:]), nil
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
	nonce, err := LockNonce()
	if err != nil {
		return nil, err
	}
	var held *LockHolder
	err = d.tx(ctx, func(tx *sql.Tx) error {
		var l LockHolder
		var acquired, heartbeat int64
		err := tx.QueryRowContext(ctx, `SELECT host, machine, pid, pid_start, acquired_ns, heartbeat_ns FROM run_locks WHERE run_id = ?`, runID).
			Scan(&l.Host, &l.Machine, &l.PID, &l.PIDStart, &acquired, &heartbeat)
		l.Acquired, l.Heartbeat = time.Unix(0, acquired), time.Unix(0, heartbeat)
		now := time.Now()
		switch {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return err
		case !l.Stale(now):
			held = &l
			return nil
		}
		_, err = tx.ExecContext(ctx, `INSERT OR REPLACE INTO run_locks
			(run_id, nonce, host, machine, pid, pid_start, acquired_ns, heartbeat_ns) VALUES (?,?,?,?,?,?,?,?)`,
			runID, nonce, me.Host, me.Machine, me.PID, me.PIDStart, now.UnixNano(), now.UnixNano())
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: lock run %s: %w", runID, err)
	}
	if held != nil {
		return nil, LockedError(runID, *held)
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
