package postgres

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/norma-run/norma/store"
)

// LockRun implements store.Store with the semantics of the SQLite store
// (see store.LockHeartbeat): a live holder refuses with RUN_LOCKED, a
// dead or stale one (store.LockHolder.Stale decides) is taken over. The
// row is read FOR UPDATE after a transaction-scoped advisory lock on the
// run, so two processes taking a free lock at once do not both get it.
func (d *DB) LockRun(ctx context.Context, runID string) (unlock func() error, err error) {
	if runID == "" {
		return nil, errors.New("store: lock: empty run id")
	}
	me := store.Self()
	nonce, err := store.LockNonce()
	if err != nil {
		return nil, err
	}
	var held *store.LockHolder
	err = d.tx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", "norma run lock "+d.tenant+"/"+runID); err != nil {
			return err
		}
		var l store.LockHolder
		var acquired, heartbeat int64
		err := tx.QueryRow(ctx, `SELECT host, machine, pid, pid_start, acquired_ns, heartbeat_ns FROM run_locks
			WHERE tenant = $1 AND run_id = $2 FOR UPDATE`, d.tenant, runID).
			Scan(&l.Host, &l.Machine, &l.PID, &l.PIDStart, &acquired, &heartbeat)
		l.Acquired, l.Heartbeat = time.Unix(0, acquired), time.Unix(0, heartbeat)
		now := time.Now()
		switch {
		case errors.Is(err, pgx.ErrNoRows):
		case err != nil:
			return err
		case !l.Stale(now):
			held = &l
			return nil
		}
		_, err = tx.Exec(ctx, `INSERT INTO run_locks (tenant, run_id, nonce, host, machine, pid, pid_start, acquired_ns, heartbeat_ns)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8)
			ON CONFLICT (tenant, run_id) DO UPDATE SET nonce = excluded.nonce, host = excluded.host, machine = excluded.machine,
				pid = excluded.pid, pid_start = excluded.pid_start, acquired_ns = excluded.acquired_ns, heartbeat_ns = excluded.heartbeat_ns`,
			d.tenant, runID, nonce, me.Host, me.Machine, me.PID, me.PIDStart, now.UnixNano())
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: lock run %s: %w", runID, err)
	}
	if held != nil {
		return nil, store.LockedError(runID, *held)
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
			_, err = d.pool.Exec(context.Background(), "DELETE FROM run_locks WHERE tenant = $1 AND run_id = $2 AND nonce = $3", d.tenant, runID, nonce)
		})
		return err
	}, nil
}

// heartbeat renews the lock's heartbeat until stop is closed.
func (d *DB) heartbeat(runID, nonce string, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(store.LockHeartbeat)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case now := <-t.C:
			ctx, cancel := context.WithTimeout(context.Background(), store.LockHeartbeat)
			d.pool.Exec(ctx, "UPDATE run_locks SET heartbeat_ns = $4 WHERE tenant = $1 AND run_id = $2 AND nonce = $3", d.tenant, runID, nonce, now.UnixNano())
			cancel()
		}
	}
}
