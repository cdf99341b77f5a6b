package gate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/norma-run/norma/agentfiles"

	"go.opentelemetry.io/otel/trace"

	"github.com/norma-run/norma/approval"
	"github.com/norma-run/norma/audit"
	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/guard/fspath"
	"github.com/norma-run/norma/guard/netguard"
	"github.com/norma-run/norma/hook"
	"github.com/norma-run/norma/internal/shellcmd"
	"github.com/norma-run/norma/policy"
	"github.com/norma-run/norma/secret"
	"github.com/norma-run/norma/tool"
)

// Step is one step of the pipeline, in execution order.
type Step uint8

// Steps.
const (
	StepLookup Step = iota + 1
	StepSchema
	StepPolicy
	StepApproval
	StepPreHooks
	StepCall
	StepOutput
	StepPostHooks
	StepAudit
)

var stepNames = [...]string{"", "lookup", "schema", "policy", "approval", "pre_hooks", "call", "output", "post_hooks", "audit"}

// String returns the step's name.
func (s Step) String() string {
	if int(s) < len(stepNames) && s != 0 {
		return stepNames[s]
	}
	return fmt.Sprintf("unknown(%d)", uint8(s))
}

// DefaultTimeout is the deadline of a call when neither the tool nor the
// options give one.
const DefaultTimeout = 2 * time.Minute

// DefaultMaxInput bounds the raw input of a call in bytes.
const DefaultMaxInput = 1 << 20

// Options configures a Gate. Registry, Policy and Audit are required.
type Options struct {
	// Registry holds the tools; New claims its Dispatcher, so a registry
	// serves one gate.
	Registry *tool.Registry
	// Policy returns the compiled policy of a plugin (the zero Plugin is
	// the built-in tools). An error or a nil capability.Decider denies the call with
	// POLICY_ERROR.
	Policy func(tool.Plugin) (capability.Decider, error)
	// Audit receives one tool_call_started event before every call (a
	// refusal denies the call) and one final event per Execute.
	Audit audit.Sink

	// Mode is the initial permission mode; SetMode changes it.
	Mode Mode
	// Rules are the permission rules.
	Rules policy.Rules
	// Approver decides calls that need approval: it is asked for a ticket
	// for exactly the call's action (approval.HashAction of plugin,
	// version, manifest digest, tool, canonical input and run id), and the
	// call is denied on any error, on a ticket without an approval id and
	// on a ticket for another action hash. When it is also an
	// approval.Finisher it is told when the approved call is over.
	// *approval.Service is the durable one. Nil denies such calls with
	// APPROVAL_REQUIRED.
	Approver approval.Authorizer
	// Workspace is the directory the calls run in. Its identity
	// (approval.WorkspaceID: resolved path, device and inode) is part of
	// every action hash, so an approval given in one workspace never lets
	// the same call run in another; New fails when it has none. Empty
	// means no workspace (an empty identity).
	Workspace string
	// Ledger, when set, makes every tool_use run at most once across
	// resumes, crashes and processes sharing it: the call step claims
	// (run id, tool_use id) before the handler is called and records the
	// outcome after. A call whose claim finds an unfinished execution is
	// answered with TOOL_INTERRUPTED (it may have run), one whose claim
	// finds a finished one with TOOL_ALREADY_RAN; neither runs. A ledger
	// that fails refuses the call with STATE_UNAVAILABLE. tool_use ids are
	// unique in a run (the providers' contract, which the scripted provider
	// checks), so a repeated id is the same call. *store.DB is the durable
	// one.
	Ledger approval.Ledger
	// Hooks runs PreToolUse, PostToolUse and PostToolUseFailure hooks; nil
	// means none.
	Hooks *hook.Registry
	// Capabilities returns the capabilities of a plugin's calls (FS, HTTP,
	// Secrets, Exec; identity fields are set by the gate). Nil means
	// none. An error denies the call with POLICY_ERROR.
	Capabilities func(tool.Plugin) (tool.Env, error)
	// Resolve maps a workspace path to its canonical form for policy and
	// rules (fsguard's FS.Resolve). Nil means lexical cleaning only
	// (fspath.Clean). A path that does not exist yet is cleaned.
	Resolve func(name string) (string, error)
	// Resolver looks up host names for an unconfined call's fetch (see
	// Unconfined), as the network guard would at connect time; nil means
	// the system's resolver.
	Resolver netguard.Resolver
	// Timeout is the default deadline of a call; zero means DefaultTimeout.
	Timeout time.Duration
	// MaxInput bounds the raw input in bytes; zero means DefaultMaxInput.
	MaxInput int
	// MaxParallel bounds the calls ExecuteBatch runs at once; zero means 8.
	MaxParallel int
	// Output configures output capture.
	Output OutputOptions
	// Redactor masks secrets in every result and in the output streams of
	// every process a call runs (step 7; see redact.go): the run's secret
	// values and provider keys it was told, and the token formats it
	// knows. Nil means one that knows the token formats only.
	Redactor *secret.Redactor
	// SessionID is passed to hooks.
	SessionID string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Logger receives operational errors (never inputs or outputs); nil
	// discards.
	Logger *slog.Logger
	// Trace, when set, is called as a call enters each step; for tests and
	// tracing.
	Trace func(toolUseID string, s Step)
	// Tracer, when set, makes an OpenTelemetry span of every call (see
	// span.go); nil makes none and costs nothing.
	Tracer trace.Tracer
	// Sandboxed says that the processes the calls start run in the OS
	// sandbox; it is recorded on each call's span.
	Sandboxed bool
}

// Gate is the one door to every tool: Execute runs the whole pipeline, and
// nothing else holds the registry's Dispatcher. Safe for concurrent use.
type Gate struct {
	reg       *tool.Registry
	disp      *tool.Dispatcher
	policy    func(tool.Plugin) (capability.Decider, error)
	sink      audit.Sink
	rules     liveRules // Options.Rules and the session's allow rules
	mode      atomic.Uint32
	approver  approval.Authorizer
	wsDir     string // Options.Workspace
	home      string // the user's home relative to wsDir, or "" (homeIn)
	aliases   agentfiles.AliasCache
	wsID      string // its approval.WorkspaceID
	ledger    approval.Ledger
	hooks     *hook.Registry
	caps      func(tool.Plugin) (tool.Env, error)
	resolve   func(string) (string, error)
	resolver  netguard.Resolver
	unconf    func() *unconfined // what an unconfined call is decided with, made once
	repoDir   func() string      // the workspace relative to its repository's top (repoPrefix), found once
	timeout   time.Duration
	maxInput  int
	parallel  int
	capture   *capture
	red       *secret.Redactor
	sessionID string
	now       func() time.Time
	log       *slog.Logger
	trace     func(string, Step)
	tracer    trace.Tracer
	sandboxed bool
	schemas   schemaCache
}

// New validates opts, compiles the rules and claims the registry's
// Dispatcher.
func New(opts Options) (*Gate, error) {
	if opts.Registry == nil || opts.Policy == nil || opts.Audit == nil {
		return nil, errors.New("gate: Registry, Policy and Audit are required")
	}
	if opts.Mode > ModeBypass {
		return nil, fmt.Errorf("gate: unknown mode %d", opts.Mode)
	}
	rules, err := policy.CompileRules(opts.Rules)
	if err != nil {
		return nil, err
	}
	g := &Gate{
		reg: opts.Registry, policy: opts.Policy, sink: opts.Audit,
		approver: opts.Approver, wsDir: opts.Workspace, ledger: opts.Ledger, hooks: opts.Hooks, caps: opts.Capabilities, resolve: opts.Resolve,
		resolver: opts.Resolver, timeout: opts.Timeout, maxInput: opts.MaxInput, parallel: opts.MaxParallel,
		sessionID: opts.SessionID, now: opts.Now, log: opts.Logger, trace: opts.Trace, red: opts.Redactor,
		tracer: opts.Tracer, sandboxed: opts.Sandboxed,
	}
	if g.red == nil {
		g.red = secret.NewRedactor()
	}
	g.unconf = sync.OnceValue(g.newUnconfined)
	g.repoDir = sync.OnceValue(g.repoPrefix)
	g.home, _ = agentfiles.HomeIn(g.wsDir)
	if g.wsDir != "" {
		if g.wsID, err = approval.WorkspaceID(g.wsDir); err != nil {
			return nil, fmt.Errorf("gate: %w", err)
		}
	}
	if g.timeout <= 0 {
		g.timeout = DefaultTimeout
	}
	if g.maxInput <= 0 {
		g.maxInput = DefaultMaxInput
	}
	if g.parallel <= 0 {
		g.parallel = 8
	}
	if g.now == nil {
		g.now = time.Now
	}
	if g.log == nil {
		g.log = slog.New(slog.DiscardHandler)
	}
	if g.resolve == nil {
		g.resolve = fspath.Clean
	}
	if g.capture, err = newCapture(opts.Output, g.now); err != nil {
		return nil, err
	}
	g.rules.init(opts.Rules, rules)
	g.mode.Store(uint32(opts.Mode))
	if g.disp, err = opts.Registry.Claim(); err != nil {
		return nil, fmt.Errorf("gate: %w", err)
	}
	return g, nil
}

// SetMode changes the permission mode for later calls.
func (g *Gate) SetMode(m Mode) error {
	if m > ModeBypass {
		return fmt.Errorf("gate: unknown mode %d", m)
	}
	g.mode.Store(uint32(m))
	return nil
}

// Mode returns the current permission mode.
func (g *Gate) Mode() Mode { return Mode(g.mode.Load()) }

// PruneSpill applies output retention now.
func (g *Gate) PruneSpill() error { return g.capture.Prune() }

// Call is one tool_use from the model.
type Call struct {
	// ID is the tool_use id the result is paired with.
	ID    string
	RunID string
	// Principals is the principal chain, outermost first (user, agent,
	// subagent...). It selects the registry view.
	Principals []string
	Tool       string
	Input      json.RawMessage
	// Unconfined, when set, marks a call that will run outside Norma's
	// sandbox and guards — another agent's own tool (package agenthook)
	// — in a shell with this environment. Explain then decides what the
	// sandbox and the guards would have: a command's literal words are
	// found where that shell will find them (cd and pushd followed, ~ and
	// $HOME expanded, symbolic links resolved); one naming a workspace
	// file the policy denies reading (cat .env, cd sub && cat ../.env),
	// which the sandbox would have hidden, is refused, and so is one
	// naming a host path the sandbox would not show (sandbox.Exposed:
	// ../other/.env, ~/.ssh; PATH_ESCAPE); a redirection is a file
	// request where it lands, refused outside the workspace; a cd that
	// cannot be followed makes the command Unknown. A fetch's host name is
	// resolved and refused as the dialer would refuse it (addrDenied).
	// Execute ignores it: what Execute runs is sandboxed.
	Unconfined *AgentShell
}

// AgentShell is the environment of the shell an unconfined call runs in
// (Call.Unconfined): the caller reads it where it knows it (a hook from
// its own environment, which is the agent's), so that no decision of the
// gate depends on the environment of the process that makes it.
type AgentShell struct {
	// Home is what bash expands ~ and $HOME to; "" when not known (a
	// command that names it is then Unknown).
	Home string
	// CDPath reports whether CDPATH is set: a cd to a relative name may
	// then go elsewhere (Unknown).
	CDPath bool
}

// Result is the one result paired with a Call, whatever happened.
type Result struct {
	ToolUseID string
	Tool      string
	// Content is what the model sees: the capped output, or the reason for
	// a refusal or failure.
	Content string
	IsError bool
	// Reason is ALLOWED for a successful call and a stable code otherwise.
	Reason capability.Reason
	// Stage is the step at which the call ended.
	Stage Step
	// Decision is the policy decision that governed the call.
	Decision   capability.Decision
	ApprovalID string
	// Spill is set when the output was capped and saved.
	Spill *Spill
	// Context holds additional context from hooks.
	Context []string
	// Duration is the time spent in the handler.
	Duration time.Duration
	// AuditFailed reports that the final audit event was refused.
	AuditFailed bool
}

// exec is the state of one call through the pipeline.
type exec struct {
	g *Gate
	// c is the call, held by value: exec lives on Execute's stack, so
	// nothing may keep a pointer to it or into it past the call (the
	// redaction state that can outlive it is allocated apart, see env).
	c     Call
	entry *tool.Entry
	view  *tool.View
	in    tool.Input
	reqs  []capability.Request
	known bool
	// names are the call's further names for deny and ask rules
	// (tool.RuleNamer).
	names []string
	// unlockable lets lookup find a deferred tool as ExecuteExtra would
	// unlock it (Explain of a delegated call; nothing is unlocked).
	unlockable bool
	// unknown names what cannot be known about the call (an unparseable
	// command); such a call is never allowed by a rule.
	unknown string
	// rewritten: a command of the call is not written as plain words
	// (shellcmd.Effects.Rewritten); no exact allow rule covers it.
	rewritten bool
	// unconfined is set by Explain for a call that runs outside the
	// sandbox (see Unconfined).
	shell *AgentShell // Call.Unconfined
	// named are reads of the workspace files a command names as an
	// argument (`cat .env`, `cd sub && cat ../.env`), for an unconfined
	// call (see unconfined.namedFiles): the policy's or a deny rule's
	// deny of one denies the call, an ask rule's asks. They are not
	// requests of the call (allow rules and approvals do not see them): a
	// command's argument may or may not be read.
	named []capability.Request
	// trace is set by Explain: decide with every layer's answer collected
	// here (nil for Execute, which needs no trace).
	trace  *[]capability.LayerResult
	dec    capability.Decision
	ticket approval.Ticket
	// claimed: the ledger recorded this call as started (claim).
	claimed bool
	res     Result
	mode    Mode
	pol     capability.Decider

	principal, targetHash string // audit fields computed once
	detail                map[string]string
	bg                    context.Context // detached's, made once
	req0                  string          // reqString(0), made once per x.reqs
	// red is what the call's streams masked; made by env for a call
	// that can run processes (their streams may outlive the call), nil
	// otherwise (step 7 then reports its own counts alone).
	red *redaction
}

func (x *exec) step(s Step) {
	x.res.Stage = s
	if x.g.trace != nil {
		x.g.trace(x.c.ID, s)
	}
}

func (x *exec) fail(reason capability.Reason, msg string) {
	x.res.IsError = true
	x.res.Reason = reason
	x.res.Content = msg
	// fail is only used before the handler runs: the call is refused, and
	// the decision keeps the reason it had (why approval was needed).
	x.dec.Mode = capability.Deny
	if x.dec.Reason == capability.ReasonAllowed {
		x.dec.Rule = "" // the allow rule did not decide this refusal
	}
	if x.dec.Reason == "" || x.dec.Reason == capability.ReasonAllowed {
		x.dec.Reason, x.dec.Layer = reason, stageLayer(x.res.Stage)
	}
}

func stageLayer(s Step) capability.Layer {
	switch s {
	case StepPreHooks:
		return capability.LayerHook
	case StepApproval:
		return capability.LayerApproval
	}
	return capability.LayerGate
}

// Execute runs one call through every step, in order: lookup, schema,
// policy, approval, PreToolUse hooks, the call, output capture,
// PostToolUse/PostToolUseFailure hooks, audit. It always returns exactly one
// Result for c.ID; refusals, failures, panics, timeouts and cancellation are
// error results with a reason code.
func (g *Gate) Execute(ctx context.Context, c Call) Result {
	x := &exec{g: g, c: c, mode: g.Mode()}
	x.res.ToolUseID, x.res.Tool = c.ID, c.Tool
	var span trace.Span
	if g.tracer != nil {
		ctx, span = g.tracer.Start(ctx, spanToolCall, trace.WithSpanKind(trace.SpanKindInternal))
	}
	executed := x.run(ctx)
	stage := x.res.Stage // where the call stopped; finish moves on to the audit step
	x.finish(ctx, executed)
	if span != nil {
		x.endSpan(span, stage)
	}
	return x.res
}

// lookup is step 1: the call's tool in the caller's registry view.
func (x *exec) lookup(ctx context.Context) bool {
	g, c := x.g, &x.c
	x.step(StepLookup)
	if len(c.Principals) == 0 || c.RunID == "" || c.ID == "" {
		x.fail(capability.ReasonInvalidRequest, "the call has no tool_use id, run id or principal")
		return false
	}
	if !ValidCallID(c.ID) {
		x.fail(capability.ReasonInvalidRequest, "the call's tool_use id is not 1 to 256 letters, digits, '_', '-', '.' or ':'")
		return false
	}
	v, err := g.reg.View(c.RunID, c.Principals)
	if err == nil {
		x.view = v
		if x.unlockable {
			x.entry, _ = v.LookupUnlockable(c.Tool)
		} else {
			x.entry, _ = v.Lookup(c.Tool)
		}
	}
	if x.entry == nil {
		x.fail(capability.ReasonToolUnknown, "unknown tool "+quoteName(c.Tool))
		return false
	}
	if err := ctx.Err(); err != nil {
		x.fail(capability.ReasonCanceled, "canceled")
		return false
	}
	return true
}

// authorize runs steps 2–4 on raw: schema, policy, approval. first is
// false for a hook rewrite, whose decision is combined with the first one.
func (x *exec) authorize(ctx context.Context, raw json.RawMessage, first bool) bool {
	if !x.check(ctx, raw, first) {
		return false
	}
	// 4. approval
	x.step(StepApproval)
	if x.dec.Mode == capability.ApprovalRequired {
		return x.approve(ctx)
	}
	return true
}

// check runs steps 2 and 3 on raw: schema, then policy (mode and rules,
// every capability layer). It reports whether the call may go on, to
// approval when x.dec requires it.
func (x *exec) check(ctx context.Context, raw json.RawMessage, first bool) bool {
	// 2. schema
	in, ok := x.schema(raw, first)
	if !ok {
		return false
	}
	// 3. policy
	x.step(StepPolicy)
	if x.pol == nil {
		pol, err := x.g.policy(x.entry.Plugin())
		if err != nil || pol == nil {
			x.fail(capability.ReasonPolicyError, "no policy for this tool")
			return false
		}
		x.pol = pol
	}
	prevIn, prevReqs, prevKnown, prevDec := x.in, x.reqs, x.known, x.dec
	x.in = in
	d := x.decide(ctx)
	if !first && d.Mode != capability.Deny {
		d = rewritten(d, prevDec, prevIn, in, prevReqs, prevKnown, x.reqs, x.known)
	}
	if d.Mode == capability.ApprovalRequired && x.mode == ModeDontAsk {
		// A command whose effect cannot be known keeps its own reason:
		// the denial says why it could not be allowed.
		if d.Reason != capability.ReasonCommandUnparseable && d.Layer != capability.LayerEgress {
			d.Reason = capability.ReasonModeDenied
		}
		d.Mode, d.Layer, d.Rule = capability.Deny, capability.LayerMode, "mode:dontAsk"
	}
	x.dec = d
	if d.Mode == capability.Deny {
		x.fail(d.Reason, denyMessage(d))
		return false
	}
	return true
}

// schema is step 2: bounded size, the tool's raw parser (first pass only),
// strict decoding and JSON Schema validation.
func (x *exec) schema(raw json.RawMessage, first bool) (tool.Input, bool) {
	g, e := x.g, x.entry
	x.step(StepSchema)
	if len(raw) > g.maxInput {
		x.fail(capability.ReasonSchemaInvalid, fmt.Sprintf("input is larger than %d bytes", g.maxInput))
		return tool.Input{}, false
	}
	if p, ok := e.RawParser(); ok && first {
		parsed, err := safeParseRaw(p, raw)
		if err != nil {
			x.fail(capability.ReasonSchemaInvalid, "input does not parse: "+err.Error())
			return tool.Input{}, false
		}
		raw = parsed
	}
	in, err := tool.ParseInput(raw)
	if err != nil {
		x.fail(capability.ReasonSchemaInvalid, "input is not valid JSON: "+err.Error())
		return tool.Input{}, false
	}
	sc, err := g.schemas.get(e)
	if err != nil {
		g.log.Error("gate: tool schema does not compile", "tool", e.Name(), "err", err)
		x.fail(capability.ReasonSchemaInvalid, "the tool's input schema does not compile")
		return tool.Input{}, false
	}
	if vs := sc.Validate(in); len(vs) > 0 {
		x.dec.Rule = "schema:" + vs[0].Keyword
		x.fail(capability.ReasonSchemaInvalid, schemaMessage(vs))
		return tool.Input{}, false
	}
	return in, true
}

// rewritten combines the decision d of a hook's rewrite with the
// original's: the rewrite may not reach what the original did not, and
// the stricter decision stands.
func rewritten(d, prev capability.Decision, prevIn, in tool.Input, prevReqs []capability.Request, prevKnown bool, reqs []capability.Request, known bool) capability.Decision {
	if w := widened(prevReqs, prevKnown, reqs, known); w != "" {
		return capability.Decision{Mode: capability.Deny, Reason: capability.ReasonRewriteWidened, Layer: capability.LayerHook, Request: w}
	}
	if prev.Mode < d.Mode {
		d.Mode, d.Reason, d.Layer, d.Rule = prev.Mode, prev.Reason, prev.Layer, prev.Rule
	}
	if d.Mode == capability.Allow && !prevKnown && !bytes.Equal(prevIn.Raw(), in.Raw()) {
		// Nothing proves the rewrite stays within the original.
		d.Mode, d.Reason, d.Layer, d.Rule = capability.ApprovalRequired, capability.ReasonApprovalRequired, capability.LayerHook, "rewrite of an undeclared tool"
	}
	return d
}

func safeParseRaw(p tool.RawParser, raw []byte) (out json.RawMessage, err error) {
	defer func() {
		if recover() != nil {
			out, err = nil, errors.New("the input parser panicked")
		}
	}()
	return p.ParseRaw(raw)
}

// widened returns the first request of the rewrite that the original did
// not make, or "" when the rewrite stays inside.
func widened(orig []capability.Request, origKnown bool, next []capability.Request, nextKnown bool) string {
	if !nextKnown && origKnown {
		return "a request the original input did not make"
	}
	for i := range next {
		s := next[i].String()
		found := false
		for j := range orig {
			if orig[j].String() == s {
				found = true
				break
			}
		}
		if !found {
			return s
		}
	}
	return ""
}

// rewrite sends a hook's updated input back through steps 2–4.
func (x *exec) rewrite(ctx context.Context, raw json.RawMessage, ask bool) bool {
	prevTicket := x.ticket
	x.ticket = approval.Ticket{}
	if !x.authorize(ctx, raw, false) {
		return false
	}
	if ask && x.dec.Mode == capability.Allow {
		x.dec.Mode, x.dec.Reason, x.dec.Layer = capability.ApprovalRequired, capability.ReasonApprovalRequired, "hook"
		if x.mode == ModeDontAsk {
			x.fail(capability.ReasonModeDenied, "a hook asked for approval and the mode is dontAsk")
			return false
		}
		if !x.approve(ctx) {
			return false
		}
	}
	if x.ticket.ApprovalID == "" && prevTicket.ApprovalID != "" && x.dec.Mode == capability.ApprovalRequired {
		// cannot happen: approve ran for the rewrite; keep fail closed.
		x.fail(capability.ReasonApprovalMismatch, "the approval does not cover the rewritten input")
		return false
	}
	return true
}

// approvalTarget is every resource the call touches, in full: approval is
// asked for the call, not for the one request that decided it, so naming
// only that one (the first statement of a Bash line, the read of an Edit)
// would show less than what runs. Bounded like a preview.
func (x *exec) approvalTarget() string {
	if len(x.reqs) == 0 {
		return x.dec.Request
	}
	var b strings.Builder
	for i := range x.reqs {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(x.reqs[i].String())
	}
	return approval.BoundPreview(b.String())
}

func (x *exec) approve(ctx context.Context) bool {
	g, e, c := x.g, x.entry, &x.c
	x.step(StepApproval)
	if x.mode == ModeDontAsk {
		x.fail(capability.ReasonModeDenied, "approval would be needed and the mode is dontAsk")
		return false
	}
	if g.approver == nil {
		x.fail(capability.ReasonApprovalRequired, "this call needs approval and no approver is configured")
		return false
	}
	p := e.Plugin()
	preview := x.preview(ctx)
	hash, err := approval.HashAction(approval.Action{
		Plugin: p.ID, Version: p.Version, ManifestDigest: p.ManifestDigest,
		Tool: e.Name(), Input: x.in.Raw(), RunID: c.RunID, Workspace: g.wsID,
	})
	if err != nil {
		x.fail(capability.ReasonInvalidRequest, "the action cannot be hashed")
		return false
	}
	t, err := safeApprove(approval.WithRules(ctx, x.rememberRules()), g.approver, approval.Request{
		RunID: c.RunID, Workspace: g.wsDir, Principals: c.Principals, ToolUseID: c.ID,
		Plugin: p.ID, PluginVersion: p.Version, ManifestDigest: p.ManifestDigest, Tool: e.Name(),
		Target: x.approvalTarget(), Preview: preview, ActionHash: hash,
	})
	if err != nil {
		reason := capability.ReasonOf(err)
		switch {
		case reason == "" && ctx.Err() != nil:
			reason = capability.ReasonCanceled
		case reason == "":
			reason = capability.ReasonApprovalDenied
		}
		x.fail(reason, "not approved: "+boundMsg(err.Error(), 300))
		return false
	}
	if t.ApprovalID == "" || (t.ActionHash != "" && t.ActionHash != hash) {
		x.fail(capability.ReasonApprovalMismatch, "the approver returned no ticket for this action")
		return false
	}
	x.ticket = t
	x.res.ApprovalID = t.ApprovalID
	if x.preview(ctx) != preview {
		// The human approved what the preview showed; the file it was
		// computed from changed while they looked.
		x.fail(capability.ReasonApprovalMismatch, "what the call would do changed after the approval was asked (the file changed); it did not run")
		return false
	}
	return true
}

func safeApprove(ctx context.Context, a approval.Authorizer, r approval.Request) (t approval.Ticket, err error) {
	defer func() {
		if recover() != nil {
			t, err = approval.Ticket{}, errors.New("the approver panicked")
		}
	}()
	return a.Authorize(ctx, r)
}

// preview is the one approval preview of a call, the text every door
// shows (the prompt, `norma approvals show`, the audit event, --json): the
// tool's own rendering ([tool.Previewer]: Bash's command line, the diff of
// a Write, Edit or MultiEdit computed from the file through the call's
// file guard) or else the input in the canonical JSON that the action hash
// covers (a plugin tool's arguments), bounded by [approval.BoundPreview].
// The preview sees only the call's FS, so it can read and nothing else.
func (x *exec) preview(ctx context.Context) string {
	if x.in.IsZero() {
		return "" // the input did not pass the schema: nothing to show
	}
	var env tool.Env
	if x.g.caps != nil {
		if e, err := x.g.caps(x.entry.Plugin()); err == nil {
			env.FS = e.FS
		}
	}
	text, err := x.entry.Preview(ctx, env, x.in)
	if err != nil {
		canon, cerr := approval.CanonicalInput(x.in.Raw())
		if cerr != nil {
			canon = x.in.Raw()
		}
		text = string(canon)
		if !errors.Is(err, tool.ErrNoPreview) {
			text += "\n(the change cannot be shown: " + boundMsg(err.Error(), 300) + ")"
		}
	}
	return approval.BoundPreview(text)
}

// env builds the handler's Env.
func (x *exec) env() (tool.Env, bool) {
	g, c := x.g, &x.c
	var env tool.Env
	if g.caps != nil {
		var err error
		if env, err = g.caps(x.entry.Plugin()); err != nil {
			x.fail(capability.ReasonPolicyError, "the tool's capabilities are unavailable")
			return env, false
		}
	}
	env.RunID, env.ToolUseID = c.RunID, c.ID
	env.Principals = append([]string(nil), c.Principals...)
	// Set even when empty: the capabilities never choose the key.
	env.ApprovalKey = x.ticket.IdempotencyKey
	if env.Exec != nil {
		probe := x.pol.Decide(context.Background(), capability.Request{Kind: capability.ProcessSpawn, Argv: []string{"true"}})
		if probe.Mode == capability.Deny {
			env.Exec = nil
		} else {
			declared := slices.ContainsFunc(x.reqs, func(r capability.Request) bool { return r.Kind == capability.ProcessSpawn })
			x.red = &redaction{g: x.g, toolUseID: c.ID}
			env.Exec = &guardedRunner{inner: env.Exec, pol: x.pol, deny: x.g.rules.current(), declared: declared, red: x.red}
		}
	}
	return env, true
}

// call runs the handler with a deadline, panic recovery and cancellation.
// The handler runs on its own goroutine so that Execute returns at the
// deadline even if the handler ignores its context; a handler that never
// blocks (tool.Inliner) needs no such goroutine and runs on the caller's.
func (x *exec) call(ctx context.Context, env tool.Env) (tool.Result, error) {
	timeout := x.entry.Timeout()
	if timeout <= 0 {
		timeout = x.g.timeout
	}
	start := time.Now()
	cctx := newCallCtx(ctx, start.Add(timeout))
	var r callResult
	if x.entry.Inline() {
		r = x.callInline(cctx, env)
		cctx.end(context.Canceled)
	} else {
		r = x.callAsync(ctx, cctx, env, timeout)
	}
	if r.err != nil && capability.ReasonOf(r.err) == "" && (errors.Is(r.err, context.DeadlineExceeded) || errors.Is(r.err, context.Canceled)) {
		// The handler gave up because its context ended.
		if ctx.Err() != nil || cctx.parentFirst {
			r.err = errCanceled()
		} else {
			r.err = errTimedOut(timeout)
		}
	}
	x.res.Duration = time.Since(start)
	x.finishTicket(ctx)
	return r.r, r.err
}

type callResult struct {
	r   tool.Result
	err error
}

// callAsync runs the handler on its own goroutine and returns when it
// does, when ctx ends or at cctx's deadline, whichever comes first; cctx
// is ended then.
func (x *exec) callAsync(ctx context.Context, cctx *callCtx, env tool.Env, timeout time.Duration) callResult {
	ch := make(chan callResult, 1)
	// The goroutine may outlive the call (a handler past its deadline):
	// it holds copies, never x, which lives on Execute's stack.
	disp, entry, in := x.g.disp, x.entry, x.in
	go func() {
		defer func() {
			if p := recover(); p != nil {
				ch <- callResult{err: errPanic()}
			}
		}()
		r, err := disp.Call(cctx, entry, env, in)
		ch <- callResult{r, err}
	}()
	timer := getTimer(time.Until(cctx.deadline))
	defer putTimer(timer)
	select {
	case r := <-ch:
		cctx.end(context.Canceled)
		return r
	case <-ctx.Done():
		cctx.end(ctx.Err())
		return callResult{err: errCanceled()}
	case <-timer.C:
		cctx.end(context.DeadlineExceeded)
		if ctx.Err() != nil || cctx.parentFirst {
			return callResult{err: errCanceled()}
		}
		return callResult{err: errTimedOut(timeout)}
	}
}

// callInline runs a handler that never blocks on the caller's goroutine,
// with panic recovery.
func (x *exec) callInline(cctx *callCtx, env tool.Env) (r callResult) {
	defer func() {
		if p := recover(); p != nil {
			r = callResult{err: errPanic()}
		}
	}()
	r.r, r.err = x.g.disp.Call(cctx, x.entry, env, x.in)
	return r
}

func errPanic() error {
	return &capability.Error{Decision: capability.Decision{Mode: capability.Deny, Reason: capability.ReasonPanic, Layer: "tool"}, Detail: "the tool panicked"}
}

func errCanceled() error {
	return &capability.Error{Decision: capability.Decision{Mode: capability.Deny, Reason: capability.ReasonCanceled, Layer: "gate"}, Detail: "the call was canceled"}
}

func errTimedOut(timeout time.Duration) error {
	return &capability.Error{Decision: capability.Decision{Mode: capability.Deny, Reason: capability.ReasonTimeout, Layer: "gate"}, Detail: "the call exceeded its deadline of " + timeout.String()}
}

// finishTicket tells the approver that the execution its ticket let
// through is over (it ran, or it never will).
func (x *exec) finishTicket(ctx context.Context) {
	if x.ticket.ApprovalID == "" {
		return
	}
	if f, ok := x.g.approver.(approval.Finisher); ok {
		if err := f.Finish(x.detached(ctx), x.ticket); err != nil {
			x.g.log.Error("gate: approval finish failed", "tool", x.entry.Name(), "err", err)
		}
	}
}

// finish is step 9: the final audit event.
func (x *exec) finish(ctx context.Context, executed bool) {
	x.step(StepAudit)
	if x.res.IsError && x.res.Reason == "" {
		x.res.Reason = capability.ReasonPolicyError
	}
	if !x.res.IsError {
		x.res.Reason = capability.ReasonAllowed
	}
	typ := audit.TypeCapabilityDecision
	if executed {
		typ = audit.TypeToolCallFinished
	}
	e := x.event(typ)
	e.IsError, e.DurationMS = x.res.IsError, x.res.Duration.Milliseconds()
	if executed {
		e.Reason = string(x.res.Reason)
	}
	if x.res.Spill != nil {
		e.OutputDigest = x.res.Spill.Digest
	}
	if err := x.g.sink.Record(x.detached(ctx), e); err != nil {
		x.res.AuditFailed = true
		x.g.log.Error("gate: audit refused the final event", "tool", x.c.Tool, "err", err)
	}
	x.res.Decision = x.dec
}

// reqString is x.reqs[i].String(); the first request's, which the
// decision and the audit target both name, is made once.
func (x *exec) reqString(i int) string {
	if i != 0 {
		return x.reqs[i].String()
	}
	if x.req0 == "" {
		x.req0 = x.reqs[0].String()
	}
	return x.req0
}

// detached is ctx without its cancellation, for what must happen even
// when the call was canceled (the ledger, the audit events). Made once per
// call: ctx is the same for every step.
func (x *exec) detached(ctx context.Context) context.Context {
	if x.bg == nil {
		x.bg = ctx
		if ctx.Done() != nil { // one that cannot be canceled is kept as is
			x.bg = context.WithoutCancel(ctx)
		}
	}
	return x.bg
}

// principalChain is the call's principal chain joined with ">".
func (x *exec) principalChain() string {
	if x.principal == "" {
		x.principal = x.c.Principals[0]
		if len(x.c.Principals) > 1 {
			x.principal = strings.Join(x.c.Principals, ">")
		}
	}
	return x.principal
}

func (x *exec) event(typ string) audit.Event {
	c := &x.c
	x.principalChain()
	e := audit.Event{
		Type: typ, RunID: c.RunID, Principal: x.principal, Tool: c.Tool,
		Decision: x.dec.Mode.String(), Reason: string(x.dec.Reason), Layer: string(x.dec.Layer), Rule: x.dec.Rule,
		ManifestDigest: x.dec.ManifestDigest, PolicyGeneration: x.dec.PolicyGeneration,
		ApprovalID: x.res.ApprovalID,
	}
	switch {
	case typ == audit.TypeCapabilityDecision:
		// A refusal: the stage says where the call stopped.
		e.Detail = map[string]string{"toolUseId": c.ID, "stage": x.res.Stage.String()}
	case x.detail == nil:
		// The started and finished events of a call share one read-only
		// map; their types say the stage.
		x.detail = map[string]string{"toolUseId": c.ID}
		fallthrough
	default:
		e.Detail = x.detail
	}
	if x.entry != nil {
		p := x.entry.Plugin()
		e.Plugin, e.PluginVersion = p.ID, p.Version
		if e.ManifestDigest == "" {
			e.ManifestDigest = p.ManifestDigest
		}
	}
	if len(x.reqs) > 0 {
		e.CapabilityKind = x.reqs[0].Kind.String()
		if x.targetHash == "" {
			x.targetHash = audit.HashTarget(x.reqString(0))
		}
		e.TargetHash = x.targetHash
	}
	if x.dec.Reason == "" {
		e.Decision, e.Reason = "", string(x.res.Reason)
	}
	return e
}

func quoteName(s string) string {
	return fmt.Sprintf("%q", boundMsg(s, 128))
}

func boundMsg(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func schemaMessage(vs []Violation) string {
	var b strings.Builder
	b.WriteString("input does not match the tool's schema:")
	for i, v := range vs {
		if i == 8 {
			fmt.Fprintf(&b, "\n- and %d more", len(vs)-i)
			break
		}
		fmt.Fprintf(&b, "\n- at %s: %s (%s)", v.Instance, v.Message, v.Keyword)
	}
	return b.String()
}

func denyMessage(d capability.Decision) string {
	var b strings.Builder
	b.WriteString("denied: ")
	b.WriteString(string(d.Reason))
	if d.Layer != "" {
		b.WriteString(" (layer ")
		b.WriteString(string(d.Layer))
		if d.Rule != "" {
			b.WriteString(", rule ")
			b.WriteString(d.Rule)
		}
		b.WriteString(")")
	}
	if d.Request != "" {
		b.WriteString(" for ")
		b.WriteString(boundMsg(d.Request, 300))
	}
	return b.String()
}

// ExecuteExtra runs a deferred tool on the model's explicit request (the
// ExecuteExtraTool path): a tool registered as Deferred that this view may
// use is unlocked for the rest of the run, then the call goes through
// Execute like any other. Hidden tools are not unlocked this way.
func (g *Gate) ExecuteExtra(ctx context.Context, c Call) Result {
	if v, err := g.reg.View(c.RunID, c.Principals); err == nil {
		for _, n := range v.Deferred() {
			if n == c.Tool {
				_ = v.UnlockChain(n)
				break
			}
		}
	}
	return g.Execute(ctx, c)
}

// ExecuteBatch runs the calls of one model turn. Consecutive calls that
// are read-only and concurrency-safe run in parallel (at most MaxParallel at
// once); every other call runs alone, after everything before it finished.
// Results are in call order, one per call.
func (g *Gate) ExecuteBatch(ctx context.Context, calls []Call) []Result {
	out := make([]Result, len(calls))
	safe := make([]bool, len(calls))
	for i := range calls {
		safe[i] = g.concurrent(&calls[i])
	}
	sem := make(chan struct{}, g.parallel)
	for i := 0; i < len(calls); {
		if !safe[i] {
			out[i] = g.Execute(ctx, calls[i])
			i++
			continue
		}
		j := i
		for j < len(calls) && safe[j] {
			j++
		}
		var wg sync.WaitGroup
		for k := i; k < j; k++ {
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				out[k] = g.Execute(ctx, calls[k])
			})
		}
		wg.Wait()
		i = j
	}
	return out
}

// concurrent judges a call before it runs; anything that cannot be judged
// is exclusive.
func (g *Gate) concurrent(c *Call) bool {
	v, err := g.reg.View(c.RunID, c.Principals)
	if err != nil {
		return false
	}
	e, ok := v.Lookup(c.Tool)
	if !ok {
		return false
	}
	raw := []byte(c.Input)
	if p, ok := e.RawParser(); ok {
		if raw, err = safeParseRaw(p, raw); err != nil {
			return false
		}
	}
	in, err := tool.ParseInput(raw)
	if err != nil {
		return false
	}
	return e.ReadOnly(in) && e.ConcurrencySafe(in)
}

// guardedRunner is the process capability as a handler receives it: every
// process it runs or starts is checked first against the deny rules and
// the call's policy — its argv and every command that argv runs (a shell's
// -c script, a wrapper's command) as internal/shellcmd sees them — so what
// a tool starts is decided by the gate's policy value, not by the tool.
type guardedRunner struct {
	inner tool.Runner
	pol   capability.Decider
	deny  *policy.RuleSet
	// declared reports that the call declared process.spawn and the gate
	// decided it: a policy requiring approval for spawning was met by this
	// call's approval, and a command whose effect cannot be known was
	// judged (approved) as such. Otherwise both are refused here.
	declared bool
	// red redacts the output of what the call runs, as it arrives.
	red *redaction
}

func (r *guardedRunner) Run(ctx context.Context, cmd tool.Command) (tool.CommandResult, error) {
	if err := r.check(ctx, cmd.Argv); err != nil {
		return tool.CommandResult{}, err
	}
	cmd, flush := r.red.wrapOutput(cmd)
	res, err := r.inner.Run(ctx, cmd)
	flush()
	res.Stdout, res.Stderr = r.red.collected(res.Stdout), r.red.collected(res.Stderr)
	return res, err
}

// Stream makes the runner a tool.Redactor: a tool relaying output it reads
// itself from a process it started (a terminal) redacts it as the call's
// stream.
func (r *guardedRunner) Stream(w io.Writer) io.WriteCloser { return r.red.Stream(w) }

func (r *guardedRunner) Start(ctx context.Context, cmd tool.Command) (tool.Process, error) {
	if err := r.check(ctx, cmd.Argv); err != nil {
		return nil, err
	}
	cmd, flush := r.red.wrapOutput(cmd)
	p, err := r.inner.Start(ctx, cmd)
	if err != nil {
		flush()
		return nil, err
	}
	return &redactedProcess{Process: p, flush: sync.OnceFunc(flush)}, nil
}

// check decides one argv; the error is a *capability.Error.
func (r *guardedRunner) check(ctx context.Context, argv []string) error {
	if len(argv) == 0 {
		return capability.Denied(capability.ReasonInvalidRequest, "process.spawn", "empty argv")
	}
	se := shellcmd.Argv(argv)
	reqs := make([]capability.Request, 0, len(se.Spawns))
	for _, a := range se.Spawns {
		reqs = append(reqs, capability.Request{Kind: capability.ProcessSpawn, Argv: a})
	}
	for i := range reqs {
		if rl, ok := r.deny.Deny("", reqs[i:i+1]); ok {
			return &capability.Error{Decision: capability.Decision{Mode: capability.Deny, Reason: capability.ReasonRuleDenied, Layer: "rules", Rule: rl, Request: reqs[i].String()}}
		}
	}
	if se.Unknown != "" && !r.declared {
		return &capability.Error{Decision: capability.Decision{Mode: capability.Deny, Reason: capability.ReasonCommandUnparseable, Layer: "rules",
			Request: capability.Request{Kind: capability.ProcessSpawn, Argv: argv}.String()}, Detail: se.Unknown}
	}
	for i := range reqs {
		d := r.pol.Decide(ctx, reqs[i])
		switch {
		case d.Mode == capability.Allow:
		case d.Mode == capability.ApprovalRequired && r.declared:
		default:
			if d.Mode == capability.ApprovalRequired {
				d.Reason = capability.ReasonApprovalRequired
			}
			d.Mode = capability.Deny
			if d.Request == "" {
				d.Request = reqs[i].String()
			}
			return &capability.Error{Decision: d}
		}
	}
	return nil
}
