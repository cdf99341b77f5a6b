package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/norma-run/norma/audit"
)

// Errors of the registry. Messages start with the package name.
var (
	ErrDuplicate = errors.New("tool: a tool with this name is already registered")
	ErrNotFound  = errors.New("tool: no tool with this name")
	ErrClaimed   = errors.New("tool: the registry's dispatcher was already claimed")
	ErrNoView    = errors.New("tool: no view for this run and principal chain")
)

// Visibility says when a registered tool is shown to the model and callable.
type Visibility uint8

// Visibilities.
const (
	// Visible tools are listed and callable in every view that allows them.
	Visible Visibility = iota
	// Deferred tools are named in a catalog (Deferred) but are neither listed
	// with their schema nor callable until unlocked for a run, for example by
	// the gate's ExecuteExtra.
	Deferred
	// Hidden tools are not even named; only the runtime can unlock them.
	Hidden
)

// String returns "visible", "deferred" or "hidden".
func (v Visibility) String() string {
	switch v {
	case Visible:
		return "visible"
	case Deferred:
		return "deferred"
	case Hidden:
		return "hidden"
	}
	return fmt.Sprintf("unknown(%d)", uint8(v))
}

// Plugin identifies the plugin a tool comes from. The zero value is a
// built-in tool.
type Plugin struct {
	ID             string `json:"id,omitempty"`
	Version        string `json:"version,omitempty"`
	ManifestDigest string `json:"manifestDigest,omitempty"`
}

// Ref returns "id@version", or "" for a built-in tool.
func (p Plugin) Ref() string {
	if p.ID == "" {
		return ""
	}
	return p.ID + "@" + p.Version
}

// Registration is a tool and how it is registered.
type Registration struct {
	Tool       CoreTool
	Plugin     Plugin
	Visibility Visibility
}

// Entry is a registered tool as everyone but the gate sees it: metadata and
// judgments, never the handler. Entries are immutable; Replace installs a
// new Entry with a higher Generation.
type Entry struct {
	reg        *Registry
	t          CoreTool
	plugin     Plugin
	vis        Visibility
	generation uint64
	order      int
	timeout    time.Duration
	inline     bool
	raw        RawParser
	decl       Declarer
}

// Name returns the tool's name.
func (e *Entry) Name() string { return e.t.Name() }

// Description returns the tool's description.
func (e *Entry) Description() string { return e.t.Description() }

// Prompt returns the tool's prompt.
func (e *Entry) Prompt() string { return e.t.Prompt() }

// InputSchema returns the tool's input schema.
func (e *Entry) InputSchema() json.RawMessage { return e.t.InputSchema() }

// Plugin returns the plugin the tool comes from.
func (e *Entry) Plugin() Plugin { return e.plugin }

// Visibility returns how the tool was registered.
func (e *Entry) Visibility() Visibility { return e.vis }

// Generation is a registry-wide counter value that changes whenever the
// name is registered again by Replace; caches key on it.
func (e *Entry) Generation() uint64 { return e.generation }

// Timeout returns the tool's own deadline, 0 for the gate's default.
func (e *Entry) Timeout() time.Duration { return e.timeout }

// Inline reports that the tool's handler never blocks (see [Inliner]).
func (e *Entry) Inline() bool { return e.inline }

// ReadOnly asks the tool; a panic counts as false.
func (e *Entry) ReadOnly(in Input) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	return e.t.ReadOnly(in)
}

// ConcurrencySafe asks the tool; a panic counts as false.
func (e *Entry) ConcurrencySafe(in Input) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	return e.t.ConcurrencySafe(in)
}

// CheckPermissions asks the tool; a panic or an unknown behavior is a Deny.
func (e *Entry) CheckPermissions(ctx context.Context, in Input) (p Permission) {
	defer func() {
		if recover() != nil {
			p = Permission{Behavior: Deny, Reason: "the tool's permission check panicked"}
		}
	}()
	p = e.t.CheckPermissions(ctx, in)
	if p.Behavior > Deny {
		p.Behavior = Deny
	}
	return p
}

// Accesses returns the capability requests the tool declares for in.
// declared is false when the tool declares nothing (it does not implement
// Declarer, or was built without Accesses); err is the tool's own error,
// and a panic is reported as an error.
func (e *Entry) Accesses(in Input) (acc []Access, declared bool, err error) {
	if e.decl == nil {
		return nil, false, nil
	}
	defer func() {
		if r := recover(); r != nil {
			acc, declared, err = nil, true, errors.New("tool: access declaration panicked")
		}
	}()
	acc, err = e.decl.Accesses(in)
	if errors.Is(err, errNoDeclaration) {
		return nil, false, nil
	}
	return acc, true, err
}

// Delegate names the call another tool's call that this one runs through
// the gate; ok is false when there is none (or the tool panicked).
func (e *Entry) Delegate(in Input) (name string, input json.RawMessage, ok bool) {
	d, is := e.t.(Delegator)
	if !is {
		return "", nil, false
	}
	defer func() {
		if recover() != nil {
			name, input, ok = "", nil, false
		}
	}()
	return d.Delegate(in)
}

// RuleNames are the further names the call answers to in deny and ask
// rules (see [RuleNamer]); ok is false when the tool panicked, which the
// gate refuses.
func (e *Entry) RuleNames(in Input) (names []string, ok bool) {
	r, is := e.t.(RuleNamer)
	if !is {
		return nil, true
	}
	defer func() {
		if recover() != nil {
			names, ok = nil, false
		}
	}()
	return r.RuleNames(in), true
}

// Preview asks the tool for its approval preview of in (see
// [Previewer]); ErrNoPreview when it has none. A panic is an error.
func (e *Entry) Preview(ctx context.Context, env Env, in Input) (text string, err error) {
	p, is := e.t.(Previewer)
	if !is {
		return "", ErrNoPreview
	}
	defer func() {
		if recover() != nil {
			text, err = "", errors.New("tool: preview panicked")
		}
	}()
	return p.Preview(ctx, env, in)
}

// RawParser returns the tool's raw-input parser, if it has one.
func (e *Entry) RawParser() (RawParser, bool) { return e.raw, e.raw != nil }

// Options configures a Registry.
type Options struct {
	// Audit receives an event for every Replace. Nil means Replace is
	// refused: a replacement that cannot be audited does not happen.
	Audit audit.Sink
}

// Registry holds tools by name and the views of every open run. The zero
// value is not usable; call NewRegistry.
type Registry struct {
	audit audit.Sink

	mu      sync.RWMutex
	entries map[string]*Entry
	gen     uint64
	order   int
	views   map[viewKey]*View
	claimed bool
}

type viewKey struct{ run, chain string }

// NewRegistry returns an empty Registry. opts may be nil.
func NewRegistry(opts *Options) *Registry {
	r := &Registry{entries: map[string]*Entry{}, views: map[viewKey]*View{}}
	if opts != nil {
		r.audit = opts.Audit
	}
	return r
}

func (r *Registry) newEntry(reg Registration) (*Entry, error) {
	if reg.Tool == nil {
		return nil, errors.New("tool: nil tool")
	}
	name := reg.Tool.Name()
	if !ValidName(name) {
		return nil, fmt.Errorf("tool: invalid tool name %q", name)
	}
	if reg.Visibility > Hidden {
		return nil, fmt.Errorf("tool: %s: unknown visibility %d", name, reg.Visibility)
	}
	if s := reg.Tool.InputSchema(); len(s) == 0 || !json.Valid(s) {
		return nil, fmt.Errorf("tool: %s: input schema is missing or not JSON", name)
	}
	e := &Entry{reg: r, t: reg.Tool, plugin: reg.Plugin, vis: reg.Visibility}
	if t, ok := reg.Tool.(Timeouter); ok {
		e.timeout = t.Timeout()
	}
	if t, ok := reg.Tool.(Inliner); ok {
		e.inline = t.Inline()
	}
	if p, ok := reg.Tool.(RawParser); ok {
		e.raw = p
	}
	if d, ok := reg.Tool.(Declarer); ok {
		e.decl = d
	}
	return e, nil
}

// Register adds a tool. A name that is already registered is an error
// wrapping ErrDuplicate; use Replace to swap a tool on purpose.
func (r *Registry) Register(reg Registration) error {
	e, err := r.newEntry(reg)
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.entries[e.Name()]; ok {
		return fmt.Errorf("%w: %q", ErrDuplicate, e.Name())
	}
	r.gen++
	r.order++
	e.generation, e.order = r.gen, r.order
	r.entries[e.Name()] = e
	return nil
}

// Replace swaps the tool registered under reg.Tool.Name() for reg, after
// writing an audit event naming who replaced it and why. It fails (and
// changes nothing) when the name is not registered (ErrNotFound), when the
// registry has no audit sink, or when the sink refuses the event. Views keep
// their unlock state; calls already running finish with the old tool.
func (r *Registry) Replace(ctx context.Context, reg Registration, by, why string) error {
	e, err := r.newEntry(reg)
	if err != nil {
		return err
	}
	if r.audit == nil {
		return errors.New("tool: Replace needs an audit sink (Options.Audit)")
	}
	r.mu.RLock()
	old, ok := r.entries[e.Name()]
	r.mu.RUnlock()
	if !ok {
		return fmt.Errorf("%w: %q", ErrNotFound, e.Name())
	}
	ev := audit.Event{
		Type: audit.TypePluginUpdated, Principal: by, Tool: e.Name(),
		Plugin: e.plugin.ID, PluginVersion: e.plugin.Version, ManifestDigest: e.plugin.ManifestDigest,
		Detail: map[string]string{
			"change": "tool_replaced", "why": why,
			"oldPlugin": old.plugin.Ref(), "oldVisibility": old.vis.String(), "visibility": e.vis.String(),
		},
	}
	if err := r.audit.Record(context.WithoutCancel(ctx), ev); err != nil {
		return fmt.Errorf("tool: Replace %s: audit: %w", e.Name(), err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.entries[e.Name()] != old {
		return fmt.Errorf("tool: Replace %s: replaced concurrently", e.Name())
	}
	r.gen++
	e.generation, e.order = r.gen, old.order
	r.entries[e.Name()] = e
	return nil
}

func (r *Registry) entry(name string) *Entry {
	r.mu.RLock()
	e := r.entries[name]
	r.mu.RUnlock()
	return e
}

// Names returns every registered name, sorted. It is for administration,
// not for the model: use a View for that.
func (r *Registry) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]string, 0, len(r.entries))
	for n := range r.entries {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// Claim returns the registry's only Dispatcher. The execution gate claims
// it when it is created; every later Claim fails with ErrClaimed, so once a
// gate exists nothing else can reach a handler through the registry.
func (r *Registry) Claim() (*Dispatcher, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.claimed {
		return nil, ErrClaimed
	}
	r.claimed = true
	return &Dispatcher{reg: r}, nil
}

// Dispatcher calls handlers. There is one per Registry, held by the gate.
type Dispatcher struct{ reg *Registry }

// Call runs e's handler. It refuses an entry of another registry and an
// entry that was replaced since it was looked up (the caller validated an
// input against the old tool). Call does not recover panics; the gate does.
func (d *Dispatcher) Call(ctx context.Context, e *Entry, env Env, in Input) (Result, error) {
	if d == nil || e == nil || e.reg != d.reg {
		return Result{}, errors.New("tool: dispatch of an entry from another registry")
	}
	if d.reg.entry(e.Name()) != e {
		return Result{}, fmt.Errorf("tool: %s was replaced while the call was checked", e.Name())
	}
	return e.t.Call(ctx, env, in)
}

func chainKey(principals []string) string {
	if len(principals) == 1 {
		return principals[0]
	}
	return strings.Join(principals, "\x00")
}
