package builtin_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/norma-run/norma/approval"
	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/gate"
	"github.com/norma-run/norma/gate/gatetest"
	"github.com/norma-run/norma/guard/fsguard"
	"github.com/norma-run/norma/guard/netguard"
	"github.com/norma-run/norma/guard/netguard/weburl"
	"github.com/norma-run/norma/manifest"
	"github.com/norma-run/norma/policy"
	"github.com/norma-run/norma/tool"
	"github.com/norma-run/norma/tool/builtin"
)

const (
	runID = "run-1"
	user  = "user:alice"
)

// workspacePolicy denies a directory and a file besides the built-in
// manifest's .env denial.
const workspacePolicy = `schema_version: 2
kind: workspace
permissions:
  filesystem:
    deny: ["workspace://private/**", "workspace://.norma/memory/secret.md"]
`

// fixture is a real workspace, a real policy compiled from the built-in
// manifest, the real guards and the real gate.
type fixture struct {
	dir   string
	reg   *tool.Registry
	g     *gate.Gate
	sink  *gatetest.MemorySink
	set   *policy.Set
	fs    *fsguard.FS
	ref   *builtin.GateRef
	todos *builtin.MemoryTodoStore
	cat   *builtin.Catalog
	m     *manifest.Manifest
	seq   atomic.Int64
}

type fixtureOpts struct {
	cfg          builtin.Config
	allowPrivate bool
	mode         gate.Mode
	rules        policy.Rules
	approver     approval.Authorizer
	register     func(f *fixture)
	secrets      tool.Secrets
	authorize    func(req *http.Request, u weburl.URL) error
	dir          string // an existing workspace; default a new temp dir
}

func newFixture(t testing.TB, o fixtureOpts) *fixture {
	t.Helper()
	if o.dir == "" {
		o.dir = t.TempDir()
	}
	f := &fixture{dir: o.dir, sink: &gatetest.MemorySink{}, ref: &builtin.GateRef{}, todos: &builtin.MemoryTodoStore{}, cat: &builtin.Catalog{}}
	f.reg = tool.NewRegistry(&tool.Options{Audit: f.sink})
	cfg := o.cfg
	cfg.Gate, cfg.Registry, cfg.Catalog = f.ref, f.reg, f.cat
	if cfg.Todos == nil {
		cfg.Todos = f.todos
	}
	m, ts, err := builtin.Builtins(cfg)
	if err != nil {
		t.Fatalf("Builtins: %v", err)
	}
	f.m = m
	wp := workspacePolicy
	if o.allowPrivate {
		// The dialer's allow_private comes from the policy, as in a run
		// (agent/builtin.go); the gate decides literal addresses with it.
		wp += "  network:\n    allow_private: [\"127.0.0.0/8\"]\n"
	}
	ws, err := manifest.ParseLayer("workspace.yaml", []byte(wp))
	if err != nil {
		t.Fatalf("ParseLayer: %v", err)
	}
	if f.set, err = policy.Compile(policy.Inputs{Manifest: m, Workspace: ws, Host: policy.Host{Sandbox: true}}); err != nil {
		t.Fatalf("policy.Compile: %v", err)
	}
	if f.fs, err = fsguard.New(f.dir, f.set); err != nil {
		t.Fatalf("fsguard.New: %v", err)
	}
	t.Cleanup(func() { f.fs.Close() })
	d := &netguard.Dialer{}
	if o.allowPrivate {
		d.AllowPrivate = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	}
	tr := &netguard.Transport{Policy: f.set, Dialer: d}
	if o.authorize != nil {
		tr.Authorize = func(_ context.Context, req *http.Request, u weburl.URL) error { return o.authorize(req, u) }
	}
	t.Cleanup(tr.CloseIdleConnections)
	client := netguard.NewClient(tr)
	for _, tl := range ts {
		if err := f.reg.Register(tool.Registration{Tool: tl}); err != nil {
			t.Fatalf("Register: %v", err)
		}
	}
	if o.register != nil {
		o.register(f)
	}
	approver := o.approver
	if approver == nil {
		approver = gatetest.NewMemoryApprover(true)
	}
	f.g, err = gate.New(gate.Options{
		Registry: f.reg,
		Policy:   func(tool.Plugin) (capability.Decider, error) { return f.set, nil },
		Audit:    f.sink,
		Mode:     o.mode,
		Rules:    o.rules,
		Approver: approver,
		Resolve:  f.fs.Resolve,
		Capabilities: func(tool.Plugin) (tool.Env, error) {
			return tool.Env{FS: f.fs, HTTP: client, Secrets: o.secrets}, nil
		},
	})
	if err != nil {
		t.Fatalf("gate.New: %v", err)
	}
	if err := f.ref.Bind(f.g); err != nil {
		t.Fatal(err)
	}
	if _, err := f.reg.OpenRun(runID, user); err != nil {
		t.Fatal(err)
	}
	return f
}

// call runs one tool call through the gate.
func (f *fixture) call(t testing.TB, name string, input any) gate.Result {
	t.Helper()
	raw, ok := input.(string)
	if !ok {
		b, err := json.Marshal(input)
		if err != nil {
			t.Fatal(err)
		}
		raw = string(b)
	}
	return f.g.Execute(t.Context(), gate.Call{
		ID: fmt.Sprintf("toolu_%d", f.seq.Add(1)), RunID: runID, Principals: []string{user},
		Tool: name, Input: json.RawMessage(raw),
	})
}

// write creates files under the workspace: name → content.
func (f *fixture) write(t testing.TB, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(f.dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func (f *fixture) read(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(f.dir, name))
	if err != nil {
		t.Fatalf("reading %s: %v", name, err)
	}
	return string(b)
}

func (f *fixture) exists(name string) bool {
	_, err := os.Lstat(filepath.Join(f.dir, name))
	return err == nil
}

func wantOK(t testing.TB, r gate.Result) {
	t.Helper()
	if r.IsError || r.Reason != capability.ReasonAllowed {
		t.Fatalf("Execute(%s) = error %s: %s", r.Tool, r.Reason, short(r.Content))
	}
}

func wantReason(t testing.TB, r gate.Result, want capability.Reason) {
	t.Helper()
	if r.Reason != want || !r.IsError {
		t.Fatalf("Execute(%s) reason = %s, want %s (content %q)", r.Tool, r.Reason, want, short(r.Content))
	}
}

// countingServer is a loopback HTTP server that counts requests.
type countingServer struct {
	*httptest.Server
	hits atomic.Int64
}

func newServer(t testing.TB, h http.HandlerFunc) *countingServer {
	t.Helper()
	s := &countingServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		h(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

type ctxT = context.Context

var errDenied = errors.New("denied by the user")

// ran reports whether the handler of r's call was started (the gate
// writes tool_call_started right before it).
func (f *fixture) ran(r gate.Result) bool {
	for _, e := range f.sink.Events() {
		if e.Type == "tool_call_started" && e.Detail["toolUseId"] == r.ToolUseID {
			return true
		}
	}
	return false
}

// short bounds s for failure messages.
func short(s string) string {
	if len(s) > 400 {
		return s[:400] + "…"
	}
	return s
}

type netguardURL = weburl.URL

type toolSecret = tool.Secret

type handle secrets

func (h handle) Name() string         { return h.name }
func (h handle) Origin() string       { return h.origin }
func (h handle) LogValue() slog.Value { return slog.StringValue("secret:" + h.name) }
