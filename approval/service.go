package approval

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/norma-run/norma/audit"
	"github.com/norma-run/norma/capability"
)

// DefaultTTL is how long a request stays answerable when it names no expiry.
const DefaultTTL = 10 * time.Minute

// Options configures a [Service].
type Options struct {
	// Sink receives one event per state change. Required: approvals that
	// cannot be audited are refused.
	Sink audit.Sink
	// Approver is asked about new requests. Nil means nobody can answer
	// now: Authorize stores the request and returns APPROVAL_REQUIRED with
	// its id, for `norma approvals approve ID` and a later retry.
	Approver Approver
	// Redactor is applied to previews, targets and reasons before they are
	// stored. Nil means they are only bounded in length.
	Redactor audit.Redactor
	// TTL is the default lifetime of a request; zero means DefaultTTL.
	TTL time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Service creates, decides and consumes approvals over a [Backend]. It is
// safe for concurrent use, and several processes may share one database.
// Every error it returns that denies an action is an *capability.Error.
type Service struct {
	b        Backend
	sink     audit.Sink
	approver Approver
	redactor audit.Redactor
	ttl      time.Duration
	now      func() time.Time
}

// NewService returns a Service over b.
func NewService(b Backend, opts *Options) (*Service, error) {
	if b == nil {
		return nil, errors.New("approval: nil backend")
	}
	if opts == nil || opts.Sink == nil {
		return nil, errors.New("approval: an audit sink is required")
	}
	if opts.TTL < 0 {
		return nil, fmt.Errorf("approval: negative TTL %v", opts.TTL)
	}
	s := &Service{b: b, sink: opts.Sink, approver: opts.Approver, redactor: opts.Redactor, ttl: opts.TTL, now: opts.Now}
	if s.ttl == 0 {
		s.ttl = DefaultTTL
	}
	if s.now == nil {
		s.now = time.Now
	}
	return s, nil
}

func deny(reason capability.Reason, req, detail string) *capability.Error {
	return &capability.Error{
		Decision: capability.Decision{Mode: capability.Deny, Reason: reason, Layer: "approval", Request: req},
		Detail:   detail,
	}
}

func storeErr(op string, err error) error {
	if ce, ok := errors.AsType[*capability.Error](err); ok {
		return ce
	}
	return deny(capability.ReasonApprovalStoreUnavailable, "", "approval: "+op+": "+err.Error())
}

func newID() (string, error) {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return "apr_" + hex.EncodeToString(b[:]), nil
}

func (s *Service) clean(v string, max int) string {
	if s.redactor != nil && v != "" {
		v = s.redactor.Redact(v)
	}
	if len(v) <= max {
		return v
	}
	cut := max - len("…")
	for cut > 0 && !utf8.RuneStart(v[cut]) {
		cut--
	}
	return v[:cut] + "…"
}

// cleanPreview is the stored form of a preview: redacted, then bounded
// with BoundPreview's explicit marker.
func (s *Service) cleanPreview(v string) string {
	if s.redactor != nil && v != "" {
		v = s.redactor.Redact(v)
	}
	return BoundPreview(v)
}

func validHash(h string) bool {
	x, ok := strings.CutPrefix(h, "sha256:")
	if !ok || len(x) != 64 {
		return false
	}
	_, err := hex.DecodeString(x)
	return err == nil
}

// Authorize returns a ticket for exactly one execution of the action
// req.ActionHash in run req.RunID. It reuses a granted approval for the same
// action, run, preview and principal chain when its scope allows, waits on
// a pending one, or stores req as a new request (committed before the
// approver is asked), asks the approver, records the decision and consumes
// it. Any failure denies with
// an *capability.Error. Authorize implements [Authorizer]; a nil Service
// denies with APPROVAL_REQUIRED.
func (s *Service) Authorize(ctx context.Context, req Request) (Ticket, error) {
	if s == nil {
		return Ticket{}, deny(capability.ReasonApprovalRequired, req.Target, "approval: no approval service")
	}
	now := s.now()
	if req.RunID == "" || req.Tool == "" || !validHash(req.ActionHash) {
		return Ticket{}, deny(capability.ReasonInvalidRequest, req.Tool, "approval: request needs a run id, a tool and a sha256: action hash")
	}
	if req.Scope == "" {
		req.Scope = ScopeOnce
	}
	if !req.Scope.Valid() {
		return Ticket{}, deny(capability.ReasonInvalidRequest, req.Tool, "approval: unknown scope "+strconv.Quote(string(req.Scope)))
	}
	if req.Expires.IsZero() {
		req.Expires = now.Add(s.ttl)
	}
	if !req.Expires.After(now) {
		return Ticket{}, deny(capability.ReasonApprovalExpired, req.Tool, "approval: request expires before it is made")
	}

	// The stored form of the preview, compared with the stored requests:
	// an approval was given for what its preview showed, so a request
	// whose preview differs (the file an Edit changes has changed since)
	// neither reuses nor waits on it. It was given to whoever asked (the
	// principal chain, ending in the team token that filed it), so a
	// request by anyone else neither redeems nor waits on it either.
	req.Target = s.clean(req.Target, audit.MaxFieldLen)
	req.Preview = s.cleanPreview(req.Preview)
	prior, err := s.b.ListApprovals(ctx, ListFilter{RunID: req.RunID, ActionHash: req.ActionHash, Limit: 100})
	if err != nil {
		return Ticket{}, storeErr("list", err)
	}
	var rec *Record
	for i, r := range prior {
		if !now.Before(r.Expires) || r.Preview != req.Preview || !slices.Equal(r.Principals, req.Principals) {
			continue
		}
		switch {
		case r.State == StateGranted && (r.Scope.reusable() || r.Uses == 0):
			t, err := s.Redeem(ctx, r.ID, req.RunID, req.ActionHash)
			if err == nil || capability.ReasonOf(err) == capability.ReasonApprovalStoreUnavailable {
				return t, err
			}
		case r.State == StatePending && rec == nil:
			rec = &prior[i]
		}
	}
	if rec == nil {
		id, err := newID()
		if err != nil {
			return Ticket{}, storeErr("id", err)
		}
		req.ID = id
		req.Created = now
		r := Record{Request: req, State: StatePending}
		if err := s.b.CreateApproval(ctx, r); err != nil {
			return Ticket{}, storeErr("create", err)
		}
		if err := s.emit(ctx, audit.TypeApprovalRequested, r, nil); err != nil {
			// Not audited, so not asked: a request whose preview is not in
			// the log must not be offered to anyone to approve.
			s.withdraw(ctx, id)
			return Ticket{}, err
		}
		rec = &r
	}
	if s.approver == nil {
		return Ticket{}, deny(capability.ReasonApprovalRequired, rec.Tool,
			"approval "+rec.ID+" is pending: run `norma approvals approve "+rec.ID+"`")
	}

	actx, cancel := context.WithDeadline(ctx, rec.Expires)
	v, aerr := s.approver.Approve(actx, *rec)
	cancel()
	if aerr != nil {
		if !s.now().Before(rec.Expires) || errors.Is(aerr, ErrNoDecision) {
			if _, err := s.expire(ctx, rec.ID); err != nil {
				return Ticket{}, err
			}
			return Ticket{}, deny(capability.ReasonApprovalExpired, rec.Tool, "approval "+rec.ID+": no decision before it expired")
		}
		return Ticket{}, deny(capability.ReasonApprovalDenied, rec.Tool, "approval "+rec.ID+": approver failed: "+aerr.Error())
	}
	if _, _, err := s.decide(ctx, rec.ID, v); err != nil {
		return Ticket{}, err
	}
	return s.Redeem(ctx, rec.ID, req.RunID, req.ActionHash)
}

var errUnchanged = errors.New("approval: unchanged")

// decide records v on a pending approval. changed is false when the
// approval had already left the pending state (decided elsewhere); then
// the stored record is returned unchanged.
func (s *Service) decide(ctx context.Context, id string, v Verdict) (rec Record, changed bool, err error) {
	now := s.now()
	expired := false
	rec, err = s.b.UpdateApproval(ctx, id, func(r *Record) (*Use, error) {
		if r.State != StatePending {
			return nil, errUnchanged
		}
		if !now.Before(r.Expires) {
			r.State = StateExpired
			expired = true
			return nil, nil
		}
		r.State = StateDenied
		if v.Approve {
			r.State = StateGranted
		}
		r.DecidedBy = s.clean(v.By, 128)
		r.Why = s.clean(v.Why, maxWhy)
		r.Decided = now
		return nil, nil
	})
	switch {
	case errors.Is(err, errUnchanged):
		rec, err = s.b.GetApproval(ctx, id)
		if err != nil {
			return Record{}, false, storeErr("get", err)
		}
		return rec, false, nil
	case errors.Is(err, ErrNotFound):
		return Record{}, false, fmt.Errorf("approval %s: %w", id, ErrNotFound)
	case err != nil:
		return Record{}, false, storeErr("decide", err)
	}
	typ := audit.TypeApprovalDenied
	switch {
	case expired:
		typ = audit.TypeApprovalExpired
	case rec.State == StateGranted:
		typ = audit.TypeApprovalGranted
	}
	if err := s.emit(ctx, typ, rec, nil); err != nil {
		if !expired {
			// Not audited, so not decided: every answer is in the audit
			// log, and a grant without its record must not be redeemed.
			rec = s.undecide(ctx, rec)
		}
		return rec, false, err
	}
	return rec, true, nil
}

// withdraw marks a pending request whose approval_requested event could
// not be written expired, without an event (there is none to follow): it
// can no longer be decided or redeemed. A failure leaves it pending; it
// then expires at its time.
func (s *Service) withdraw(ctx context.Context, id string) {
	_, _ = s.b.UpdateApproval(context.WithoutCancel(ctx), id, func(r *Record) (*Use, error) {
		if r.State != StatePending {
			return nil, errUnchanged
		}
		r.State = StateExpired
		return nil, nil
	})
}

// undecide puts a decision whose audit event could not be written back
// to pending, unless the record moved on meanwhile (a use that redeemed
// it in between was audited itself, naming the approver). It returns the
// record as it now stands; a failure leaves it as decided (the caller has
// the audit error to report).
func (s *Service) undecide(ctx context.Context, d Record) Record {
	rec, err := s.b.UpdateApproval(context.WithoutCancel(ctx), d.ID, func(r *Record) (*Use, error) {
		if r.State != d.State || r.Uses != d.Uses || r.DecidedBy != d.DecidedBy {
			return nil, errUnchanged
		}
		r.State, r.DecidedBy, r.Why, r.Decided = StatePending, "", "", time.Time{}
		return nil, nil
	})
	if err != nil {
		return d
	}
	return rec
}

// Decide records a human decision on a pending approval, for `norma
// approvals approve|deny`. Deciding an approval that was already decided is
// an error that names its state; deciding one past its expiry marks it
// expired and returns APPROVAL_EXPIRED.
func (s *Service) Decide(ctx context.Context, id string, approve bool, who, why string) (Record, error) {
	rec, changed, err := s.decide(ctx, id, Verdict{Approve: approve, By: who, Why: why})
	if err != nil {
		return rec, err
	}
	if rec.State == StateExpired {
		return rec, deny(capability.ReasonApprovalExpired, rec.Tool, "approval "+id+" has expired")
	}
	if !changed {
		return rec, fmt.Errorf("approval %s is already %s", id, rec.State)
	}
	return rec, nil
}

// expire marks a pending or granted approval expired.
func (s *Service) expire(ctx context.Context, id string) (Record, error) {
	changed := false
	rec, err := s.b.UpdateApproval(ctx, id, func(r *Record) (*Use, error) {
		if r.State != StatePending && r.State != StateGranted {
			return nil, errUnchanged
		}
		r.State = StateExpired
		changed = true
		return nil, nil
	})
	if errors.Is(err, errUnchanged) {
		return s.Get(ctx, id)
	}
	if err != nil {
		return Record{}, storeErr("expire", err)
	}
	if changed {
		if err := s.emit(ctx, audit.TypeApprovalExpired, rec, nil); err != nil {
			return rec, err
		}
	}
	return rec, nil
}

// check returns why r cannot be consumed for (runID, actionHash) at now,
// or nil.
func check(r *Record, runID, actionHash string, now time.Time) *capability.Error {
	req := r.Tool
	switch {
	case r.State == StateDenied:
		return deny(capability.ReasonApprovalDenied, req, "approval "+r.ID+" was denied")
	case r.RunID != runID:
		return deny(capability.ReasonApprovalOtherRun, req, "approval "+r.ID+" belongs to another run")
	case r.ActionHash != actionHash:
		return deny(capability.ReasonApprovalMismatch, req, "approval "+r.ID+" was given for a different action")
	case r.State == StateConsumed || (r.Scope == ScopeOnce && r.Uses > 0):
		return deny(capability.ReasonApprovalConsumed, req, "approval "+r.ID+" was already used")
	case r.State == StateExpired || !now.Before(r.Expires):
		return deny(capability.ReasonApprovalExpired, req, "approval "+r.ID+" has expired")
	case r.State == StatePending:
		return deny(capability.ReasonApprovalRequired, req, "approval "+r.ID+" is still pending")
	case r.State != StateGranted:
		return deny(capability.ReasonApprovalDenied, req, "approval "+r.ID+" is in unknown state "+string(r.State))
	}
	return nil
}

// Redeem consumes approval id for one execution of the action actionHash
// in run runID, atomically: of any number of concurrent callers (in any
// number of processes) at most one succeeds for a "once" approval. It
// fails with APPROVAL_DENIED, APPROVAL_OTHER_RUN, APPROVAL_MISMATCH (also
// for an unknown id), APPROVAL_CONSUMED, APPROVAL_EXPIRED,
// APPROVAL_REQUIRED (still pending) or APPROVAL_STORE_UNAVAILABLE.
func (s *Service) Redeem(ctx context.Context, id, runID, actionHash string) (Ticket, error) {
	now := s.now()
	var expired *capability.Error
	rec, err := s.b.UpdateApproval(ctx, id, func(r *Record) (*Use, error) {
		if d := check(r, runID, actionHash, now); d != nil {
			if d.Decision.Reason == capability.ReasonApprovalExpired && r.State != StateExpired {
				r.State = StateExpired
				expired = d
				return nil, nil
			}
			return nil, d
		}
		r.Uses++
		if r.Scope == ScopeOnce {
			r.State = StateConsumed
		}
		return &Use{
			ApprovalID: r.ID, N: r.Uses, IdempotencyKey: IdempotencyKey(r.ID, actionHash, r.Uses),
			RunID: runID, ActionHash: actionHash, Consumed: now,
		}, nil
	})
	if errors.Is(err, ErrNotFound) {
		return Ticket{}, deny(capability.ReasonApprovalMismatch, "", "approval "+id+" does not exist")
	}
	if err != nil {
		return Ticket{}, storeErr("consume", err)
	}
	if expired != nil {
		if err := s.emit(ctx, audit.TypeApprovalExpired, rec, nil); err != nil {
			return Ticket{}, err
		}
		return Ticket{}, expired
	}
	u := Use{ApprovalID: rec.ID, N: rec.Uses, IdempotencyKey: IdempotencyKey(rec.ID, actionHash, rec.Uses), RunID: runID, ActionHash: actionHash}
	if err := s.emit(ctx, audit.TypeApprovalConsumed, rec, &u); err != nil {
		// Not audited, so not executed: close the use so recovery does
		// not run it either.
		_ = s.b.FinishUse(context.WithoutCancel(ctx), u.IdempotencyKey, s.now())
		return Ticket{}, err
	}
	return u.ticket(), nil
}

// Finish marks the execution of t done (successful or not), so that
// recovery after a crash does not offer it again. It implements
// [Finisher].
func (s *Service) Finish(ctx context.Context, t Ticket) error {
	if s == nil {
		return errors.New("approval: no approval service")
	}
	if err := s.b.FinishUse(ctx, t.IdempotencyKey, s.now()); err != nil {
		return storeErr("finish", err)
	}
	return nil
}

// Unfinished returns the tickets of run runID that were consumed but never
// finished: executions a crash may have interrupted. Re-run each with the
// same idempotency key, then Finish it.
func (s *Service) Unfinished(ctx context.Context, runID string) ([]Ticket, error) {
	uses, err := s.b.UnfinishedUses(ctx, runID)
	if err != nil {
		return nil, storeErr("unfinished", err)
	}
	out := make([]Ticket, len(uses))
	for i, u := range uses {
		out[i] = u.ticket()
	}
	return out, nil
}

// Get returns one approval; an unknown id is an error wrapping
// [ErrNotFound].
func (s *Service) Get(ctx context.Context, id string) (Record, error) {
	r, err := s.b.GetApproval(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return Record{}, err
	}
	if err != nil {
		return Record{}, storeErr("get", err)
	}
	return r, nil
}

// GetApproval is Get; it lets a Service serve a [Waiter].
func (s *Service) GetApproval(ctx context.Context, id string) (Record, error) { return s.Get(ctx, id) }

// List returns approvals, newest first.
func (s *Service) List(ctx context.Context, f ListFilter) ([]Record, error) {
	rs, err := s.b.ListApprovals(ctx, f)
	if err != nil {
		return nil, storeErr("list", err)
	}
	return rs, nil
}

// emit writes the audit event for a state change of r. The event carries
// a hash of the target, never the target. It is written even when ctx was
// canceled; failure denies with APPROVAL_STORE_UNAVAILABLE.
func (s *Service) emit(ctx context.Context, typ string, r Record, u *Use) error {
	e := audit.Event{
		Type: typ, RunID: r.RunID, Principal: strings.Join(r.Principals, " > "),
		Plugin: r.Plugin, PluginVersion: r.PluginVersion, Tool: r.Tool,
		ManifestDigest: r.ManifestDigest, ApprovalID: r.ID, TargetHash: audit.HashTarget(r.Target),
		Detail: map[string]string{"effect": r.Effect, "scope": string(r.Scope), "actionHash": r.ActionHash, "state": string(r.State)},
	}
	if r.Preview != "" {
		// The digest names the exact preview that was asked and decided
		// on; the request event also carries its head (the log bounds
		// every field and marks a cut).
		e.Detail["previewDigest"] = PreviewDigest(r.Preview)
		if typ == audit.TypeApprovalRequested {
			e.Detail["preview"] = r.Preview
		}
	}
	switch typ {
	case audit.TypeApprovalGranted, audit.TypeApprovalConsumed:
		e.Decision = capability.Allow.String()
	case audit.TypeApprovalDenied:
		e.Decision, e.Reason = capability.Deny.String(), string(capability.ReasonApprovalDenied)
	case audit.TypeApprovalExpired:
		e.Decision, e.Reason = capability.Deny.String(), string(capability.ReasonApprovalExpired)
	case audit.TypeApprovalRequested:
		e.Decision, e.Reason = capability.ApprovalRequired.String(), string(capability.ReasonApprovalRequired)
	}
	if r.DecidedBy != "" {
		e.Detail["by"] = r.DecidedBy
	}
	if r.Why != "" && (typ == audit.TypeApprovalGranted || typ == audit.TypeApprovalDenied) {
		// The reason is part of the answer: the chain keeps it, so a
		// rewrite of the stored record cannot change why it was given.
		e.Detail["why"] = r.Why
	}
	if u != nil {
		e.Detail["use"] = strconv.Itoa(u.N)
		e.Detail["idempotencyKey"] = u.IdempotencyKey
	}
	if err := s.sink.Record(context.WithoutCancel(ctx), e); err != nil {
		return storeErr("audit", err)
	}
	return nil
}
