package postgres

import (
	"context"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

// WatchApprovals implements approval.Watcher with LISTEN on a connection
// of its own: the returned channel receives the id of every approval of
// this tenant that is created or changes, from any process, right after
// the change commits. It is closed when ctx ends or the connection is
// lost; a waiter then falls back to polling. A slow receiver misses ids
// (the channel is buffered, never blocking the listener), which costs it
// a poll interval, never a decision: the store is the truth.
func (d *DB) WatchApprovals(ctx context.Context) (<-chan string, error) {
	return listen(ctx, d, approvalsChannel, func(s string) (string, bool) { return s, s != "" })
}

// FollowAudit implements audit.Follower: the returned channel receives
// the new head sequence number after every append to this tenant's chain
// that commits, from any process (a tail reads the events after the last
// one it read). Closed and lossy as [DB.WatchApprovals].
func (d *DB) FollowAudit(ctx context.Context) (<-chan int64, error) {
	return listen(ctx, d, auditChannel, func(s string) (int64, bool) {
		n, err := strconv.ParseInt(s, 10, 64)
		return n, err == nil
	})
}

// listen LISTENs on channel on a new connection and sends the payloads of
// this tenant's notifications, parsed, until ctx ends or the connection
// fails.
func listen[T any](ctx context.Context, d *DB, channel string, parse func(string) (T, bool)) (<-chan T, error) {
	conn, err := pgx.ConnectConfig(ctx, d.pool.Config().ConnConfig.Copy())
	if err != nil {
		return nil, err
	}
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{channel}.Sanitize()); err != nil {
		conn.Close(context.Background())
		return nil, err
	}
	out := make(chan T, 64)
	go func() {
		defer close(out)
		defer conn.Close(context.Background())
		for {
			n, err := conn.WaitForNotification(ctx)
			if err != nil {
				return
			}
			tenant, payload, ok := strings.Cut(n.Payload, " ")
			if !ok || tenant != d.tenant {
				continue
			}
			v, ok := parse(payload)
			if !ok {
				continue
			}
			select {
			case out <- v:
			default:
			}
		}
	}()
	return out, nil
}
