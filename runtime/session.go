package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/norma-run/norma/agent"
	"github.com/norma-run/norma/gate"
	"github.com/norma-run/norma/tool"
	"github.com/norma-run/norma/tool/builtin"
)

// parts are what one session of a runtime has of its own: its run, its
// registry (Skill's unlocks, the deferred catalogue), the built-in tools
// bound to its gate, its shell's tasks and PTYs, and its todo list. The
// compiled policy, the sandbox runner, the plugins and the hooks are the
// runtime's, shared.
type parts struct {
	run   string
	reg   *tool.Registry
	ref   *builtin.GateRef
	todos builtin.TodoStore
	tools *builtin.Builtin
}

// newParts builds the parts of a session of run.
func (r *Runtime) newParts(run string) (*parts, error) {
	p := &parts{run: run, reg: tool.NewRegistry(&tool.Options{Audit: r.opts.Audit}), ref: &builtin.GateRef{}, todos: r.opts.Todos}
	if r.todoDirs {
		p.todos = builtin.FileTodoStore{Dir: filepath.Join(r.opts.Home, "runs", run)}
	}
	b, err := builtin.Build(r.toolsConfig(p))
	if err != nil {
		return nil, err
	}
	p.tools = b
	if b.Shell != nil {
		r.mu.Lock()
		r.shells = append(r.shells, b.Shell)
		r.mu.Unlock()
	}
	return p, nil
}

// options are the agent options the workspace determines for p's session.
func (r *Runtime) options(p *parts) []agent.Option {
	opts := []agent.Option{
		agent.WithRegistry(p.reg), agent.WithTools(p.tools.Tools...),
		agent.WithBuiltinPolicy(r.builtin.Policy), agent.WithPolicy(r.layer, r.opts.RunPolicy), agent.WithSandbox(r.sandbox),
		agent.WithGateBinder(p.ref.Bind), agent.WithWorkspace(r.dir), agent.WithMode(r.opts.Mode),
		agent.WithRules(r.opts.Rules), agent.WithAudit(r.opts.Audit),
		agent.WithNetwork(r.opts.Resolver, r.opts.RootCAs), agent.WithHooks(r.hooks),
		agent.WithRedactor(r.opts.Redactor),
		agent.WithProtected(r.opts.Home, r.opts.Settings.UserDir),
	}
	if r.exec != nil {
		opts = append(opts, agent.WithProcessRunner(r.exec))
	}
	if len(r.plugins) > 0 {
		opts = append(opts, agent.WithPlugins(r.plugins...))
	}
	if len(r.features) > 0 {
		// The plugins' resources and prompts (host.FeatureTools).
		opts = append(opts, agent.WithTools(r.features...))
	}
	if !r.opts.NoSubagents {
		opts = append(opts, agent.WithSubagents(0))
	}
	if sv := r.opts.Services; sv != nil {
		opts = append(opts, agent.WithApprovalService(sv.Approvals), agent.WithLedger(sv.Store),
			agent.WithStateDir(sv.Home), agent.WithSpillDir(filepath.Join(sv.Home, "spill")))
	}
	if todos := p.todos; todos != nil {
		opts = append(opts, agent.WithTodoSource(func(ctx context.Context, run string) ([]byte, error) {
			l, err := todos.Load(ctx, run)
			if err != nil || l == nil {
				return nil, err
			}
			return json.Marshal(l)
		}))
	}
	return opts
}

// Session starts a session of the runtime's own run (Options.RunID,
// continued when Options.Resume). With Options.Services the session has
// their approvals, ledger and state directory; extra are the door's own
// options: the provider, the user, an observer, limits, its own tools.
// Start sessions of other runs with [Runtime.SessionOf].
func (r *Runtime) Session(ctx context.Context, extra ...agent.Option) (*agent.Session, error) {
	return r.SessionOf(ctx, r.opts.RunID, r.opts.Resume, extra...)
}

// SessionOf starts a session of run (continued from its state when
// resume), with its own tools, shell and todo list over the runtime's
// policy, plugins and hooks. A run has one session per runtime: a second
// is an error. Plugin servers are shared by the sessions; the events of a
// server's process as a whole (its start, a crash, its traffic through
// the broker) carry the runtime's run id, each call's decision and result
// the session's.
func (r *Runtime) SessionOf(ctx context.Context, run string, resume bool, extra ...agent.Option) (*agent.Session, error) {
	if !agent.ValidRunID(run) {
		return nil, fmt.Errorf("runtime: %q is not a run id", run)
	}
	r.mu.Lock()
	if r.runs[run] {
		r.mu.Unlock()
		return nil, fmt.Errorf("runtime: run %s already has a session in this runtime", run)
	}
	r.runs[run] = true
	p := r.first
	if p != nil && p.run == run {
		r.first = nil
	} else {
		p = nil
	}
	r.mu.Unlock()
	var err error
	if p == nil {
		p, err = r.newParts(run)
	}
	var s *agent.Session
	if err == nil {
		opt := agent.WithRunID(run)
		if resume {
			opt = agent.WithResume(run)
		}
		s, err = agent.NewSession(ctx, append(append(r.options(p), opt), extra...)...)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		delete(r.runs, run)
		if p != nil && p.run == r.opts.RunID && r.first == nil && r.served == nil && r.explain == nil {
			r.first = p // unused: the next session of the runtime's run takes them
		}
		return nil, err
	}
	if r.served == nil {
		r.served = s
	}
	return s, nil
}

// Close stops every session's shell tasks and PTYs and the plugins.
func (r *Runtime) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	var errs []error
	if r.explain != nil {
		errs = append(errs, r.explain.Close())
	}
	for _, sh := range r.shells {
		errs = append(errs, sh.Close())
	}
	r.shells = nil
	if r.host != nil {
		errs = append(errs, r.host.Close())
	}
	return errors.Join(errs...)
}

// Explain reports what a run in this workspace decides for one call of
// toolName with input, in the runtime's mode and rules: the gate's own
// decision path (lookup, schema, mode and rules, capability layers)
// without approval and without the call. It asks the first session
// started, if any (so an embedder may run sessions and explain calls
// beside them, in the state plan mode left); otherwise a session without
// a model, started by the first Explain and reused, which writes nothing.
func (r *Runtime) Explain(ctx context.Context, toolName string, input json.RawMessage) (gate.Explanation, error) {
	s, err := r.explainer(ctx)
	if err != nil {
		return gate.Explanation{}, err
	}
	return s.Explain(ctx, toolName, input), nil
}

// ExplainUnconfined is Explain for a call that another agent runs itself,
// outside Norma's sandbox, in a shell with environment shell
// (gate.Call.Unconfined): package agenthook's decision.
func (r *Runtime) ExplainUnconfined(ctx context.Context, toolName string, input json.RawMessage, shell gate.AgentShell) (gate.Explanation, error) {
	s, err := r.explainer(ctx)
	if err != nil {
		return gate.Explanation{}, err
	}
	return s.ExplainUnconfined(ctx, toolName, input, shell), nil
}

// explainer is the session Explain asks. The model-less session takes
// the parts Open built when no session has (the hooks' one explain costs
// no second build).
func (r *Runtime) explainer(ctx context.Context) (*agent.Session, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.served != nil {
		return r.served, nil
	}
	if r.explain != nil {
		return r.explain, nil
	}
	p := r.first
	r.first = nil
	if p == nil {
		r.mu.Unlock()
		var err error
		p, err = r.newParts(r.opts.RunID)
		r.mu.Lock()
		if err != nil {
			return nil, err
		}
		if r.explain != nil { // another Explain got there first
			return r.explain, nil
		}
	}
	s, err := agent.NewSession(ctx, append(r.options(p), agent.WithRunID(p.run))...)
	if err != nil {
		return nil, err
	}
	r.explain = s
	return s, nil
}
