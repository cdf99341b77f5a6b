package agent

import (
	"context"
	"errors"
	"path/filepath"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/norma-run/norma/approval"
	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/gate"
	"github.com/norma-run/norma/settings"
)

// MaxDenyReason bounds, in bytes, the reason of a no that the model is
// told.
const MaxDenyReason = 200

// remember applies a yes that reaches beyond its call: for
// approval.RememberSession the call's exact rules (as the gate derived
// them, approval.RulesOf of the request's context) become allow rules of
// this session's gate; for approval.RememberAlways they are also added to
// the workspace's .norma/settings.local.yaml first. Only an approver's
// verdict leads here, never a tool's output. A failure to write the file
// is logged and the rules still hold for the session.
func (a *sessionApprover) remember(ctx context.Context, rules []string, v approval.Verdict) {
	if !v.Approve || len(rules) == 0 || (v.Remember != approval.RememberSession && v.Remember != approval.RememberAlways) {
		return
	}
	s := a.s
	if v.Remember == approval.RememberAlways {
		switch ws, err := filepath.Abs(s.cfg.wsDir); {
		case s.cfg.wsDir == "":
			s.log.WarnContext(ctx, "agent: no workspace to remember the rules in; they hold for this session", "rules", rules)
		case err != nil:
			s.log.WarnContext(ctx, "agent: workspace", "err", err)
		default:
			if err := settings.AddLocalAllow(ws, rules...); err != nil {
				s.log.WarnContext(ctx, "agent: the rules were not written to "+settings.LocalFile+"; they hold for this session", "rules", rules, "err", err)
			} else if s.cfg.stateDir != "" {
				// The user said yes to these rules: they join the accepted
				// version of the file, so that the next run applies them.
				if err := settings.AcceptLocalAllow(s.cfg.stateDir, ws, rules...); err != nil {
					s.log.WarnContext(ctx, "agent: the rules were written to "+settings.LocalFile+" but not recorded as accepted; the next run holds them", "rules", rules, "err", err)
				}
			}
		}
	}
	for _, r := range rules {
		if err := s.g.AllowForSession(r); err != nil {
			s.log.WarnContext(ctx, "agent: session rule refused", "rule", r, "err", err)
		}
	}
}

// deniedBecause adds the reason of a no to the refusal the gate turns into
// the call's result, so that the model learns why: bounded to
// MaxDenyReason bytes, with Norma's markers escaped and quoted (one line,
// no control characters). Other errors are returned unchanged.
func deniedBecause(err error, v approval.Verdict) error {
	ce, ok := errors.AsType[*capability.Error](err)
	if !ok || v.Approve || v.Why == "" || ce.Decision.Reason != capability.ReasonApprovalDenied {
		return err
	}
	why := v.Why
	if len(why) > MaxDenyReason {
		cut := MaxDenyReason
		for cut > 0 && !utf8.RuneStart(why[cut]) {
			cut--
		}
		why = why[:cut] + "…"
	}
	return &capability.Error{Decision: ce.Decision, Detail: ce.Detail + "; reason: " + strconv.Quote(gate.EscapeMarkers(why)), Err: err}
}

func (p *pendingSlot) setVerdict(v approval.Verdict) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.verdict = &v
}

// answer returns the verdict the asker gave, if it gave one.
func (p *pendingSlot) answer() (approval.Verdict, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.verdict == nil {
		return approval.Verdict{}, false
	}
	return *p.verdict, true
}

// turnWaitKey carries the wait shared by the approval requests of one
// model turn: request-scoped metadata, behind a private key.
type turnWaitKey struct{}

type turnWait struct {
	mu       sync.Mutex
	deadline time.Time
}

// withTurnWait returns ctx with a fresh shared wait, unless ctx already
// has one (a subagent's turn inside a turn shares the outer one's).
func withTurnWait(ctx context.Context) context.Context {
	if _, ok := ctx.Value(turnWaitKey{}).(*turnWait); ok {
		return ctx
	}
	return context.WithValue(ctx, turnWaitKey{}, &turnWait{})
}

// waitBudget returns how long an approver may still wait at now: the
// first request of a turn starts a clock of wait, later ones get what is
// left. Outside a turn every request gets wait.
func waitBudget(ctx context.Context, wait time.Duration, now time.Time) time.Duration {
	tw, ok := ctx.Value(turnWaitKey{}).(*turnWait)
	if !ok || wait <= 0 {
		return wait
	}
	tw.mu.Lock()
	defer tw.mu.Unlock()
	if tw.deadline.IsZero() {
		tw.deadline = now.Add(wait)
	}
	return tw.deadline.Sub(now)
}
