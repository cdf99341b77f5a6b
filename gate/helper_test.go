package gate_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/gate"
	"github.com/norma-run/norma/gate/gatetest"
	"github.com/norma-run/norma/hook"
	"github.com/norma-run/norma/manifest"
	"github.com/norma-run/norma/policy"
	"github.com/norma-run/norma/tool"
)

const testManifest = `schema_version: 2
id: com.example.gate-test
version: 1.0.0
entrypoint: bin/x
tools:
  - name: Read
    effects: {data: read, external_state: none}
    approval: never
permissions:
  filesystem:
    read: [workspace://**]
    write: [workspace://.agent-output/**, workspace://src/**]
    deny: [workspace://**/.env*, workspace://**/.git/**]
  network:
    requests:
      - origin: https://api.example.invalid
        methods: [GET]
        paths: ["/repos/{owner}/issues"]
  process:
    spawn: allow
`

func testSet(t testing.TB) *policy.Set {
	t.Helper()
	m, err := manifest.Parse("manifest.yaml", []byte(testManifest))
	if err != nil {
		t.Fatalf("manifest.Parse: %v", err)
	}
	s, err := policy.Compile(policy.Inputs{Manifest: m, Host: policy.Host{Sandbox: true}})
	if err != nil {
		t.Fatalf("policy.Compile: %v", err)
	}
	return s
}

// countingPolicy counts every capability decision.
type countingPolicy struct {
	d capability.Decider
	n atomic.Int64
}

func (c *countingPolicy) Decide(ctx context.Context, r capability.Request) capability.Decision {
	c.n.Add(1)
	return c.d.Decide(ctx, r)
}

// countingSink counts final events per tool_use id.
type fixture struct {
	reg      *tool.Registry
	g        *gate.Gate
	sink     *gatetest.MemorySink
	pol      *countingPolicy
	hooks    *hook.Registry
	approver *gatetest.MemoryApprover
	view     *tool.View
	calls    atomic.Int64 // handler invocations

	mu    sync.Mutex
	steps map[string][]gate.Step
}

const (
	runID = "run-1"
	user  = "user:alice"
)

func pathSchema(extra string) json.RawMessage {
	return json.RawMessage(`{"type":"object","additionalProperties":false,"required":["path"],"properties":{"path":{"type":"string","minLength":1,"maxLength":256}` + extra + `}}`)
}

func (f *fixture) readTool() tool.Spec {
	return tool.Spec{
		Name: "Read", Description: "read a file",
		Schema:           pathSchema(`,"note":{"type":"string","maxLength":20}`),
		ReadOnly:         func(tool.Input) bool { return true },
		ConcurrencySafe:  func(tool.Input) bool { return true },
		CheckPermissions: func(context.Context, tool.Input) tool.Permission { return tool.Permission{Behavior: tool.Allow} },
		Accesses: func(in tool.Input) ([]tool.Access, error) {
			p, _ := in.String("path")
			return []tool.Access{{Kind: capability.FSRead, Path: p}}, nil
		},
		Call: func(_ context.Context, env tool.Env, in tool.Input) (tool.Result, error) {
			f.calls.Add(1)
			p, _ := in.String("path")
			return tool.Result{Content: "contents of " + p}, nil
		},
	}
}

func (f *fixture) writeTool() tool.Spec {
	return tool.Spec{
		Name: "Write", Schema: pathSchema(`,"text":{"type":"string"}`),
		Accesses: func(in tool.Input) ([]tool.Access, error) {
			p, _ := in.String("path")
			return []tool.Access{{Kind: capability.FSWrite, Path: p}}, nil
		},
		Call: func(context.Context, tool.Env, tool.Input) (tool.Result, error) {
			f.calls.Add(1)
			return tool.Result{Content: "written"}, nil
		},
	}
}

func (f *fixture) bashTool() tool.Spec {
	return tool.Spec{
		Name:   "Bash",
		Schema: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["command"],"properties":{"command":{"type":"string","minLength":1}}}`),
		Accesses: func(in tool.Input) ([]tool.Access, error) {
			c, _ := in.String("command")
			return []tool.Access{{Kind: capability.ProcessSpawn, Command: c}}, nil
		},
		Call: func(context.Context, tool.Env, tool.Input) (tool.Result, error) {
			f.calls.Add(1)
			return tool.Result{Content: "ran"}, nil
		},
	}
}

func (f *fixture) fetchTool() tool.Spec {
	return tool.Spec{
		Name:             "WebFetch",
		Schema:           json.RawMessage(`{"type":"object","additionalProperties":false,"required":["url"],"properties":{"url":{"type":"string","format":"uri"}}}`),
		ReadOnly:         func(tool.Input) bool { return true },
		CheckPermissions: func(context.Context, tool.Input) tool.Permission { return tool.Permission{Behavior: tool.Ask} },
		Accesses: func(in tool.Input) ([]tool.Access, error) {
			u, _ := in.String("url")
			return []tool.Access{{Kind: capability.NetRequest, Method: "GET", URL: u}}, nil
		},
		Call: func(context.Context, tool.Env, tool.Input) (tool.Result, error) {
			f.calls.Add(1)
			return tool.Result{Content: "fetched"}, nil
		},
	}
}

type fixtureOpt func(*gate.Options, *fixture)

func newFixture(t testing.TB, opts ...fixtureOpt) *fixture {
	t.Helper()
	f := &fixture{sink: &gatetest.MemorySink{}, steps: map[string][]gate.Step{}}
	f.reg = tool.NewRegistry(&tool.Options{Audit: f.sink})
	f.pol = &countingPolicy{d: testSet(t)}
	f.hooks = hook.NewRegistry(&hook.Options{Timeout: 10 * time.Second})
	f.approver = gatetest.NewMemoryApprover(false)
	for _, s := range []tool.Spec{f.readTool(), f.writeTool(), f.bashTool(), f.fetchTool()} {
		f.register(t, s, tool.Visible)
	}
	deferred := f.readTool()
	deferred.Name = "DeferredRead"
	f.register(t, deferred, tool.Deferred)
	hidden := f.readTool()
	hidden.Name = "HiddenRead"
	f.register(t, hidden, tool.Hidden)

	o := gate.Options{
		Registry: f.reg,
		Policy:   func(tool.Plugin) (capability.Decider, error) { return f.pol, nil },
		Audit:    f.sink,
		Hooks:    f.hooks,
		Approver: f.approver,
		Trace: func(id string, s gate.Step) {
			f.mu.Lock()
			f.steps[id] = append(f.steps[id], s)
			f.mu.Unlock()
		},
	}
	for _, fn := range opts {
		fn(&o, f)
	}
	g, err := gate.New(o)
	if err != nil {
		t.Fatalf("gate.New: %v", err)
	}
	f.g = g
	if f.view, err = f.reg.OpenRun(runID, user); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fixture) register(t testing.TB, s tool.Spec, v tool.Visibility) {
	t.Helper()
	if err := f.reg.Register(tool.Registration{Tool: tool.MustBuild(s), Visibility: v}); err != nil {
		t.Fatalf("Register(%s): %v", s.Name, err)
	}
}

var callSeq atomic.Int64

func call(name, input string) gate.Call {
	return gate.Call{ID: fmt.Sprintf("toolu_%d", callSeq.Add(1)), RunID: runID, Principals: []string{user}, Tool: name, Input: json.RawMessage(input)}
}

func (f *fixture) stepsOf(id string) []gate.Step {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.steps[id])
}

// finalEvents counts the final audit events of a tool_use id.
func (f *fixture) finalEvents(id string) int {
	n := 0
	for _, e := range f.sink.Events() {
		if e.Detail["toolUseId"] == id && (e.Type == "tool_call_finished" || e.Type == "capability_decision") {
			n++
		}
	}
	return n
}

var allSteps = []gate.Step{gate.StepLookup, gate.StepSchema, gate.StepPolicy, gate.StepApproval,
	gate.StepPreHooks, gate.StepCall, gate.StepOutput, gate.StepPostHooks, gate.StepAudit}

// wantAllSteps checks that the call passed every step in order (steps 2–4
// may repeat after a hook rewrite).
func wantAllSteps(t *testing.T, got []gate.Step) {
	t.Helper()
	var uniq []gate.Step
	last := gate.Step(0)
	for _, s := range got {
		if s < last && !(s >= gate.StepSchema && s <= gate.StepApproval) {
			t.Fatalf("steps out of order: %v", got)
		}
		if !slices.Contains(uniq, s) {
			uniq = append(uniq, s)
		}
		last = s
	}
	slices.Sort(uniq)
	if !slices.Equal(uniq, allSteps) {
		t.Fatalf("steps = %v, want every step %v", got, allSteps)
	}
}

func wantReason(t *testing.T, r gate.Result, want capability.Reason) {
	t.Helper()
	if r.Reason != want {
		t.Fatalf("Execute(%s) reason = %s, want %s (content %q, decision %+v)", r.Tool, r.Reason, want, r.Content, r.Decision)
	}
	if want != capability.ReasonAllowed && !r.IsError {
		t.Fatalf("Execute(%s) = not an error, want error %s", r.Tool, want)
	}
}

var errTest = errors.New("test failure")
