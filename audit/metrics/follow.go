package metrics

import (
	"context"
	"encoding/json"
	"time"

	"github.com/norma-run/norma/audit"
)

// FollowOptions configures [Follow]. A nil *FollowOptions means all
// defaults.
type FollowOptions struct {
	// FromHead starts after the newest row stored when Follow starts,
	// so that only later events are counted. By default Follow counts the
	// whole log from its first row: the counters are then totals over the
	// store's history, the same after a restart of the server, and a
	// scrape never sees them go down.
	FromHead bool
	// Poll is how often the store is scanned without a notification; zero
	// means one second.
	Poll time.Duration
	// Synced, when set, is called after each scan with the sequence number
	// of the newest row counted (tests wait on it).
	Synced func(seq int64)
}

// Follow tails b and feeds every row to m, in sequence order, until ctx
// ends. A backend that is an [audit.Follower] (PostgreSQL) wakes it as
// soon as any process appends; it polls as well, since announcements may
// be lost. It returns ctx's error, or the error of a failed first scan (a
// store that cannot be read at all). Later scan errors are retried at the
// next tick. It counts the events of every process that writes b, so the
// process running it must not also give m to its own [audit.Log] (each of
// its events would count twice).
func Follow(ctx context.Context, b audit.Backend, m *Metrics, opts *FollowOptions) error {
	if opts == nil {
		opts = &FollowOptions{}
	}
	poll := opts.Poll
	if poll <= 0 {
		poll = time.Second
	}
	var last int64
	if opts.FromHead {
		rows, err := b.QueryAudit(ctx, audit.Filter{Limit: 1, Newest: true})
		if err != nil {
			return err
		}
		if len(rows) > 0 {
			last = rows[0].Seq
		}
	}
	var wake <-chan int64
	if f, ok := b.(audit.Follower); ok {
		if ch, err := f.FollowAudit(ctx); err == nil {
			wake = ch
		}
	}
	scan := func() error {
		err := b.ScanAudit(ctx, last, 0, func(r audit.Row) error {
			var e audit.Event
			if err := json.Unmarshal(r.Body, &e); err != nil {
				m.followErrs.inc()
			} else {
				m.Observe(e)
			}
			last = r.Seq
			return nil
		})
		if opts.Synced != nil {
			opts.Synced(last)
		}
		return err
	}
	if err := scan(); err != nil {
		return err
	}
	tick := time.NewTicker(poll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		case _, ok := <-wake:
			if !ok {
				wake = nil // the watch ended: polling goes on
			}
		}
		_ = scan() // a failed scan is retried at the next tick
	}
}
