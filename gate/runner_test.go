package gate_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/gate"
	"github.com/norma-run/norma/gate/gatetest"
	"github.com/norma-run/norma/policy"
	"github.com/norma-run/norma/tool"
)

func (f runnerFunc) Start(ctx context.Context, c tool.Command) (tool.Process, error) {
	if _, err := f(ctx, c); err != nil {
		return nil, err
	}
	return doneProcess{}, nil
}

type doneProcess struct{}

func (doneProcess) Wait() (tool.CommandResult, error) { return tool.CommandResult{}, nil }
func (doneProcess) Kill() error                       { return nil }
func (doneProcess) Pid() int                          { return 1 }

// spawnMode is a policy that answers process.spawn with one mode and
// everything else like the test set.
type spawnMode struct {
	capability.Decider
	mode capability.Mode
}

func (s spawnMode) Decide(ctx context.Context, r capability.Request) capability.Decision {
	if r.Kind != capability.ProcessSpawn {
		return s.Decider.Decide(ctx, r)
	}
	reason := map[capability.Mode]capability.Reason{capability.Allow: capability.ReasonAllowed,
		capability.ApprovalRequired: capability.ReasonApprovalRequired, capability.Deny: capability.ReasonProcessSpawnDenied}[s.mode]
	return capability.Decision{Mode: s.mode, Reason: reason, Layer: "test", Rule: "process.spawn"}
}

// TestGuardedRunner: the process capability a handler receives is the
// gate's wrapper. Every argv it is asked to run or start — and every
// command that argv runs through a shell or a wrapper — is checked against
// the deny rules and the call's policy; a policy that requires approval for
// spawning is met only by a call that declared the spawn (and so was
// approved for it), and a command whose effect cannot be known only by one
// that declared it. A policy that denies spawning leaves Exec nil.
func TestGuardedRunner(t *testing.T) {
	type attempt struct {
		argv []string
		want capability.Reason // "" ran
	}
	tests := []struct {
		name     string
		spawn    capability.Mode
		declares bool // the tool declares process.spawn (like Bash)
		noExec   bool // Exec must be nil
		attempts []attempt
	}{{
		name: "allowed policy, undeclared", spawn: capability.Allow,
		attempts: []attempt{
			{[]string{"git", "status"}, ""},
			{[]string{"rm", "-rf", "x"}, capability.ReasonRuleDenied},
			{[]string{"/bin/rm", "x"}, capability.ReasonRuleDenied},
			{[]string{"/bin/bash", "-c", "echo hi && rm -rf x"}, capability.ReasonRuleDenied},
			{[]string{"env", "A=1", "sudo", "rm", "x"}, capability.ReasonRuleDenied},
			{[]string{"sh", "-c", "$CMD"}, capability.ReasonCommandUnparseable},
			{[]string{}, capability.ReasonInvalidRequest},
		},
	}, {
		name: "allowed policy, declared", spawn: capability.Allow, declares: true,
		attempts: []attempt{
			{[]string{"/bin/bash", "-c", "echo hi"}, ""},
			{[]string{"/bin/bash", "-c", "echo hi; rm -rf x"}, capability.ReasonRuleDenied},
			{[]string{"sh", "-c", "$CMD"}, ""},
		},
	}, {
		name: "approval policy, undeclared", spawn: capability.ApprovalRequired,
		attempts: []attempt{{[]string{"git", "status"}, capability.ReasonApprovalRequired}},
	}, {
		name: "approval policy, declared and approved", spawn: capability.ApprovalRequired, declares: true,
		attempts: []attempt{
			{[]string{"/bin/bash", "-c", "git status"}, ""},
			{[]string{"/bin/bash", "-c", "rm x"}, capability.ReasonRuleDenied},
		},
	}, {
		name: "deny policy", spawn: capability.Deny, noExec: true,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var (
				mu  sync.Mutex
				ran [][]string
			)
			runner := runnerFunc(func(_ context.Context, c tool.Command) (tool.CommandResult, error) {
				mu.Lock()
				ran = append(ran, c.Argv)
				mu.Unlock()
				return tool.CommandResult{}, nil
			})
			f := newFixture(t, withRules(policy.Rules{Deny: []string{"Bash(rm:*)"}}), func(o *gate.Options, f *fixture) {
				o.Capabilities = func(tool.Plugin) (tool.Env, error) { return tool.Env{Exec: runner}, nil }
				o.Approver = gatetest.NewMemoryApprover(true)
				f.pol.d = spawnMode{Decider: f.pol.d, mode: tt.spawn}
			})
			var errs []error
			var gotExec bool
			s := f.readTool()
			s.Name = "Spawner"
			if tt.declares {
				s.Accesses = func(tool.Input) ([]tool.Access, error) {
					return []tool.Access{{Kind: capability.ProcessSpawn, Command: "git status"}}, nil
				}
			}
			s.Call = func(ctx context.Context, env tool.Env, _ tool.Input) (tool.Result, error) {
				gotExec = env.Exec != nil
				if env.Exec == nil {
					return tool.Result{Content: "no exec"}, nil
				}
				for _, a := range tt.attempts {
					_, runErr := env.Exec.Run(ctx, tool.Command{Argv: a.argv})
					p, startErr := env.Exec.Start(ctx, tool.Command{Argv: a.argv})
					if (p == nil) != (startErr != nil) {
						startErr = errors.New("Start returned a process and an error, or neither")
					}
					errs = append(errs, runErr, startErr)
				}
				return tool.Result{Content: "ok"}, nil
			}
			f.register(t, s, 0)
			wantReason(t, f.g.Execute(t.Context(), call("Spawner", `{"path":"docs/a"}`)), capability.ReasonAllowed)
			if gotExec == tt.noExec {
				t.Fatalf("env.Exec present = %v, want %v", gotExec, !tt.noExec)
			}
			var wantRan [][]string
			for i, a := range tt.attempts {
				for j, err := range errs[2*i : 2*i+2] {
					if got := capability.ReasonOf(err); got != a.want || (a.want == "") != (err == nil) {
						t.Errorf("%s(%q) = %v (%s), want %q", []string{"Run", "Start"}[j], a.argv, err, got, a.want)
					}
				}
				if a.want == "" {
					wantRan = append(wantRan, a.argv, a.argv)
				}
			}
			if !slices.EqualFunc(ran, wantRan, slices.Equal) {
				t.Errorf("the inner runner ran %q, want %q", ran, wantRan)
			}
		})
	}
}

// TestGuardedRunnerRefusal: the refusal a handler sees names the rule, and
// the call reports it.
func TestGuardedRunnerRefusal(t *testing.T) {
	var got error
	runner := runnerFunc(func(context.Context, tool.Command) (tool.CommandResult, error) { return tool.CommandResult{}, nil })
	f := newFixture(t, withRules(policy.Rules{Deny: []string{"Bash(rm:*)"}}), func(o *gate.Options, _ *fixture) {
		o.Capabilities = func(tool.Plugin) (tool.Env, error) { return tool.Env{Exec: runner}, nil }
	})
	s := f.readTool()
	s.Name = "Spawner"
	s.Call = func(ctx context.Context, env tool.Env, _ tool.Input) (tool.Result, error) {
		_, got = env.Exec.Start(ctx, tool.Command{Argv: []string{"sh", "-c", "rm -rf ."}})
		return tool.Result{}, got
	}
	f.register(t, s, 0)
	r := f.g.Execute(t.Context(), call("Spawner", `{"path":"docs/a"}`))
	ce, ok := errors.AsType[*capability.Error](got)
	if !ok || ce.Decision.Rule != "Bash(rm:*)" || ce.Decision.Reason != capability.ReasonRuleDenied {
		b, _ := json.Marshal(ce)
		t.Fatalf("Start(sh -c rm) = %v (%s), want RULE_DENIED by Bash(rm:*)", got, b)
	}
	wantReason(t, r, capability.ReasonRuleDenied)
}
