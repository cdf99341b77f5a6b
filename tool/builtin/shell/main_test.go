package shell

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/gate"
	"github.com/norma-run/norma/gate/gatetest"
	"github.com/norma-run/norma/manifest"
	"github.com/norma-run/norma/policy"
	"github.com/norma-run/norma/sandbox/sandboxpolicy"
	"github.com/norma-run/norma/sandbox/sandboxtest"
	"github.com/norma-run/norma/secret"
	"github.com/norma-run/norma/tool"
)

// The sandbox re-executes this test binary as its init.
func TestMain(m *testing.M) { sandboxtest.Main(m) }

func requireSandbox(t testing.TB) { t.Helper(); sandboxtest.Require(t) }

// testManifest is the shape of the built-in tools' manifest: the whole
// workspace, secrets and VCS internals denied, spawning allowed.
const testManifest = `schema_version: 2
id: com.norma.builtin-test
version: 1.0.0
entrypoint: bin/norma
tools:
  - name: Bash
    effects: {data: read, external_state: none}
    approval: never
permissions:
  filesystem:
    read: [workspace://**]
    write: [workspace://**]
    deny: [workspace://**/.env*, workspace://**/.git/**]
  process:
    spawn: allow
`

// Canaries: any of these in any output means a denial leaked.
const (
	envCanary     = "ENV-CANARY-7f3a"
	gitCanary     = "GIT-CANARY-91bc"
	outsideCanary = "OUTSIDE-CANARY-c0de"
	netCanary     = "NET-CANARY-5eed"
	visible       = "VISIBLE-ok-2424"
)

var canaries = []string{envCanary, gitCanary, outsideCanary, netCanary}

// fixture is a workspace with secrets, a file outside it, a policy, the
// shell tools and a real gate in front of them.
type fixture struct {
	root, ws, outside string
	set               *policy.Set
	m                 *Manager
	runner            *sandboxpolicy.Runner // the process capability, unguarded
	tools             map[string]tool.CoreTool
	g                 *gate.Gate
	sink              *gatetest.MemorySink
}

type fixtureOpts struct {
	session  string
	manifest string // default testManifest
	rules    policy.Rules
	edit     func(*Config)
	// runner edits the process capability's configuration.
	runner func(*sandboxpolicy.RunnerConfig)
	// noExec gives the gate's calls an Env without the process capability.
	noExec bool
	// redactor is the gate's; nil is the default one.
	redactor *secret.Redactor
	// mode is the gate's permission mode (default: ModeDefault).
	mode gate.Mode
}

// defaultRules allow the command words the attacks use: whatever gets
// through must be stopped by the sandbox.
var defaultRules = policy.Rules{
	Allow: []string{"Bash(cat:*)", "Bash(grep:*)", "Bash(ln:*)", "Bash(curl:*)", "Bash(echo:*)",
		"Bash(sleep:*)", "Bash(true)", "Bash(stty:*)", "Bash(bash -i)", "Bash(sh -i)", "Bash(printf:*)", "Bash(exit:*)",
		"Write(workspace://**)"},
	Deny: []string{"Bash(rm:*)"},
}

// compoundRules are defaultRules with the whole Bash tool allowed, for
// the tests of background jobs and loops: a line that is more than simple
// commands (sleep 300 & ..., a for loop) is covered by no rule of its
// commands, as in Claude Code, only by one on the tool (Bash, PtySend).
var compoundRules = policy.Rules{Allow: append([]string{"Bash", "PtySend"}, defaultRules.Allow...), Deny: defaultRules.Deny}

func newFixture(t testing.TB, o fixtureOpts) *fixture {
	t.Helper()
	f := &fixture{root: t.TempDir()}
	f.ws = filepath.Join(f.root, "ws")
	f.outside = filepath.Join(f.root, "outside")
	files := map[string]string{
		"ws/.env":             "TOKEN=" + envCanary + "\n",
		"ws/sub/.env.local":   "TOKEN=" + envCanary + "\n",
		"ws/.git/config":      "[remote] TOKEN=" + gitCanary + "\n",
		"ws/src/visible.txt":  visible + "\n",
		"outside":             outsideCanary + "\n",
		"ws/src/notes/a.md":   "notes\n",
		"ws/src/notes/b.json": "{}\n",
	}
	for name, data := range files {
		p := filepath.Join(f.root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if o.manifest == "" {
		o.manifest = testManifest
	}
	man, err := manifest.Parse("manifest.yaml", []byte(o.manifest))
	if err != nil {
		t.Fatalf("manifest.Parse: %v", err)
	}
	if f.set, err = policy.Compile(policy.Inputs{Manifest: man, Host: policy.Host{Sandbox: true}}); err != nil {
		t.Fatalf("policy.Compile: %v", err)
	}
	if o.session == "" {
		o.session = "sess-1"
	}
	rc := sandboxpolicy.RunnerConfig{Workspace: f.ws, Policy: f.set, Layers: []manifest.Permissions{man.Permissions},
		Env: []string{"LANG=C.UTF-8"}}
	if o.runner != nil {
		o.runner(&rc)
	}
	if f.runner, err = sandboxpolicy.NewRunner(rc); err != nil {
		t.Fatalf("NewRunner: %v", err)
	}
	cfg := Config{SessionID: o.session}
	if o.edit != nil {
		o.edit(&cfg)
	}
	m, tools, err := Tools(cfg)
	if err != nil {
		t.Fatalf("Tools: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	f.m, f.tools = m, map[string]tool.CoreTool{}
	f.sink = &gatetest.MemorySink{}
	reg := tool.NewRegistry(&tool.Options{Audit: f.sink})
	for _, tl := range tools {
		f.tools[tl.Name()] = tl
		if err := reg.Register(tool.Registration{Tool: tl, Visibility: tool.Visible}); err != nil {
			t.Fatal(err)
		}
	}
	if o.rules.Allow == nil && o.rules.Deny == nil {
		o.rules = defaultRules
	}
	f.g, err = gate.New(gate.Options{
		Registry: reg,
		Policy:   func(tool.Plugin) (capability.Decider, error) { return f.set, nil },
		Audit:    f.sink,
		Rules:    o.rules,
		Mode:     o.mode,
		Output:   gate.OutputOptions{SpillDir: filepath.Join(f.root, "spill")},
		Redactor: o.redactor,
		Capabilities: func(tool.Plugin) (tool.Env, error) {
			if o.noExec {
				return tool.Env{}, nil
			}
			return tool.Env{Exec: f.runner}, nil
		},
	})
	if err != nil {
		t.Fatalf("gate.New: %v", err)
	}
	if _, err := reg.OpenRun("run-1", "user:test"); err != nil {
		t.Fatal(err)
	}
	return f
}

var seq atomic.Int64

// exec runs one call through the real gate.
func (f *fixture) exec(t testing.TB, name string, input any) gate.Result {
	t.Helper()
	raw, err := json.Marshal(input)
	if err != nil {
		t.Fatal(err)
	}
	return f.g.Execute(t.Context(), gate.Call{ID: fmt.Sprintf("toolu_%d", seq.Add(1)), RunID: "run-1",
		Principals: []string{"user:test"}, Tool: name, Input: raw})
}

// mustExec runs a call that must be allowed and succeed.
func (f *fixture) mustExec(t testing.TB, name string, input any) string {
	t.Helper()
	r := f.exec(t, name, input)
	if r.Reason != capability.ReasonAllowed || r.IsError {
		t.Fatalf("Execute(%s %v) = %s %q, want ALLOWED (decision %+v)", name, input, r.Reason, r.Content, r.Decision)
	}
	return r.Content
}

// call runs a tool directly, without the gate (for unit tests and the
// benchmark), with the process capability unguarded.
func (f *fixture) call(t testing.TB, name string, input any) (tool.Result, error) {
	t.Helper()
	raw, err := json.Marshal(input)
	if err != nil {
		t.Fatal(err)
	}
	in, err := tool.ParseInput(raw)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return f.tools[name].Call(ctx, tool.Env{Exec: f.runner}, in)
}

// noCanary fails when any canary appears in s.
func noCanary(t testing.TB, what, s string) {
	t.Helper()
	for _, c := range canaries {
		if strings.Contains(s, c) {
			t.Fatalf("%s leaked canary %s:\n%s", what, c, s)
		}
	}
}

type fileState struct {
	data  string
	mtime time.Time
	mode  os.FileMode
}

func stateOf(t testing.TB, p string) fileState {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatalf("stat %s: %v", p, err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return fileState{string(b), fi.ModTime(), fi.Mode()}
}
