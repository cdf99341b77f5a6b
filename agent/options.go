package agent

import (
	"go.opentelemetry.io/otel/trace"

	"context"
	"crypto/x509"
	"errors"
	"log/slog"
	"time"

	"github.com/norma-run/norma/approval"
	"github.com/norma-run/norma/audit"
	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/gate"
	"github.com/norma-run/norma/guard/netguard"
	"github.com/norma-run/norma/hook"
	"github.com/norma-run/norma/manifest"
	"github.com/norma-run/norma/policy"
	"github.com/norma-run/norma/provider"
	"github.com/norma-run/norma/secret"
	"github.com/norma-run/norma/tool"
)

// Option configures a [Session]; see [NewSession].
type Option func(*config) error

// Plugin is a loaded plugin whose tools the session registers (as
// mcp__<id>__<tool>, the way plugin/host names them) and whose compiled
// policy the gate applies to every call of those tools.
// *host.Plugin implements it.
type Plugin interface {
	Manifest() *manifest.Manifest
	// ServerName is the name its tools go by: mcp__SERVER__TOOL.
	ServerName() string
	Policy() *policy.Set
	Tools() ([]tool.CoreTool, error)
}

// Limits bound a session. A zero field means no limit, except MaxTurns
// (zero means [DefaultMaxTurns]) and MaxStopContinuations (zero means
// [DefaultMaxStopContinuations]). Usage and cost of subagents count
// against the parent's limits.
type Limits struct {
	// MaxTurns bounds the model turns of the main session.
	MaxTurns int
	// MaxTokens bounds input plus output tokens over all turns.
	MaxTokens int
	// MaxDuration bounds the wall time of the session (resumed runs count
	// the time they had already spent).
	MaxDuration time.Duration
	// MaxCost bounds the cost, computed with Pricing, in the currency of
	// Pricing (usually US dollars).
	MaxCost float64
	// Pricing is the price per million input and output tokens.
	Pricing Pricing
	// MaxStopContinuations caps how often Stop hooks may make the model go
	// on instead of stopping.
	MaxStopContinuations int
	// MaxTokensPerTurn is sent as the request's max_tokens; zero lets the
	// provider choose.
	MaxTokensPerTurn int
}

// Pricing is the price per million tokens.
type Pricing struct {
	InputPerMTok, OutputPerMTok float64
}

// Cost returns the price of u.
func (p Pricing) Cost(u provider.Usage) float64 {
	return float64(u.InputTokens)*p.InputPerMTok/1e6 + float64(u.OutputTokens)*p.OutputPerMTok/1e6
}

// Defaults.
const (
	DefaultMaxTurns             = 50
	DefaultMaxStopContinuations = 3
	DefaultMaxSubagentDepth     = 2
	DefaultUser                 = "user:local"
	// AgentPrincipal is the principal of the main session, under the user.
	AgentPrincipal = "agent:main"
)

type config struct {
	tracer        trace.Tracer
	prov, subProv provider.Provider
	model         string
	baseURL       string
	system        string
	regs          []tool.Registration
	plugins       []Plugin
	builtinPolicy capability.Decider
	workspace     *manifest.Layer
	runLayer      *manifest.Layer
	sandbox       bool
	rules         policy.Rules
	mode          gate.Mode
	hooks         *hook.Registry
	approver      approval.Authorizer
	svc           *approval.Service
	sink          audit.Sink
	stateDir      string
	wsDir         string
	protected     []string
	runID         string
	resume        bool
	user          string
	limits        Limits
	observer      func(Event)
	subagents     bool
	maxDepth      int
	binders       []func(*gate.Gate) error
	unlock        []string
	logger        *slog.Logger
	now           func() time.Time
	spillDir      string
	todos         TodoSource
	gateTimeout   time.Duration
	reg           *tool.Registry
	rootCAs       *x509.CertPool
	resolver      netguard.Resolver
	exec          tool.Runner
	ledger        approval.Ledger
	redactor      *secret.Redactor
}

// TodoSource reads a run's todo list, as JSON, for the state file; the
// built-in todo tool's store implements it through a small adapter.
type TodoSource func(ctx context.Context, runID string) ([]byte, error)

// WithProvider sets the model provider and model name. Required.
func WithProvider(p provider.Provider, model string) Option {
	return func(c *config) error {
		if p == nil {
			return errors.New("agent: WithProvider: nil provider")
		}
		c.prov, c.model = p, model
		return nil
	}
}

// WithProviderBaseURL records the base URL the provider was configured
// with (empty: its default server) in the run state, next to the
// provider's name and the model, so that a resumed run can be pointed at
// the same server ([State.BaseURL]). It configures nothing itself. The
// URL is stored as given: do not put credentials in it.
func WithProviderBaseURL(u string) Option {
	return func(c *config) error { c.baseURL = u; return nil }
}

// WithSubagentProvider sets the provider subagents talk to; by default
// they use the session's provider. (A scripted provider replays one
// conversation, so a scripted session with subagents needs a second one.)
func WithSubagentProvider(p provider.Provider) Option {
	return func(c *config) error { c.subProv = p; return nil }
}

// WithSystemPrompt sets the base system prompt. The session appends the
// prompts of the tools the model can see; tool results never enter it.
func WithSystemPrompt(s string) Option {
	return func(c *config) error { c.system = s; return nil }
}

// WithTools registers built-in (first-party) tools, visible to the model.
// They are called only through the session's gate under the built-in policy.
func WithTools(ts ...tool.CoreTool) Option {
	return func(c *config) error {
		for _, t := range ts {
			if t == nil {
				return errors.New("agent: WithTools: nil tool")
			}
			c.regs = append(c.regs, tool.Registration{Tool: t})
		}
		return nil
	}
}

// WithDeferredTools registers built-in tools that are listed in the
// deferred catalog only and become callable once unlocked for the run
// (by the gate's ExecuteExtra path or [WithUnlocked]).
func WithDeferredTools(ts ...tool.CoreTool) Option {
	return func(c *config) error {
		for _, t := range ts {
			if t == nil {
				return errors.New("agent: WithDeferredTools: nil tool")
			}
			c.regs = append(c.regs, tool.Registration{Tool: t, Visibility: tool.Deferred})
		}
		return nil
	}
}

// WithPlugins registers the tools of loaded plugins; each call of a plugin
// tool is decided by that plugin's own compiled policy.
func WithPlugins(ps ...Plugin) Option {
	return func(c *config) error {
		for _, p := range ps {
			if p == nil || p.Manifest() == nil || p.Policy() == nil {
				return errors.New("agent: WithPlugins: a plugin without manifest or policy")
			}
		}
		c.plugins = append(c.plugins, ps...)
		return nil
	}
}

// WithPolicy sets the ceiling layers (workspace and run policies) applied to
// the built-in tools; plugin policies are compiled with them by the plugin
// host. Either may be nil.
func WithPolicy(workspace, run *manifest.Layer) Option {
	return func(c *config) error { c.workspace, c.runLayer = workspace, run; return nil }
}

// WithBuiltinPolicy replaces the built-in tools' policy (by default
// [BuiltinPolicy]: tools.Manifest compiled with the layers of [WithPolicy]).
func WithBuiltinPolicy(d capability.Decider) Option {
	return func(c *config) error { c.builtinPolicy = d; return nil }
}

// WithTracer makes an OpenTelemetry span of every Run and, through the
// gate, of every tool call, with t (package internal/telemetry builds it
// when a collector is configured). Without it no span is made.
func WithTracer(t trace.Tracer) Option { return func(c *config) error { c.tracer = t; return nil } }

// WithSandbox tells the built-in policy whether the OS sandbox is available
// (without it, process spawning is denied by the policy's host layer).
func WithSandbox(ok bool) Option {
	return func(c *config) error { c.sandbox = ok; return nil }
}

// WithProcessRunner gives the built-in tools the process capability: the
// Exec of their Env (Bash, tasks and PTYs run through it), which the gate
// wraps for every call so that each argv is checked by the deny rules and
// the built-in policy, and withholds when that policy denies spawning.
// Build it from the same policy value as [WithBuiltinPolicy]
// (sandboxpolicy.NewRunner). Without it the built-in tools have no process
// capability and the shell tools refuse with CAPABILITY_MISSING.
func WithProcessRunner(r tool.Runner) Option {
	return func(c *config) error { c.exec = r; return nil }
}

// WithRules sets the permission rules.
func WithRules(r policy.Rules) Option { return func(c *config) error { c.rules = r; return nil } }

// WithMode sets the initial permission mode.
func WithMode(m gate.Mode) Option { return func(c *config) error { c.mode = m; return nil } }

// WithHooks sets the hook registry (session, prompt, stop, subagent and
// tool events).
func WithHooks(h *hook.Registry) Option { return func(c *config) error { c.hooks = h; return nil } }

// WithApprover sets the approver the gate asks for a ticket for each call
// that needs approval (when a is also an approval.Finisher, it is told
// when the call is over). Without an approver (and without
// [WithApprovalService]) every call that needs approval is denied with
// APPROVAL_REQUIRED.
func WithApprover(a approval.Authorizer) Option {
	return func(c *config) error { c.approver = a; return nil }
}

// WithApprovalService makes approvals durable: every request is stored in
// svc (and so visible to `norma approvals`) and decided by svc's approver.
// Build svc with [PendingApprover] as its approver: a request nobody decided
// in time then stays pending, the session stops with
// [StatusAwaitingApproval], and a later resume of the run executes the call
// once `norma approvals approve ID` granted it. It takes precedence over
// [WithApprover].
func WithApprovalService(svc *approval.Service) Option {
	return func(c *config) error {
		if svc == nil {
			return errors.New("agent: WithApprovalService: nil service")
		}
		c.svc = svc
		return nil
	}
}

// WithAudit sets the audit sink. Required: calls that cannot be audited
// do not run.
func WithAudit(s audit.Sink) Option { return func(c *config) error { c.sink = s; return nil } }

// WithStateDir sets the state directory (absolute); the run's state is kept
// in <dir>/runs/<run id>/state.json. Without it nothing is persisted and
// runs cannot be resumed.
func WithStateDir(dir string) Option { return func(c *config) error { c.stateDir = dir; return nil } }

// WithWorkspace sets the workspace directory the built-in tools work in,
// through a guarded file system; without it they get no file system.
func WithWorkspace(dir string) Option { return func(c *config) error { c.wsDir = dir; return nil } }

// WithProtected names directories the built-in tools' file system refuses
// by identity, whatever name leads to them (fsguard.Options.Protected):
// the workspace passes Norma's state and user settings directories. The
// state directory of [WithStateDir] is always protected.
func WithProtected(dirs ...string) Option {
	return func(c *config) error { c.protected = append(c.protected, dirs...); return nil }
}

// WithRunID names the run (see [ValidRunID]); by default a random id.
func WithRunID(id string) Option {
	return func(c *config) error {
		if !ValidRunID(id) {
			return errorf(capability.ReasonRunIDInvalid, "invalid run id", nil)
		}
		c.runID = id
		return nil
	}
}

// WithResume continues run id from its state file (see [WithStateDir]).
func WithResume(id string) Option {
	return func(c *config) error {
		if err := WithRunID(id)(c); err != nil {
			return err
		}
		c.resume = true
		return nil
	}
}

// WithUser sets the user principal at the head of every principal chain
// (default [DefaultUser]).
func WithUser(principal string) Option {
	return func(c *config) error {
		if principal == "" {
			return errors.New("agent: WithUser: empty principal")
		}
		c.user = principal
		return nil
	}
}

// WithLimits sets the session's limits.
func WithLimits(l Limits) Option { return func(c *config) error { c.limits = l; return nil } }

// WithObserver receives the session's events (assistant text, tool calls,
// approvals, ...). Calls are serialized; fn must not block for long.
func WithObserver(fn func(Event)) Option {
	return func(c *config) error { c.observer = fn; return nil }
}

// WithSubagents registers the Task tool, which runs a subagent at most
// maxDepth levels deep (zero means [DefaultMaxSubagentDepth]).
func WithSubagents(maxDepth int) Option {
	return func(c *config) error {
		if maxDepth < 0 {
			return errors.New("agent: WithSubagents: negative depth")
		}
		if maxDepth == 0 {
			maxDepth = DefaultMaxSubagentDepth
		}
		c.subagents, c.maxDepth = true, maxDepth
		return nil
	}
}

// WithGateBinder is called with the session's gate once it exists, for
// runtime tools that act on the session (plan mode, ExecuteExtraTool).
// Binders are trusted code of the embedder, not something a model or a tool
// result can reach.
func WithGateBinder(fn func(*gate.Gate) error) Option {
	return func(c *config) error { c.binders = append(c.binders, fn); return nil }
}

// WithUnlocked unlocks deferred tools for the run from the start.
func WithUnlocked(names ...string) Option {
	return func(c *config) error { c.unlock = append(c.unlock, names...); return nil }
}

// WithTodoSource lets the state file carry the run's todo list.
func WithTodoSource(fn TodoSource) Option { return func(c *config) error { c.todos = fn; return nil } }

// WithNetwork sets the upstream side of the built-in tools' HTTP client
// (WebFetch, WebSearch): the resolver (nil: the system's) and the roots
// servers are verified against (nil: the system roots). Tests map names to
// loopback and trust a test CA.
func WithNetwork(r netguard.Resolver, roots *x509.CertPool) Option {
	return func(c *config) error { c.resolver, c.rootCAs = r, roots; return nil }
}

// WithRedactor sets the run's redactor: the gate masks secrets with it in
// every tool result and process output (and reports each masking in the
// audit log), and the state file is written through it. Nil, the default,
// is one that knows the token formats only.
func WithRedactor(r *secret.Redactor) Option {
	return func(c *config) error { c.redactor = r; return nil }
}

// WithSpillDir sets where the gate spills capped tool output.
func WithSpillDir(dir string) Option { return func(c *config) error { c.spillDir = dir; return nil } }

// WithToolTimeout sets the gate's default per-call deadline.
func WithToolTimeout(d time.Duration) Option {
	return func(c *config) error { c.gateTimeout = d; return nil }
}

// WithLogger sets the operational logger (never inputs, outputs or keys).
func WithLogger(l *slog.Logger) Option { return func(c *config) error { c.logger = l; return nil } }

// WithClock sets the clock used for limits and timestamps (tests).
func WithClock(now func() time.Time) Option { return func(c *config) error { c.now = now; return nil } }

// WithRegistry makes the session use reg (created by tool.NewRegistry,
// possibly holding tools already) instead of a registry of its own, for
// runtime tools that need it (skills, tool search). The session's gate
// claims reg's only dispatcher: if anything claimed it before, NewSession
// fails, so a registry passed here still reaches handlers only through the
// gate.
func WithRegistry(reg *tool.Registry) Option {
	return func(c *config) error {
		if reg == nil {
			return errors.New("agent: WithRegistry: nil registry")
		}
		c.reg = reg
		return nil
	}
}

// WithLedger gives the session's gate a ledger of executions
// (gate.Options.Ledger): each tool_use of the run runs at most once, across
// resumes, crashes and processes sharing the ledger.
func WithLedger(l approval.Ledger) Option {
	return func(c *config) error {
		if l == nil {
			return errors.New("agent: WithLedger: nil ledger")
		}
		c.ledger = l
		return nil
	}
}
