package approval

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// Verdict is an approver's answer.
type Verdict struct {
	Approve bool
	// By names who decided ("terminal:alice", "cli:bob", "auto").
	By string
	// Why is the decider's short reason; it is redacted before storage.
	// For a no it is what the model is told (bounded and escaped by the
	// session that relays it).
	Why string
	// Remember says how far a yes reaches beyond this one call; it is
	// honoured only with Approve, and only for the rules [RulesOf] gave the
	// approver. The zero value is [RememberNone].
	Remember Remember
}

// Remember is how far a yes reaches.
type Remember uint8

// Remember values. An unknown value counts as [RememberNone].
const (
	// RememberNone: this call only.
	RememberNone Remember = iota
	// RememberSession: the call's exact rules allow later calls of the
	// same session (gate.Gate.AllowForSession).
	RememberSession
	// RememberAlways: as RememberSession, and the rules are written to the
	// workspace's .norma/settings.local.yaml (permissions.allow).
	RememberAlways
)

var rememberNames = [...]string{"none", "session", "always"}

// String returns "none", "session", "always" or "unknown(N)".
func (r Remember) String() string {
	if int(r) < len(rememberNames) {
		return rememberNames[r]
	}
	return fmt.Sprintf("unknown(%d)", uint8(r))
}

// rulesKey carries the rules a remembered yes would add.
type rulesKey struct{}

// WithRules returns ctx carrying rules: the exact allow rules of the call
// being approved (policy.RulesFor), set by the gate on the context of its
// request, so that an [Approver] can offer "yes for this session" and
// "always" and show what they add. It is request metadata, never a
// decision: only an approver's answer adds a rule. No rules means only a
// yes for this call can be offered.
func WithRules(ctx context.Context, rules []string) context.Context {
	if len(rules) == 0 {
		return ctx
	}
	return context.WithValue(ctx, rulesKey{}, slices.Clone(rules))
}

// RulesOf returns the rules [WithRules] set on ctx (a copy), or nil.
func RulesOf(ctx context.Context) []string {
	r, _ := ctx.Value(rulesKey{}).([]string)
	return slices.Clone(r)
}

// Approver asks for a decision on a stored, pending request: it is the
// human (or the stand-in for one: [Auto], a [Waiter], a terminal prompt)
// that a [Service] asks. It is not what the gate or the broker call; they
// ask an [Authorizer], which owns the whole exchange (store, ask, consume)
// and returns a [Ticket]. An Approver must honour ctx and return an error
// (never a grant) when it cannot get an answer.
type Approver interface {
	Approve(ctx context.Context, r Record) (Verdict, error)
}

// ErrNoDecision is returned by an approver that got no answer before its
// deadline.
var ErrNoDecision = errors.New("approval: no decision before the deadline")

// Auto answers every request the same way, for tests and `--yes`.
type Auto struct {
	Grant bool
	By    string
}

// Approve implements [Approver].
func (a Auto) Approve(ctx context.Context, r Record) (Verdict, error) {
	if err := ctx.Err(); err != nil {
		return Verdict{}, err
	}
	by := a.By
	if by == "" {
		by = "auto"
	}
	return Verdict{Approve: a.Grant, By: by, Why: "automatic"}, nil
}

// Getter reads one approval; *Service and every [Backend] satisfy it.
type Getter interface {
	GetApproval(ctx context.Context, id string) (Record, error)
}

// Waiter waits for a decision recorded by another process (`norma
// approvals approve|deny`), polling the store until the request's expiry or
// ctx's deadline, whichever is first. When the store is a [Watcher] it
// wakes as soon as the store announces a change of the request, and polls
// only every WatchedPoll in case an announcement was lost.
type Waiter struct {
	Store Getter
	// Poll is the polling interval; zero means 200ms.
	Poll time.Duration
	// WatchedPoll is the polling interval while the store announces
	// changes; zero means 5s.
	WatchedPoll time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Approve implements [Approver]. It returns [ErrNoDecision] at the
// deadline, and the stored decision otherwise.
func (w Waiter) Approve(ctx context.Context, r Record) (Verdict, error) {
	if w.Store == nil {
		return Verdict{}, errors.New("approval: waiter without a store")
	}
	poll := w.Poll
	if poll <= 0 {
		poll = 200 * time.Millisecond
	}
	now := w.Now
	if now == nil {
		now = time.Now
	}
	var wake <-chan string
	if wa, ok := w.Store.(Watcher); ok {
		wctx, cancel := context.WithCancel(ctx)
		defer cancel()
		// Subscribed before the first read: a decision after it is announced.
		if ch, err := wa.WatchApprovals(wctx); err == nil {
			wake, poll = ch, w.WatchedPoll
			if poll <= 0 {
				poll = 5 * time.Second
			}
		}
	}
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		cur, err := w.Store.GetApproval(ctx, r.ID)
		if err != nil {
			return Verdict{}, fmt.Errorf("approval: wait for %s: %w", r.ID, err)
		}
		switch cur.State {
		case StateGranted, StateConsumed:
			return Verdict{Approve: true, By: cur.DecidedBy, Why: cur.Why}, nil
		case StateDenied, StateExpired:
			return Verdict{Approve: false, By: cur.DecidedBy, Why: cur.Why}, nil
		}
		if !now().Before(cur.Expires) {
			return Verdict{}, ErrNoDecision
		}
		if err := w.sleep(ctx, t, &wake, r.ID); err != nil {
			return Verdict{}, err
		}
	}
}

// sleep waits for the next tick or an announcement of id. A closed wake
// channel (the store stopped announcing) goes back to polling every Poll.
func (w Waiter) sleep(ctx context.Context, t *time.Ticker, wake *<-chan string, id string) error {
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: %w", ErrNoDecision, ctx.Err())
		case <-t.C:
			return nil
		case got, ok := <-*wake:
			if !ok {
				*wake = nil
				poll := w.Poll
				if poll <= 0 {
					poll = 200 * time.Millisecond
				}
				t.Reset(poll)
				return nil
			}
			if got == id {
				return nil
			}
		}
	}
}

// Watcher is implemented by a store that announces changes (PostgreSQL's
// LISTEN/NOTIFY): the channel receives the id of each approval created or
// changed, by any process, once the change is durable, and is closed when
// ctx ends or the store stops announcing. Ids may be missed under load; a
// [Waiter] re-reads the store on every id and still polls, more slowly.
type Watcher interface {
	WatchApprovals(ctx context.Context) (<-chan string, error)
}
