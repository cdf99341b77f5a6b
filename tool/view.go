package tool

import (
	"errors"
	"fmt"
	"slices"
	"sync"
)

// View is what one principal chain in one run can see and call. The set of
// tools listed to the model (List) and the set that Lookup returns are the
// same set by construction. Views are safe for concurrent use.
type View struct {
	reg        *Registry
	run        string
	principals []string
	parent     *View
	// allowed is nil for "every tool of the registry"; otherwise the names
	// this view may ever use.
	allowed map[string]bool

	mu       sync.RWMutex
	unlocked map[string]bool
	children []*View
}

// OpenRun returns the root view of run for principal, creating it when
// needed. A root view allows every registered tool.
func (r *Registry) OpenRun(run, principal string) (*View, error) {
	if run == "" || principal == "" {
		return nil, errors.New("tool: OpenRun needs a run id and a principal")
	}
	k := viewKey{run, principal}
	r.mu.Lock()
	defer r.mu.Unlock()
	if v := r.views[k]; v != nil {
		return v, nil
	}
	v := &View{reg: r, run: run, principals: []string{principal}, unlocked: map[string]bool{}}
	r.views[k] = v
	return v, nil
}

// View returns the open view of run for the principal chain.
func (r *Registry) View(run string, principals []string) (*View, error) {
	if len(principals) == 0 {
		return nil, ErrNoView
	}
	r.mu.RLock()
	v := r.views[viewKey{run, chainKey(principals)}]
	r.mu.RUnlock()
	if v == nil {
		return nil, ErrNoView
	}
	return v, nil
}

// CloseRun forgets every view of run.
func (r *Registry) CloseRun(run string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k := range r.views {
		if k.run == run {
			delete(r.views, k)
		}
	}
}

// RunID returns the view's run.
func (v *View) RunID() string { return v.run }

// Principals returns a copy of the view's principal chain, outermost first.
func (v *View) Principals() []string { return slices.Clone(v.principals) }

// Subagent derives the view of a subagent called principal. tools names the
// tools it may use; nil means all of the parent's. The child can never call
// a tool its parent cannot call at that moment (Lookup checks the whole
// chain), it starts with the parent's unlocks that it is allowed, and its
// own unlocks stay its own.
func (v *View) Subagent(principal string, tools []string) (*View, error) {
	if principal == "" {
		return nil, errors.New("tool: Subagent needs a principal")
	}
	chain := append(slices.Clone(v.principals), principal)
	child := &View{reg: v.reg, run: v.run, principals: chain, parent: v, unlocked: map[string]bool{}}
	if tools != nil {
		child.allowed = make(map[string]bool, len(tools))
		for _, n := range tools {
			if v.mayUse(n) {
				child.allowed[n] = true
			}
		}
	} else if v.allowed != nil {
		child.allowed = make(map[string]bool, len(v.allowed))
		for n := range v.allowed {
			child.allowed[n] = true
		}
	}
	k := viewKey{v.run, chainKey(chain)}
	v.reg.mu.Lock()
	if _, ok := v.reg.views[k]; ok {
		v.reg.mu.Unlock()
		return nil, fmt.Errorf("tool: a view for %q in run %s already exists", principal, v.run)
	}
	v.reg.views[k] = child
	v.reg.mu.Unlock()
	v.mu.Lock()
	for n := range v.unlocked {
		if child.mayUse(n) {
			child.unlocked[n] = true
		}
	}
	v.children = append(v.children, child)
	v.mu.Unlock()
	return child, nil
}

// mayUse reports whether name is within the allowed sets of v and of every
// ancestor (ignoring visibility and unlocks).
func (v *View) mayUse(name string) bool {
	for w := v; w != nil; w = w.parent {
		if w.allowed != nil && !w.allowed[name] {
			return false
		}
	}
	return true
}

// callable reports whether e can be called through v alone.
func (v *View) callable(e *Entry) bool {
	if v.allowed != nil && !v.allowed[e.Name()] {
		return false
	}
	if e.vis == Visible {
		return true
	}
	v.mu.RLock()
	ok := v.unlocked[e.Name()]
	v.mu.RUnlock()
	return ok
}

// Lookup returns the entry for name when this view can call it: the tool
// is registered, allowed here and in every ancestor view, and visible or
// unlocked here and in every ancestor. Anything else is (nil, false); the
// gate answers TOOL_UNKNOWN without saying which condition failed.
func (v *View) Lookup(name string) (*Entry, bool) {
	e := v.reg.entry(name)
	if e == nil {
		return nil, false
	}
	for w := v; w != nil; w = w.parent {
		if !w.callable(e) {
			return nil, false
		}
	}
	return e, true
}

// LookupUnlockable is Lookup as it would answer after UnlockChain(name): the
// entry of a callable tool, or of a deferred one this view may unlock. It
// unlocks nothing; deciding a call without making it (gate.Gate.Explain of
// ExecuteExtraTool) uses it.
func (v *View) LookupUnlockable(name string) (*Entry, bool) {
	if e, ok := v.Lookup(name); ok {
		return e, true
	}
	if slices.Contains(v.Deferred(), name) {
		return v.reg.entry(name), true
	}
	return nil, false
}

// List returns the entries the model is shown, in registration order: the
// same set Lookup answers for.
func (v *View) List() []*Entry {
	v.reg.mu.RLock()
	all := make([]*Entry, 0, len(v.reg.entries))
	for _, e := range v.reg.entries {
		all = append(all, e)
	}
	v.reg.mu.RUnlock()
	slices.SortFunc(all, func(a, b *Entry) int { return a.order - b.order })
	out := all[:0]
	for _, e := range all {
		if _, ok := v.Lookup(e.Name()); ok {
			out = append(out, e)
		}
	}
	return out
}

// Deferred returns the names of deferred tools this view could unlock,
// sorted: the catalog a tool search or ExecuteExtra works from.
func (v *View) Deferred() []string {
	var out []string
	for _, n := range v.reg.Names() {
		e := v.reg.entry(n)
		if e == nil || e.vis != Deferred || !v.mayUse(n) {
			continue
		}
		if _, ok := v.Lookup(n); !ok {
			out = append(out, n)
		}
	}
	return out
}

// Unlock makes a deferred or hidden tool callable in this view for the
// rest of the run. It fails for an unknown name or one this view may not
// use; unlocking a visible tool is a no-op. Unlocking in a subagent view does
// not unlock in the parent, so the child still cannot call the tool unless
// the parent can.
func (v *View) Unlock(name string) error {
	e := v.reg.entry(name)
	if e == nil {
		return fmt.Errorf("%w: %q", ErrNotFound, name)
	}
	if !v.mayUse(name) {
		return fmt.Errorf("tool: %q is not available to %v", name, v.principals)
	}
	if e.vis == Visible {
		return nil
	}
	v.mu.Lock()
	v.unlocked[name] = true
	v.mu.Unlock()
	return nil
}

// UnlockChain unlocks a deferred tool in this view and in every ancestor
// view of its chain. It is the deferred-tool path (ExecuteExtraTool): the
// model asked for the tool by name, so it becomes callable for the run along
// the chain that asked, which Lookup requires. It never widens: every view
// of the chain must already allow the tool, hidden tools are refused, and
// sibling views are not touched.
func (v *View) UnlockChain(name string) error {
	e := v.reg.entry(name)
	if e == nil {
		return fmt.Errorf("%w: %q", ErrNotFound, name)
	}
	if e.vis == Hidden {
		return fmt.Errorf("tool: %q is hidden; only the host can unlock it", name)
	}
	if !v.mayUse(name) {
		return fmt.Errorf("tool: %q is not available to %v", name, v.principals)
	}
	for w := v; w != nil; w = w.parent {
		if err := w.Unlock(name); err != nil {
			return err
		}
	}
	return nil
}

// ViewState is the serializable form of a view and its subagent views, part
// of a run's persisted state so that a resumed run restores exactly what was
// unlocked and what each subagent was allowed.
type ViewState struct {
	RunID      string   `json:"runId"`
	Principals []string `json:"principals"`
	// AllTools is true when the view allows every tool of its parent (or of
	// the registry for a root view); otherwise Allowed lists the names.
	AllTools bool        `json:"allTools"`
	Allowed  []string    `json:"allowed,omitempty"`
	Unlocked []string    `json:"unlocked,omitempty"`
	Children []ViewState `json:"children,omitempty"`
}

// State returns the view's state, sorted for stable encoding.
func (v *View) State() ViewState {
	s := ViewState{RunID: v.run, Principals: slices.Clone(v.principals), AllTools: v.allowed == nil}
	for n := range v.allowed {
		s.Allowed = append(s.Allowed, n)
	}
	slices.Sort(s.Allowed)
	v.mu.RLock()
	for n := range v.unlocked {
		s.Unlocked = append(s.Unlocked, n)
	}
	children := slices.Clone(v.children)
	v.mu.RUnlock()
	slices.Sort(s.Unlocked)
	for _, c := range children {
		s.Children = append(s.Children, c.State())
	}
	return s
}

// Restore re-opens a root view from its persisted state. Subagent views are
// derived again through Subagent and unlocks applied through Unlock, so a
// restored state can never be wider than deriving it afresh; names that are
// no longer registered are skipped (they cannot be called anyway).
func (r *Registry) Restore(s ViewState) (*View, error) {
	if len(s.Principals) != 1 {
		return nil, errors.New("tool: Restore takes the state of a root view")
	}
	if !s.AllTools {
		return nil, errors.New("tool: a root view allows every tool")
	}
	v, err := r.OpenRun(s.RunID, s.Principals[0])
	if err != nil {
		return nil, err
	}
	return v, v.restore(s)
}

func (v *View) restore(s ViewState) error {
	for _, n := range s.Unlocked {
		if err := v.Unlock(n); err != nil && !errors.Is(err, ErrNotFound) {
			return err
		}
	}
	for _, c := range s.Children {
		if len(c.Principals) != len(v.principals)+1 || !slices.Equal(c.Principals[:len(v.principals)], v.principals) {
			return fmt.Errorf("tool: Restore: child %v is not a subagent of %v", c.Principals, v.principals)
		}
		var tools []string
		if !c.AllTools {
			tools = c.Allowed
			if tools == nil {
				tools = []string{}
			}
		}
		child, err := v.Subagent(c.Principals[len(c.Principals)-1], tools)
		if err != nil {
			return err
		}
		if err := child.restore(c); err != nil {
			return err
		}
	}
	return nil
}
