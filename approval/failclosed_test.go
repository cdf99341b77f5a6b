package approval_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/norma-run/norma/approval"
	"github.com/norma-run/norma/audit"
	"github.com/norma-run/norma/capability"
)

// TestFailClosed covers every denial reason code on both backends.
func TestFailClosed(t *testing.T) {
	for name, b := range backends(t) {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			c := newClock()
			manual, _ := newService(t, b, nil, c) // no approver: requests stay pending
			grant := func(t *testing.T, run, input string, scope approval.Scope) (string, approval.Request) {
				t.Helper()
				req := request(t, run, input, scope)
				_, err := manual.Authorize(ctx, req)
				wantReason(t, "authorize without approver", err, capability.ReasonApprovalRequired)
				recs, err := manual.List(ctx, approval.ListFilter{RunID: run, ActionHash: req.ActionHash, State: approval.StatePending})
				if err != nil || len(recs) != 1 {
					t.Fatalf("List pending = %v, %v", recs, err)
				}
				if _, err := manual.Decide(ctx, recs[0].ID, true, "cli:bob", "ok"); err != nil {
					t.Fatal(err)
				}
				return recs[0].ID, req
			}
			tests := []struct {
				name string
				run  func(t *testing.T) error
				want capability.Reason
			}{
				{"other run", func(t *testing.T) error {
					id, req := grant(t, "run-a", `{"n":1}`, approval.ScopeOnce)
					_, err := manual.Redeem(ctx, id, "run-b", req.ActionHash)
					return err
				}, capability.ReasonApprovalOtherRun},
				{"changed argument", func(t *testing.T) error {
					id, req := grant(t, "run-c", `{"n":1}`, approval.ScopeOnce)
					_, err := manual.Redeem(ctx, id, req.RunID, hashOf(t, req.RunID, `{"n":2}`))
					return err
				}, capability.ReasonApprovalMismatch},
				{"unknown id", func(t *testing.T) error {
					_, err := manual.Redeem(ctx, "apr_nope", "run-x", hashOf(t, "run-x", `{}`))
					return err
				}, capability.ReasonApprovalMismatch},
				{"consumed", func(t *testing.T) error {
					id, req := grant(t, "run-d", `{"n":1}`, approval.ScopeOnce)
					if _, err := manual.Redeem(ctx, id, req.RunID, req.ActionHash); err != nil {
						t.Fatal(err)
					}
					_, err := manual.Redeem(ctx, id, req.RunID, req.ActionHash)
					return err
				}, capability.ReasonApprovalConsumed},
				{"expired after grant", func(t *testing.T) error {
					id, req := grant(t, "run-e", `{"n":1}`, approval.ScopeOnce)
					c.Advance(approval.DefaultTTL + time.Second)
					_, err := manual.Redeem(ctx, id, req.RunID, req.ActionHash)
					return err
				}, capability.ReasonApprovalExpired},
				{"decide after expiry", func(t *testing.T) error {
					req := request(t, "run-f", `{"n":1}`, approval.ScopeOnce)
					_, _ = manual.Authorize(ctx, req)
					recs, _ := manual.List(ctx, approval.ListFilter{RunID: "run-f"})
					c.Advance(approval.DefaultTTL + time.Second)
					_, err := manual.Decide(ctx, recs[0].ID, true, "cli:bob", "late")
					return err
				}, capability.ReasonApprovalExpired},
				{"denied", func(t *testing.T) error {
					s, _ := newService(t, b, approval.Auto{Grant: false}, c)
					_, err := s.Authorize(ctx, request(t, "run-g", `{"n":1}`, approval.ScopeOnce))
					return err
				}, capability.ReasonApprovalDenied},
				{"approver error", func(t *testing.T) error {
					s, _ := newService(t, b, failing{}, c)
					_, err := s.Authorize(ctx, request(t, "run-h", `{"n":1}`, approval.ScopeOnce))
					return err
				}, capability.ReasonApprovalDenied},
				{"no decision before expiry", func(t *testing.T) error {
					s, _ := newService(t, b, approval.Waiter{Store: b, Poll: time.Millisecond, Now: c.Now}, c)
					go func() { time.Sleep(20 * time.Millisecond); c.Advance(approval.DefaultTTL + time.Second) }()
					_, err := s.Authorize(ctx, request(t, "run-i", `{"n":1}`, approval.ScopeOnce))
					return err
				}, capability.ReasonApprovalExpired},
				{"invalid request", func(t *testing.T) error {
					req := request(t, "run-j", `{}`, approval.ScopeOnce)
					req.ActionHash = "md5:abc"
					_, err := manual.Authorize(ctx, req)
					return err
				}, capability.ReasonInvalidRequest},
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					wantReason(t, tt.name, tt.run(t), tt.want)
				})
			}
		})
	}
}

type failing struct{}

func (failing) Approve(context.Context, approval.Record) (approval.Verdict, error) {
	return approval.Verdict{Approve: true}, errors.New("terminal closed")
}

// brokenSink fails every Record.
type brokenSink struct{}

func (brokenSink) Record(context.Context, audit.Event) error { return errors.New("disk full") }

func TestStoreUnavailable(t *testing.T) {
	ctx := t.Context()
	c := newClock()
	b := approval.NewMemoryBackend()
	s, _ := newService(t, b, approval.Auto{Grant: true}, c)
	b.SetFailure(errors.New("database is locked"))
	_, err := s.Authorize(ctx, request(t, "run-1", `{}`, approval.ScopeOnce))
	wantReason(t, "store down", err, capability.ReasonApprovalStoreUnavailable)
	_, err = s.Redeem(ctx, "apr_x", "run-1", hashOf(t, "run-1", `{}`))
	wantReason(t, "store down redeem", err, capability.ReasonApprovalStoreUnavailable)
	b.SetFailure(nil)

	// An approval that cannot be audited is refused, and its use closed.
	s2, err := approval.NewService(b, &approval.Options{Sink: brokenSink{}, Approver: approval.Auto{Grant: true}, Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s2.Authorize(ctx, request(t, "run-2", `{}`, approval.ScopeOnce))
	wantReason(t, "audit down", err, capability.ReasonApprovalStoreUnavailable)
	if tks, _ := s2.Unfinished(ctx, "run-2"); len(tks) != 0 {
		t.Errorf("Unfinished after refused consume = %v, want none", tks)
	}
	if _, err := approval.NewService(b, &approval.Options{}); err == nil {
		t.Error("NewService without a sink succeeded")
	}
}

func TestScopes(t *testing.T) {
	for name, b := range backends(t) {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			c := newClock()
			var asked int
			ap := approverFunc(func(r approval.Record) bool { asked++; return true })
			s, _ := newService(t, b, ap, c)
			for _, scope := range []approval.Scope{approval.ScopeRun, approval.ScopeSession} {
				run := "run-" + string(scope)
				asked = 0
				req := request(t, run, `{"n":1}`, scope)
				t1, err := s.Authorize(ctx, req)
				if err != nil {
					t.Fatal(err)
				}
				t2, err := s.Authorize(ctx, req)
				if err != nil {
					t.Fatal(err)
				}
				if asked != 1 || t1.ApprovalID != t2.ApprovalID || t1.IdempotencyKey == t2.IdempotencyKey {
					t.Errorf("%s: asked %d, tickets %+v %+v; want one approval, two distinct keys", scope, asked, t1, t2)
				}
				// A different argument is a different action.
				t3, err := s.Authorize(ctx, request(t, run, `{"n":2}`, scope))
				if err != nil || t3.ApprovalID == t1.ApprovalID || asked != 2 {
					t.Errorf("%s: changed argument reused approval: %+v asked %d", scope, t3, asked)
				}
				// Another run presenting it is refused.
				_, err = s.Redeem(ctx, t1.ApprovalID, "run-other", req.ActionHash)
				wantReason(t, string(scope)+" other run", err, capability.ReasonApprovalOtherRun)
			}
		})
	}
}

type approverFunc func(approval.Record) bool

func (f approverFunc) Approve(_ context.Context, r approval.Record) (approval.Verdict, error) {
	return approval.Verdict{Approve: f(r), By: "test"}, nil
}

// TestRedeemOnceConcurrently: of many concurrent redeemers of one "once"
// approval, exactly one wins.
func TestRedeemOnceConcurrently(t *testing.T) {
	for name, b := range backends(t) {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			c := newClock()
			s, _ := newService(t, b, nil, c)
			req := request(t, "run-1", `{}`, approval.ScopeOnce)
			_, _ = s.Authorize(ctx, req)
			recs, _ := s.List(ctx, approval.ListFilter{RunID: "run-1"})
			if _, err := s.Decide(ctx, recs[0].ID, true, "cli:bob", ""); err != nil {
				t.Fatal(err)
			}
			var wins, consumed int
			var mu sync.Mutex
			var wg sync.WaitGroup
			for range 16 {
				wg.Go(func() {
					_, err := s.Redeem(ctx, recs[0].ID, req.RunID, req.ActionHash)
					mu.Lock()
					defer mu.Unlock()
					switch capability.ReasonOf(err) {
					case "":
						wins++
					case capability.ReasonApprovalConsumed:
						consumed++
					default:
						t.Errorf("Redeem = %v", err)
					}
				})
			}
			wg.Wait()
			if wins != 1 || consumed != 15 {
				t.Errorf("wins %d, consumed %d; want 1 and 15", wins, consumed)
			}
		})
	}
}

// TestWaiterSeesDecisionFromElsewhere: a headless run waits, another
// service on the same store (another process) approves.
func TestWaiterSeesDecisionFromElsewhere(t *testing.T) {
	for name, b := range backends(t) {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			c := newClock()
			run, _ := newService(t, b, approval.Waiter{Store: b, Poll: 5 * time.Millisecond}, c)
			cli, _ := newService(t, b, nil, c)
			done := make(chan error, 1)
			req := request(t, "run-w", `{}`, approval.ScopeOnce)
			go func() { _, err := run.Authorize(ctx, req); done <- err }()
			var id string
			for id == "" {
				recs, _ := cli.List(ctx, approval.ListFilter{State: approval.StatePending, RunID: "run-w"})
				if len(recs) > 0 {
					id = recs[0].ID
				}
				time.Sleep(time.Millisecond)
			}
			if _, err := cli.Decide(ctx, id, true, "cli:bob", "looks right"); err != nil {
				t.Fatal(err)
			}
			if err := <-done; err != nil {
				t.Fatalf("Authorize = %v", err)
			}
			rec, _ := cli.Get(ctx, id)
			if rec.State != approval.StateConsumed || rec.DecidedBy != "cli:bob" {
				t.Errorf("record = %+v", rec)
			}
		})
	}
}

// refusingSink is an audit sink that refuses the events of one type (a
// full disk, a database refusing the write) and records the others.
type refusingSink struct {
	audit.Sink
	refuse string
}

func (s refusingSink) Record(ctx context.Context, e audit.Event) error {
	if e.Type == s.refuse {
		return errors.New("audit: disk full")
	}
	return s.Sink.Record(ctx, e)
}

// TestUnauditedDecisionIsNotMade: a decision whose audit event cannot be
// written is refused with APPROVAL_STORE_UNAVAILABLE and leaves the
// request pending and undecided, so no grant (or denial) is in force
// without its record: a later redeem finds it pending, and nothing was
// audited as granted or consumed.
func TestUnauditedDecisionIsNotMade(t *testing.T) {
	for name, b := range backends(t) {
		for _, approve := range []bool{true, false} {
			t.Run(fmt.Sprint(name, "/approve=", approve), func(t *testing.T) {
				ctx := t.Context()
				c := newClock()
				log := audit.NewMemory()
				t.Cleanup(func() { log.Close() })
				refused := audit.TypeApprovalDenied
				if approve {
					refused = audit.TypeApprovalGranted
				}
				s, err := approval.NewService(b, &approval.Options{Sink: refusingSink{log, refused}, Now: c.Now})
				if err != nil {
					t.Fatal(err)
				}
				run := "run-unaudited-" + fmt.Sprint(approve)
				req := request(t, run, `{"n":1}`, approval.ScopeOnce)
				_, err = s.Authorize(ctx, req)
				wantReason(t, "file", err, capability.ReasonApprovalRequired)
				recs, _ := s.List(ctx, approval.ListFilter{RunID: run})
				if len(recs) != 1 {
					t.Fatalf("records = %v", recs)
				}
				_, err = s.Decide(ctx, recs[0].ID, approve, "team:alice", "ok")
				wantReason(t, "unaudited decide", err, capability.ReasonApprovalStoreUnavailable)
				rec, err := s.Get(ctx, recs[0].ID)
				if err != nil || rec.State != approval.StatePending || rec.DecidedBy != "" || rec.Why != "" || !rec.Decided.IsZero() {
					t.Errorf("after the unaudited decision: %+v, %v; want it pending and undecided", rec, err)
				}
				_, err = s.Redeem(ctx, rec.ID, run, req.ActionHash)
				wantReason(t, "redeem", err, capability.ReasonApprovalRequired)
				evs, err := log.Query(ctx, audit.Filter{RunID: run})
				if err != nil {
					t.Fatal(err)
				}
				for _, e := range evs {
					if e.Event.Type != audit.TypeApprovalRequested {
						t.Errorf("audited %s after the unaudited decision", e.Event.Type)
					}
				}
			})
		}
	}
}

// TestGrantIsForWhoAsked: a grant is redeemed only by a request of the
// principal chain that asked for it; the same action asked by another
// chain (another runner's token, another agent) is a new pending request,
// and the grant stays unused for the chain it was given to.
func TestGrantIsForWhoAsked(t *testing.T) {
	for name, b := range backends(t) {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			s, _ := newService(t, b, nil, newClock())
			req := request(t, "run-who-"+name, `{"n":1}`, approval.ScopeRun)
			_, err := s.Authorize(ctx, req)
			wantReason(t, "file", err, capability.ReasonApprovalRequired)
			recs, _ := s.List(ctx, approval.ListFilter{RunID: req.RunID})
			if _, err := s.Decide(ctx, recs[0].ID, true, "team:alice", "ok"); err != nil {
				t.Fatal(err)
			}
			other := req
			other.Principals = []string{"user:alice", "team:runner-2"}
			_, err = s.Authorize(ctx, other)
			wantReason(t, "another chain", err, capability.ReasonApprovalRequired)
			if rec, _ := s.Get(ctx, recs[0].ID); rec.Uses != 0 {
				t.Errorf("another chain used the grant: %d uses", rec.Uses)
			}
			if tk, err := s.Authorize(ctx, req); err != nil || tk.ApprovalID != recs[0].ID {
				t.Errorf("the asking chain redeems: %v, %v", tk, err)
			}
		})
	}
}

// TestUnauditedRequestIsWithdrawn: a request whose approval_requested
// event (with its preview) cannot be written is refused with
// APPROVAL_STORE_UNAVAILABLE and is not left pending for anyone to
// approve: deciding it fails, and the same request asked again (the run
// retried once the audit log works) is a new request, audited, that
// waits for its own decision.
func TestUnauditedRequestIsWithdrawn(t *testing.T) {
	for name, b := range backends(t) {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			c := newClock()
			log := audit.NewMemory()
			t.Cleanup(func() { log.Close() })
			broken, err := approval.NewService(b, &approval.Options{Sink: refusingSink{log, audit.TypeApprovalRequested}, Now: c.Now})
			if err != nil {
				t.Fatal(err)
			}
			req := request(t, "run-unasked-"+name, `{"n":1}`, approval.ScopeOnce)
			_, err = broken.Authorize(ctx, req)
			wantReason(t, "unaudited request", err, capability.ReasonApprovalStoreUnavailable)
			recs, _ := broken.List(ctx, approval.ListFilter{RunID: req.RunID})
			if len(recs) != 1 || recs[0].State == approval.StatePending {
				t.Fatalf("after the unaudited request: %+v, want it withdrawn", recs)
			}
			if _, err := broken.Decide(ctx, recs[0].ID, true, "team:alice", "ok"); err == nil {
				t.Error("the unaudited request was approved")
			}
			s, _ := newService(t, b, nil, c)
			_, err = s.Authorize(ctx, req)
			wantReason(t, "asked again", err, capability.ReasonApprovalRequired)
			if got, _ := s.List(ctx, approval.ListFilter{RunID: req.RunID, State: approval.StatePending}); len(got) != 1 || got[0].ID == recs[0].ID {
				t.Errorf("pending after asking again = %+v, want one new request", got)
			}
		})
	}
}
