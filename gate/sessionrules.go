package gate

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/policy"
)

// MaxSessionRules bounds the allow rules a session may add.
const MaxSessionRules = 256

// liveRules are the gate's permission rules: those of Options, compiled
// once, plus the allow rules added for the session. Readers load the
// current compiled set without a lock; AllowForSession recompiles under
// mu and swaps it in. Deny and ask rules never change.
type liveRules struct {
	mu      sync.Mutex
	base    policy.Rules
	session []string
	cur     atomic.Pointer[policy.RuleSet]
}

func (l *liveRules) init(base policy.Rules, set *policy.RuleSet) {
	l.base = policy.Rules{Allow: slices.Clone(base.Allow), Ask: slices.Clone(base.Ask), Deny: slices.Clone(base.Deny),
		Root: base.Root, Home: base.Home}
	l.cur.Store(set)
}

// current is the compiled set in force.
func (l *liveRules) current() *policy.RuleSet { return l.cur.Load() }

// Deny is policy.RuleSet.Deny on the current set.
func (l *liveRules) Deny(tool string, reqs []capability.Request) (string, bool) {
	return l.current().Deny(tool, reqs)
}

// Ask is policy.RuleSet.Ask on the current set.
func (l *liveRules) Ask(tool string, reqs []capability.Request) (string, bool) {
	return l.current().Ask(tool, reqs)
}

// Allow is policy.RuleSet.Allow on the current set.
func (l *liveRules) Allow(tool string, reqs []capability.Request, known bool) (string, bool) {
	return l.current().Allow(tool, reqs, known)
}

// AllowForSession adds an allow rule (the settings syntax of
// policy.Rules) for the later calls of this gate, as if it were one more
// entry of Options.Rules.Allow: deny rules still win, ask rules still ask,
// the capability policy still decides every request, and plan and dontAsk
// still refuse. Adding a rule already added is a no-op.
//
// It is the embedding program's door, for an approver's "yes for this
// session" (package agent calls it with the rules of policy.RulesFor when
// the person at the prompt answered so); nothing a model or a tool
// returns reaches it. A rule that does not parse, or one past
// [MaxSessionRules], is an error and nothing changes. Safe for concurrent
// use with Execute; a call already past its policy step is not affected.
func (g *Gate) AllowForSession(rule string) error {
	if err := policy.CheckRule(rule); err != nil {
		return fmt.Errorf("gate: session rule %q: %w", rule, err)
	}
	l := &g.rules
	l.mu.Lock()
	defer l.mu.Unlock()
	if slices.Contains(l.session, rule) {
		return nil
	}
	if len(l.session) >= MaxSessionRules {
		return fmt.Errorf("gate: session rule %q: the session already holds %d rules", rule, MaxSessionRules)
	}
	session := append(slices.Clone(l.session), rule)
	set, err := policy.CompileRules(policy.Rules{
		Allow: append(slices.Clone(l.base.Allow), session...),
		Ask:   l.base.Ask, Deny: l.base.Deny,
		// Where the rules' //abs and ~/ paths are: a session rule must
		// not unplace a deny.
		Root: l.base.Root, Home: l.base.Home,
	})
	if err != nil {
		return fmt.Errorf("gate: session rule %q: %w", rule, err)
	}
	l.session = session
	l.cur.Store(set)
	return nil
}

// SessionRules returns the allow rules added with AllowForSession, in
// order.
func (g *Gate) SessionRules() []string {
	g.rules.mu.Lock()
	defer g.rules.mu.Unlock()
	return slices.Clone(g.rules.session)
}

// rememberRules are the rules an approver may offer to remember for the
// call being approved: its exact rules (policy.RulesFor), only when what
// asks for approval is the tool's own judgment (an allow rule would have
// let it through; the capability policy allowed it) and the rules, added,
// would allow this very call. Otherwise nil: the call can only be
// approved once.
func (x *exec) rememberRules() []string {
	if x.dec.Mode != capability.ApprovalRequired || x.dec.Layer != capability.LayerTool || x.unknown != "" {
		return nil
	}
	name := x.entry.Name()
	rules, ok := policy.RulesFor(name, x.reqs)
	if !ok {
		return nil
	}
	set, err := policy.CompileRules(policy.Rules{Allow: rules})
	if err != nil {
		return nil
	}
	if _, ok := set.Allow(name, x.reqs, x.known); !ok {
		return nil
	}
	if _, ok := x.g.rules.Ask(name, x.reqs); ok {
		return nil
	}
	return rules
}
