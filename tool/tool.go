package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/internal/ident"
)

// Behavior is a tool's own permission judgment on one input. The zero
// value is Ask: a tool that says nothing needs approval.
type Behavior uint8

// Behaviors. Values above Deny are treated as Deny.
const (
	Ask Behavior = iota
	Allow
	Deny
)

// String returns "ask", "allow" or "deny".
func (b Behavior) String() string {
	switch b {
	case Ask:
		return "ask"
	case Allow:
		return "allow"
	}
	return "deny"
}

// Permission is the result of [CoreTool.CheckPermissions]. Reason is a short
// message safe to show to the model and the user.
type Permission struct {
	Behavior Behavior
	Reason   string
}

// Result is what a handler returns. Content is the text given back to the
// model (the gate caps it and spills the rest); IsError marks a failure the
// tool reports itself.
type Result struct {
	Content string
	IsError bool
}

// Access is one capability request a call will make, declared by the tool
// from its input before the call runs. The gate normalizes it (a path is
// resolved inside the workspace, a URL normalized, a shell command parsed
// into simple commands and redirections) and the policy step decides on the
// normalized requests; permission rules on arguments match them too.
type Access struct {
	Kind capability.Kind
	// Path for fs.read and fs.write, as written in the input.
	Path string
	// Tree, for fs.read, says the call reads the files under Path (a
	// search), not Path alone. Norma's own search checks each file as it
	// walks; for a call that runs outside Norma (an agent's hook) the gate
	// decides each of them before the call (see gate.Call.Unconfined).
	Tree bool
	// Method and URL for net.request.
	Method, URL string
	// Secret and Origin for secret.use.
	Secret, Origin string
	// Argv for process.spawn without a shell, or Command for a shell
	// command line (parsed by the gate; never both).
	Argv    []string
	Command string
	// Tool and Target for external.write.
	Tool, Target string
}

// CoreTool is the contract every tool implements. Every method but Call is a
// judgment on an input that has already passed the schema: it must be
// cheap, free of side effects and safe for concurrent use.
type CoreTool interface {
	// Name is the name the model calls the tool by.
	Name() string
	// Description and Prompt are shown to the model.
	Description() string
	Prompt() string
	// InputSchema is a JSON Schema 2020-12 document for the input.
	InputSchema() json.RawMessage
	// ReadOnly reports whether the call changes nothing outside the tool.
	ReadOnly(in Input) bool
	// ConcurrencySafe reports whether the call may run next to others.
	ConcurrencySafe(in Input) bool
	// CheckPermissions is the tool's own judgment. Deny is a hard deny that
	// no rule or mode can lift; Ask sends the call to approval.
	CheckPermissions(ctx context.Context, in Input) Permission
	// Call runs the tool. Only the gate calls it, through a Dispatcher.
	Call(ctx context.Context, env Env, in Input) (Result, error)
}

// Declarer is implemented by tools that declare the capability requests a
// call will make. A tool that does not is assumed to make requests the gate
// cannot see, so no argument rule can allow it.
type Declarer interface {
	Accesses(in Input) ([]Access, error)
}

// RawParser is implemented by tools whose model-facing input is not the
// object their schema describes (a patch, a free-form string). ParseRaw turns
// the raw input into the JSON the schema validates; an error becomes a
// SCHEMA_INVALID result.
type RawParser interface {
	ParseRaw(raw []byte) (json.RawMessage, error)
}

// Delegator is implemented by tools whose call runs another tool's call
// through the gate (ExecuteExtraTool): Delegate names that inner call, so
// that a decision without the call (gate.Gate.Explain) can decide it too.
type Delegator interface {
	Delegate(in Input) (tool string, input json.RawMessage, ok bool)
}

// RuleNamer is implemented by tools whose calls also answer, in
// permission rules, to names that depend on the input: the MCP resource
// and prompt tools take a server's, mcp__SERVER__ReadMcpResource, so that
// a deny or ask rule on the server (mcp__SERVER) or on that name applies
// to them. Only deny and ask rules are matched against these names (they
// narrow); an allow rule still needs the tool's own name.
type RuleNamer interface {
	RuleNames(in Input) []string
}

// Previewer is implemented by tools whose approval preview is better
// than their input as canonical JSON (what the gate shows otherwise): Bash
// shows its command line, Write, Edit and MultiEdit the unified diff of the
// file as it is and as the call would leave it. Preview renders what the
// call with input in would do, from in and what env's FS reads (env holds
// only FS); it must change nothing. The gate bounds the text and escapes
// nothing (every door that prints it does). [ErrNoPreview] asks for the
// JSON form.
type Previewer interface {
	Preview(ctx context.Context, env Env, in Input) (string, error)
}

// ErrNoPreview is returned by a Previewer that has no preview of its own.
var ErrNoPreview = errors.New("tool: no preview")

// Timeouter is implemented by tools that want a deadline other than the
// gate's default.
type Timeouter interface {
	Timeout() time.Duration
}

// Inliner is implemented by tools whose handler never blocks: it computes
// its result from its input and memory, without I/O, sleeps, waits or
// locks held across them. The gate runs such a handler on the caller's
// goroutine: the goroutine and timer that let it return at the deadline
// of a handler that ignores its context are not needed, since the handler
// returns first. A tool that may block must not claim it.
type Inliner interface {
	Inline() bool
}

// Spec describes a tool for [Build]. Only Name and Call are required.
type Spec struct {
	Name        string
	Description string
	Prompt      string
	// Schema is the input schema. Empty means the closed schema: an object
	// with no properties at all.
	Schema json.RawMessage
	// ReadOnly nil means every input is mutating.
	ReadOnly func(Input) bool
	// ConcurrencySafe nil means every call is exclusive.
	ConcurrencySafe func(Input) bool
	// CheckPermissions nil means Ask: every call needs approval unless a
	// rule allows it.
	CheckPermissions func(context.Context, Input) Permission
	// Accesses nil means the tool declares none.
	Accesses func(Input) ([]Access, error)
	// ParseRaw, when set, makes the tool a RawParser.
	ParseRaw func([]byte) (json.RawMessage, error)
	// Delegate, when set, makes the tool a Delegator: it names the call
	// another tool this call runs through the gate.
	Delegate func(Input) (tool string, input json.RawMessage, ok bool)
	// RuleNames, when set, makes the tool a RuleNamer.
	RuleNames func(Input) []string
	// Preview, when set, renders the call for approval (see [Previewer]);
	// nil means the gate shows the input as canonical JSON.
	Preview func(context.Context, Env, Input) (string, error)
	// Timeout zero means the gate's default.
	Timeout time.Duration
	// Inline makes the tool an [Inliner]: Call never blocks.
	Inline bool
	// Call is the handler.
	Call func(context.Context, Env, Input) (Result, error)
}

// ClosedSchema is the schema Build uses when a Spec has none.
var ClosedSchema = json.RawMessage(`{"type":"object","additionalProperties":false}`)

// ValidName reports whether name can name a tool: a letter, then up to 127
// letters, digits, '_', '.' or '-'.
func ValidName(name string) bool { return ident.Valid(name, 128, ident.Letter, ident.AlNumOr("_.-")) }

// Build returns a CoreTool from s, filling every security judgment s leaves
// out with the closed choice: mutating, exclusive, ask, no declared access,
// the closed schema. It fails on an invalid name, a missing handler or a
// schema that is not JSON, and never panics.
func Build(s Spec) (CoreTool, error) {
	if !ValidName(s.Name) {
		return nil, fmt.Errorf("tool: Build: invalid tool name %q", s.Name)
	}
	if s.Call == nil {
		return nil, fmt.Errorf("tool: Build %s: no handler", s.Name)
	}
	if len(s.Schema) == 0 {
		s.Schema = ClosedSchema
	} else if !json.Valid(s.Schema) {
		return nil, fmt.Errorf("tool: Build %s: schema is not valid JSON", s.Name)
	}
	if s.Timeout < 0 {
		return nil, fmt.Errorf("tool: Build %s: negative timeout", s.Name)
	}
	b := &built{s: s}
	if s.ParseRaw != nil {
		return &builtRaw{b}, nil
	}
	return b, nil
}

// MustBuild is Build for tests and constant specs; it panics on error.
func MustBuild(s Spec) CoreTool {
	t, err := Build(s)
	if err != nil {
		panic(err)
	}
	return t
}

type built struct{ s Spec }

func (b *built) Name() string                 { return b.s.Name }
func (b *built) Description() string          { return b.s.Description }
func (b *built) Prompt() string               { return b.s.Prompt }
func (b *built) InputSchema() json.RawMessage { return b.s.Schema }
func (b *built) Timeout() time.Duration       { return b.s.Timeout }
func (b *built) Inline() bool                 { return b.s.Inline }

func (b *built) ReadOnly(in Input) bool {
	return b.s.ReadOnly != nil && b.s.ReadOnly(in)
}

func (b *built) ConcurrencySafe(in Input) bool {
	return b.s.ConcurrencySafe != nil && b.s.ConcurrencySafe(in)
}

func (b *built) CheckPermissions(ctx context.Context, in Input) Permission {
	if b.s.CheckPermissions == nil {
		return Permission{Behavior: Ask, Reason: "the tool states no permission judgment"}
	}
	return b.s.CheckPermissions(ctx, in)
}

func (b *built) Accesses(in Input) ([]Access, error) {
	if b.s.Accesses == nil {
		return nil, errNoDeclaration
	}
	return b.s.Accesses(in)
}

// Delegate names the inner call; ok is false for a tool without one.
func (b *built) Delegate(in Input) (string, json.RawMessage, bool) {
	if b.s.Delegate == nil {
		return "", nil, false
	}
	return b.s.Delegate(in)
}

// RuleNames are the call's further names for deny and ask rules.
func (b *built) RuleNames(in Input) []string {
	if b.s.RuleNames == nil {
		return nil
	}
	return b.s.RuleNames(in)
}

// Preview renders the call for approval; ErrNoPreview when the Spec has
// no Preview.
func (b *built) Preview(ctx context.Context, env Env, in Input) (string, error) {
	if b.s.Preview == nil {
		return "", ErrNoPreview
	}
	return b.s.Preview(ctx, env, in)
}

func (b *built) Call(ctx context.Context, env Env, in Input) (Result, error) {
	return b.s.Call(ctx, env, in)
}

type builtRaw struct{ *built }

func (b *builtRaw) ParseRaw(raw []byte) (json.RawMessage, error) { return b.s.ParseRaw(raw) }

// errNoDeclaration is returned by a built tool's Accesses when its Spec had
// none; the registry reports it as "not declared".
var errNoDeclaration = errors.New("tool: no access declaration")
