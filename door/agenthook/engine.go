package agenthook

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/norma-run/norma/audit"
	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/gate"
	"github.com/norma-run/norma/policy"
	"github.com/norma-run/norma/runtime"
	"github.com/norma-run/norma/settings"
)

// Audit event types of the agent hooks. A decision on a call is a
// capability_decision like the gate's own (Detail names the agent); a
// call's result and a session's start and end have their own types.
const (
	TypeToolResult = audit.TypeAgentToolResult
	TypeSession    = audit.TypeAgentSession
)

// EngineOptions configure an [Engine].
type EngineOptions struct {
	// Home is Norma's state directory: its installed plugins, its trust
	// records of workspace files, as `norma run` uses them.
	Home string
	// Settings names the settings files besides the workspace's own
	// (user, --settings, managed).
	Settings settings.Options
	// Audit receives every decision: the state directory's audit log,
	// the sink `norma run` writes. Required.
	Audit audit.Sink
	// Warn receives problems that do not stop a decision (a held change
	// of a workspace policy file, a plugin that cannot be described); nil
	// discards them. Escape what it prints.
	Warn func(error)
	// Exec is the command line of this norma binary (its absolute path,
	// and --home H when a state directory was chosen). When set, Claude
	// Code's allowed and asked Bash calls are answered with an updated
	// input that runs them inside Norma's sandbox (see confines); empty,
	// they run in the agent's own shell, decided as such.
	Exec []string
	// Shell is the environment of the agent's own shell ($HOME, whether
	// CDPATH is set), where an unconfined command's ~ and cd lead. A
	// command hook runs in the agent's environment and passes its own; the
	// daemon passes the one it was started with.
	Shell gate.AgentShell
	// Environ is the agent's environment (KEY=VALUE): the credentials in
	// it are known values to the detector at the exits (a WebFetch or a
	// command that would send one is SECRET_EGRESS; see
	// secret.Redactor.AddEnvironment). Nil: token formats only.
	Environ []string
}

// Engine is the [Decider] of every agent hook door: it decides each event
// with the gate's own decision path ([runtime.Runtime.Explain]) in the
// workspace of the event's cwd, and records the decision in the audit
// log. It is safe for concurrent use; the daemon keeps one alive, the
// command hook makes one per call.
//
// Runtimes are cached per workspace and mode. Each call revalidates its
// runtime by a stat fingerprint of the files it was built from (settings,
// the workspace's policy and settings, the trust records, the installed
// plugins' state), so that a changed policy applies at the next call.
type Engine struct {
	o   EngineOptions
	now func() time.Time

	mu sync.Mutex
	rt map[rtKey]*rtEntry
}

type rtKey struct {
	cwd  string
	mode string // the agent's mode, as it narrows Norma's
}

type rtEntry struct {
	// mu is held exclusively by the first Explain (it claims the
	// runtime's session, which is safe for concurrent use only once that
	// returned) and by closeLater, and shared by later Explains.
	mu     sync.RWMutex
	warm   atomic.Bool // an Explain returned
	closed bool        // under mu: replaced and closed
	rt     *runtime.Runtime
	fp     string
	rules  *policy.RuleSet
	shell  gate.AgentShell // EngineOptions.Shell
}

// NewEngine returns an engine deciding with o.
func NewEngine(o EngineOptions) (*Engine, error) {
	if o.Audit == nil {
		return nil, errors.New("agenthook: NewEngine: Audit is required")
	}
	return &Engine{o: o, now: time.Now, rt: map[rtKey]*rtEntry{}}, nil
}

// Close closes the cached runtimes.
func (e *Engine) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	var errs []error
	for k, en := range e.rt {
		errs = append(errs, en.rt.Close())
		delete(e.rt, k)
	}
	return errors.Join(errs...)
}

// Decide decides ev and records it. Any failure — the workspace does not
// open, the audit log refuses the event — is a deny with its reason code:
// an undecided call never runs as allowed.
func (e *Engine) Decide(ctx context.Context, ev Event) Verdict {
	if len(ev.More) > 0 {
		return DecideAll(ctx, e, ev) // each call alone, then the strictest
	}
	start := e.now()
	switch ev.Kind {
	case SessionStart, SessionEnd:
		return e.session(ctx, ev)
	case BeforeTool, PermissionRequest, AfterTool:
	default:
		return failure(capability.ReasonHookInputInvalid, fmt.Sprintf("Norma does not decide %q events", ev.Kind))
	}
	v, tool := e.decideCall(ctx, ev)
	if ctx.Err() != nil {
		// Too late: Handle has answered (deny); the log says what the
		// agent was told.
		v = failure(capability.ReasonTimeout, "Norma did not decide in time, so the call is denied")
	}
	if err := e.record(ctx, e.event(ev, tool, v, start)); err != nil {
		return failure(capability.ReasonAuditUnavailable, "the decision could not be recorded in Norma's audit log, so the call is denied")
	}
	return v
}

// decideCall decides the call of ev; tool is the name audited (Norma's
// tool, or the agent's for a call with no mapping).
func (e *Engine) decideCall(ctx context.Context, ev Event) (Verdict, string) {
	en, err := e.runtime(ctx, ev)
	if err != nil {
		return FailVerdict(err), ev.Tool
	}
	if v, decided := e.definition(ctx, ev, en); decided {
		return v, ev.Tool // a subagent, skill or command by its definition (definitions.go)
	}
	if ev.Call == nil {
		return byName(en.rules, en.rt.Mode(), ev), ev.Tool
	}
	call, confined := ev.Call, e.confines(ev, en)
	if confined {
		if call, err = e.unwrapped(ev); err != nil {
			return FailVerdict(err), ev.Call.Tool
		}
	}
	x, err := en.explain(ctx, call)
	if errors.Is(err, errReplaced) {
		// Replaced by a newer runtime meanwhile: decide with that one.
		if en, err = e.runtime(ctx, ev); err == nil {
			x, err = en.explain(ctx, call)
		}
	}
	if err != nil {
		return FailVerdict(err), ev.Call.Tool
	}
	if x.Stage == gate.StepLookup && x.Decision.Reason == capability.ReasonToolUnknown && strings.HasPrefix(ev.Call.Tool, "mcp__") {
		// An MCP server of the agent's that is no installed plugin: Norma
		// cannot see what its tool does, as for a tool with no mapping.
		return byName(en.rules, en.rt.Mode(), ev), ev.Tool
	}
	d, msg := explained(x)
	if call.Tool == "Bash" {
		// The files its pathname patterns name, decided as reads.
		if gv, changed := e.globReads(ctx, en, ev, call, d); changed {
			return gv, ev.Call.Tool
		}
	}
	v := Verdict{Decision: d, Message: msg}
	if confined && ev.Kind == BeforeTool && d.Mode != capability.Deny {
		// What was decided is what runs: the command, in the sandbox.
		cmd, _ := bashCommand(call.Input)
		if v.UpdatedInput, err = withCommand(ev.Input, Wrap(e.o.Exec, ev.Cwd, cmd)); err != nil {
			return FailVerdict(err), ev.Call.Tool
		}
	}
	return v, ev.Call.Tool
}

// unwrapped is the Bash call of ev as decided when it runs confined: the
// command Norma's own wrapper of this workspace runs when the agent sends
// one (after PreToolUse answered with it), else the call as parsed.
func (e *Engine) unwrapped(ev Event) (*Call, error) {
	raw, ok := bashCommand(ev.Input)
	if !ok {
		return ev.Call, nil
	}
	inner, ok := unwrap(e.o.Exec, ev.Cwd, raw)
	if !ok {
		return ev.Call, nil
	}
	in, err := withCommand(ev.Call.Input, inner)
	if err != nil {
		return nil, invalid("the Bash tool_input: %v", err)
	}
	return &Call{Tool: ev.Call.Tool, Input: in}, nil
}

var errReplaced = errors.New("agenthook: the runtime was replaced")

// explain decides c with the gate of en's runtime.
//
// Every call is decided as one that runs outside Norma's sandbox
// (gate.Call.Unconfined), a confined Bash command too: the analysis of what
// it names refuses what it can see, and the sandbox it then runs in
// (confine.go) hides what the analysis cannot (x=.env; cat $x). Neither
// widens the other.
func (en *rtEntry) explain(ctx context.Context, c *Call) (gate.Explanation, error) {
	if en.warm.Load() {
		en.mu.RLock()
		defer en.mu.RUnlock()
	} else {
		en.mu.Lock()
		defer en.mu.Unlock()
	}
	if en.closed {
		return gate.Explanation{}, errReplaced
	}
	x, err := en.rt.ExplainUnconfined(ctx, c.Tool, c.Input, en.shell)
	en.warm.Store(true)
	return x, err
}

// byName decides a call with no Norma counterpart by the user's
// permission rules alone, matched by the agent's tool name: a deny or ask
// rule applies to inert tools too; a tool that is neither inert nor
// named by an allow rule is refused, since Norma cannot see what it does.
// In dontAsk (the session's mode, mode) what would ask is denied, as the
// gate denies it.
func byName(rs *policy.RuleSet, mode gate.Mode, ev Event) Verdict {
	if rule, ok := rs.Deny(ev.Tool, nil); ok {
		return Verdict{Decision: capability.Decision{Mode: capability.Deny, Reason: capability.ReasonRuleDenied, Layer: capability.LayerRules, Rule: rule},
			Message: fmt.Sprintf("the permission rule %q denies %s", rule, ev.Tool)}
	}
	if rule, ok := rs.Ask(ev.Tool, nil); ok && mode == gate.ModeDontAsk {
		return Verdict{Decision: capability.Decision{Mode: capability.Deny, Reason: capability.ReasonModeDenied, Layer: capability.LayerMode, Rule: "mode:dontAsk"},
			Message: fmt.Sprintf("the permission rule %q asks to approve %s, and the mode is dontAsk", rule, ev.Tool)}
	}
	if rule, ok := rs.Ask(ev.Tool, nil); ok {
		return Verdict{Decision: capability.Decision{Mode: capability.ApprovalRequired, Reason: capability.ReasonApprovalRequired, Layer: capability.LayerRules, Rule: rule},
			Message: fmt.Sprintf("the permission rule %q asks the user to approve %s", rule, ev.Tool)}
	}
	if ev.Inert {
		return Verdict{Decision: capability.Decision{Mode: capability.Allow, Reason: capability.ReasonAllowed, Layer: capability.LayerAgent},
			Message: ev.Tool + " has no effect outside the agent; allowed"}
	}
	if rule, ok := rs.Allow(ev.Tool, nil, true); ok {
		return Verdict{Decision: capability.Decision{Mode: capability.Allow, Reason: capability.ReasonAllowed, Layer: capability.LayerRules, Rule: rule},
			Message: fmt.Sprintf("the permission rule %q allows %s", rule, ev.Tool)}
	}
	return deny(capability.ReasonHookToolUnmapped, fmt.Sprintf("Norma has no mapping for the tool %s and no permission rule names it, so it is denied; "+
		"add an allow or ask rule for it to the Norma settings to let it run", ev.Tool))
}

// session records a session's start or end. Nothing is decided: a
// session's start is allowed, with a line of context for the model.
func (e *Engine) session(ctx context.Context, ev Event) Verdict {
	a := audit.Event{Type: TypeSession, Time: e.now(), Principal: string(ev.Agent), Detail: e.detail(ev)}
	if err := e.record(ctx, a); err != nil {
		return failure(capability.ReasonAuditUnavailable, "the session could not be recorded in Norma's audit log")
	}
	v := Verdict{Decision: capability.Decision{Mode: capability.Allow, Reason: capability.ReasonAllowed, Layer: capability.LayerAgent}}
	if ev.Kind == SessionStart {
		v.Message = "Norma decides this session's tool calls with the user's Norma policy; a call it refuses comes back with a reason code (NORMA CODE: ...)."
	}
	return v
}

// event is the audit event of a decision on ev's call.
func (e *Engine) event(ev Event, tool string, v Verdict, start time.Time) audit.Event {
	d := v.Decision
	a := audit.Event{Type: audit.TypeCapabilityDecision, Time: e.now(), Principal: string(ev.Agent), Tool: tool,
		Decision: d.Mode.String(), Reason: string(d.Reason), Layer: string(d.Layer), Rule: d.Rule,
		ManifestDigest: d.ManifestDigest, PolicyGeneration: d.PolicyGeneration, TargetHash: audit.HashTarget(d.Request),
		DurationMS: e.now().Sub(start).Milliseconds(), Detail: e.detail(ev)}
	if len(v.UpdatedInput) > 0 {
		// The agent runs the call as Norma rewrote it: in the sandbox.
		a.Detail["confined"] = "sandbox"
	}
	if ev.Kind == AfterTool {
		a.Type = TypeToolResult
		a.OutputDigest = digest(ev.Response)
		a.IsError = toolFailed(ev.Response)
	}
	return a
}

func (e *Engine) detail(ev Event) map[string]string {
	d := map[string]string{"agent": string(ev.Agent), "event": ev.Name, "session": ev.Session, "cwd": ev.Cwd}
	if ev.ToolUseID != "" {
		d["tool_use_id"] = ev.ToolUseID
	}
	if ev.Tool != "" {
		d["agent_tool"] = ev.Tool
	}
	if ev.PermissionMode != "" {
		d["agent_mode"] = ev.PermissionMode
	}
	return d
}

func deny(r capability.Reason, msg string) Verdict {
	return Verdict{Decision: capability.Decision{Mode: capability.Deny, Reason: r, Layer: capability.LayerAgent}, Message: msg}
}

// failure is the verdict of an event that could not be decided.
func failure(r capability.Reason, msg string) Verdict {
	return FailVerdict(&capability.Error{Decision: capability.Decision{Mode: capability.Deny, Reason: r, Layer: capability.LayerAgent}, Detail: msg})
}

func digest(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	h := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(h[:])
}

// narrow is the mode a session decides in when the agent runs in its
// own mode agent: the stricter of the two, never wider than Norma's.
// Plan and dontAsk are stricter than default, default than acceptEdits;
// plan and dontAsk are not comparable, so Norma's stands between them.
// An agent mode Norma does not know (bypassPermissions, auto) narrows
// nothing.
func narrow(agent string) func(gate.Mode) gate.Mode {
	return func(m gate.Mode) gate.Mode {
		switch a, err := gate.ParseMode(agent); {
		case err != nil || a == gate.ModeBypass:
			return m
		case m == gate.ModePlan || m == gate.ModeDontAsk:
			return m
		case a == gate.ModePlan || a == gate.ModeDontAsk:
			return a
		case a == gate.ModeDefault && m == gate.ModeAcceptEdits:
			return a
		}
		return m
	}
}

// record writes a to the audit log, with a deadline of its own: a
// decision that ran out of time is still recorded as the refusal it
// became.
func (e *Engine) record(ctx context.Context, a audit.Event) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), auditTimeout)
	defer cancel()
	return e.o.Audit.Record(ctx, a)
}

// explained is the decision of an explanation without its trace, and
// what to tell the agent of it.
func explained(x gate.Explanation) (capability.Decision, string) {
	d := x.Decision
	d.Trace = nil
	switch {
	case x.Message != "":
		return d, x.Message
	case d.Mode == capability.Allow:
		return d, "allowed by Norma's policy"
	case d.Mode == capability.ApprovalRequired:
		return d, "Norma's policy asks the user to approve this call"
	}
	return d, ""
}
