// Package deptest holds the module's dependency rules: which packages may
// import which. The rules keep the security core small and reviewable —
// the vocabulary (capability) depends on nothing, the declarative layers
// (manifest, policy) can neither do network or process I/O nor reach the
// enforcement layers, nothing below the gate can call back into it, the
// built-in tools do not load plugins, and test doubles stay out of
// production binaries.
//
// The rules are checked against `go list -deps -json` for every GOOS the
// module supports, so a file behind a build tag cannot hide an import.
package deptest

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
)

const mod = "github.com/norma-run/norma"

// m returns the import path of a package of the module.
func m(rel string) string { return mod + "/" + rel }

// goos are the platforms whose import graphs are checked.
var goos = []string{"linux", "darwin"}

// belowGate are the packages the gate is built on; none of them may
// import it, directly or not.
var belowGate = []string{
	"capability", "agentfiles", "manifest", "policy", "guard/...", "broker/...", "sandbox/...",
	"plugin", "plugin/host", "audit/...", "approval/...", "hook/...", "tool",
	"secret/...", "store/...", "internal/...",
}

// declarative are I/O-free layers: they describe and decide, others act.
var declarative = map[string]string{
	"net/http":         "the declarative layers do no network I/O; netguard enforces URLs at the gate and in the broker",
	"os/exec":          "the declarative layers start no process",
	m("gate"):          "the gate enforces policy; policy cannot depend on its enforcer",
	m("broker"):        "the broker enforces policy; policy cannot depend on its enforcer",
	m("sandbox"):       "the sandbox enforces policy; policy cannot depend on its enforcer",
	m("guard/fsguard"): "the file guard opens files; the declarative layers clean names with guard/fspath",
}

var rules = []struct {
	name string
	// pkgs are module-relative package paths; a trailing "/..." also
	// matches the subpackages.
	pkgs []string
	// except are module-relative packages (a trailing "/..." matches
	// subpackages) that pkgs would match but the rule leaves out.
	except []string
	// BadDeps maps an import path that must not be among the transitive
	// dependencies to why. A trailing "/..." also matches subpackages;
	// mod+"/..." matches every package of the module.
	BadDeps map[string]string
}{
	{
		name: "capability is a leaf",
		pkgs: []string{"capability"},
		BadDeps: map[string]string{
			mod + "/...": "capability is the vocabulary every package shares; importing any package of the module risks a cycle and widens what every package trusts",
		},
	},
	{
		name: "the agent-file catalogue is a leaf",
		pkgs: []string{"agentfiles"},
		BadDeps: map[string]string{
			mod + "/...": "the catalogue of agent files is asked by the gate, the sandbox and the hooks alike; it reads names and the workspace's links, nothing of Norma",
		},
	},
	{name: "manifest is declarative", pkgs: []string{"manifest"}, BadDeps: declarative},
	{name: "policy is declarative", pkgs: []string{"policy"}, BadDeps: declarative},
	{
		name: "nothing below the gate imports it",
		pkgs: belowGate,
		BadDeps: map[string]string{
			m("gate"): "the gate is the one choke point on top of these packages; a package below it calling back would create a second path around it",
		},
	},
	{
		name: "built-in tools do not load plugins",
		pkgs: []string{"tool/builtin/..."},
		BadDeps: map[string]string{
			m("plugin/host"): "the built-in tools run in-process behind the gate; loading and supervising plugins is the host's job, wired by the caller",
		},
	},
	{
		name: "the run path makes spans with the OpenTelemetry API only",
		pkgs: []string{"gate", "agent", "runtime"},
		BadDeps: map[string]string{
			"go.opentelemetry.io/otel/sdk/...": "the SDK is built by internal/telemetry, and only when a collector is configured (cold start, issue 20)",
		},
	},
	{
		name: "norma links no gRPC, protobuf runtime or Prometheus client",
		pkgs: []string{"cmd/norma"},
		BadDeps: map[string]string{
			"google.golang.org/grpc/...":              "the otlptracehttp exporter brings gRPC and grpc-gateway (+30 MB, milliseconds at every start); internal/telemetry exports OTLP/HTTP itself",
			"google.golang.org/protobuf/...":          "the protobuf runtime's initializers read the executable at every start; internal/telemetry encodes the OTLP wire format itself",
			"github.com/prometheus/client_golang/...": "client_golang's initializers (a default registry, Go and process collectors) run at every start; audit/metrics writes the text format itself",
			"go.opentelemetry.io/otel/exporters/...":  "see grpc",
			m("audit/metrics/metricstest"):            "Prometheus's parser is for tests",
		},
	},
	{
		name: "the team server decides nothing itself",
		pkgs: []string{"door/team/..."},
		BadDeps: map[string]string{
			m("gate"):    "the team server answers approvals through approval.Service and reads the audit log; a tool call is decided by the gate of the run that makes it, never by the server",
			m("policy"):  "the team server evaluates no policy; a second evaluator would be a second answer to one question",
			m("runtime"): "the team server assembles no run",
		},
	},
	{
		name: "fspath is a leaf",
		pkgs: []string{"guard/fspath"},
		BadDeps: map[string]string{
			m("guard/fsguard"): "policy cleans names with fspath so that it need not import the guard that opens files",
			m("gate"):          "see guard/fsguard",
		},
	},
	{
		name:   "only the command line imports the doors",
		pkgs:   []string{"..."},
		except: []string{"cmd/...", "door/..."},
		BadDeps: map[string]string{
			m("door/..."): "a door is a front-end over the runtime; the layers below serve every door and must not depend on one",
		},
	},
	{
		name:   "test doubles stay out of production",
		pkgs:   []string{"..."},
		except: []string{"internal/mcpfixture/..."}, // the fixture server's command
		BadDeps: map[string]string{
			m("gate/gatetest"):             "test doubles (in-memory sink and approver) must not be linked into production code",
			m("capability/capabilitytest"): "test doubles must not be linked into production code",
			m("sandbox/sandboxtest"):       "test helpers (a fake sandbox) must not be linked into production code",
			m("internal/fakeanthropic"):    "the fake Messages API is a test double; a production binary must never answer as the model",
			m("internal/fakeopenai"):       "the fake Responses API is a test double; a production binary must never answer as the model",
			m("internal/fakeapi"):          "what the fake model APIs share is a test double too",
			m("internal/fakegemini"):       "the fake Gemini API is a test double; a production binary must never answer as the model",
			m("internal/chromiumtest"):     "the headless-browser harness is for tests; a production binary never drives a browser",
			m("internal/pgtest"):           "test helpers (databases created and dropped, a private server killed with SIGKILL) must not be linked into production code",
			m("internal/mcpfixture/..."):   "the fixture MCP server is a test double for the proxy's door tests",
			m("secret/secrettest"):         "made-up tokens and card numbers for the egress tests must never ship in a binary",
		},
	},
}

type pkg struct {
	ImportPath string
	Imports    []string
	Deps       []string
	Standard   bool
	Error      *struct{ Err string }
}

// graphs caches the import graph per GOOS.
var (
	graphMu sync.Mutex
	graphs  = map[string]map[string]*pkg{}
)

// load runs `go list -deps -json ./...` for one GOOS (non-test imports
// only) and returns the packages by import path.
func load(t *testing.T, g string) map[string]*pkg {
	t.Helper()
	graphMu.Lock()
	defer graphMu.Unlock()
	if p := graphs[g]; p != nil {
		return p
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to read the import graph: %v", err)
	}
	cmd := exec.Command(goBin, "list", "-e", "-deps", "-json=ImportPath,Imports,Deps,Standard,Error", "./...")
	cmd.Dir = "../.."
	cmd.Env = append(cmd.Environ(), "GOOS="+g, "GOFLAGS=-mod=readonly")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	if err != nil {
		t.Fatalf("GOOS=%s go list: %v\n%s", g, err, stderr.Bytes())
	}
	pkgs := map[string]*pkg{}
	dec := json.NewDecoder(bytes.NewReader(b))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("GOOS=%s go list: decoding: %v", g, err)
		}
		pkgs[p.ImportPath] = &p
	}
	// The checks below are vacuous if the graph is not what it should be.
	if gp := pkgs[m("gate")]; gp == nil || !slices.Contains(gp.Deps, m("capability")) {
		t.Fatalf("GOOS=%s go list: no edge gate → capability in the graph; is the test run from internal/deptest?", g)
	}
	graphs[g] = pkgs
	return pkgs
}

// matches reports whether path matches pattern (an import path, optionally
// ending in "/...").
func matches(pattern, path string) bool {
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return path == base || strings.HasPrefix(path, base+"/")
	}
	return path == pattern
}

// excepted reports whether path matches one of the module-relative
// patterns in except.
func excepted(except []string, path string) bool {
	return slices.ContainsFunc(except, func(e string) bool { return matches(m(e), path) })
}

// chain returns an import chain from one package to dep, for the report.
func chain(pkgs map[string]*pkg, from, dep string) []string {
	prev := map[string]string{from: ""}
	queue := []string{from}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if p == dep {
			var out []string
			for ; p != ""; p = prev[p] {
				out = append(out, strings.TrimPrefix(p, mod+"/"))
			}
			slices.Reverse(out)
			return out
		}
		if pp := pkgs[p]; pp != nil {
			for _, i := range pp.Imports {
				if _, seen := prev[i]; !seen {
					prev[i] = p
					queue = append(queue, i)
				}
			}
		}
	}
	return []string{from, "…", dep}
}

func TestDeps(t *testing.T) {
	for _, g := range goos {
		t.Run(g, func(t *testing.T) {
			pkgs := load(t, g)
			var module []string
			for path, p := range pkgs {
				if !p.Standard && (path == mod || strings.HasPrefix(path, mod+"/")) {
					module = append(module, path)
				}
			}
			slices.Sort(module)
			for _, rule := range rules {
				t.Run(rule.name, func(t *testing.T) {
					for _, rel := range rule.pkgs {
						pattern := m(rel)
						if rel == "..." {
							pattern = mod + "/..."
						}
						n := 0
						for _, path := range module {
							if !matches(pattern, path) || excepted(rule.except, path) {
								continue
							}
							n++
							if _, banned := rule.BadDeps[path]; banned {
								// A package the rule keeps out (a test double)
								// may build on another it keeps out.
								continue
							}
							p := pkgs[path]
							if p.Error != nil {
								t.Errorf("%s: %s", path, p.Error.Err)
							}
							for _, dep := range p.Deps {
								for bad, why := range rule.BadDeps {
									if matches(bad, dep) && dep != path {
										t.Errorf("%s must not import %s (%s): %s",
											strings.TrimPrefix(path, mod+"/"), strings.TrimPrefix(dep, mod+"/"),
											strings.Join(chain(pkgs, path, dep), " → "), why)
									}
								}
							}
						}
						if n == 0 && !strings.HasSuffix(rel, "/...") {
							t.Errorf("no package %s: update the rule when a package moves", rel)
						}
					}
				})
			}
		})
	}
}

func TestMatches(t *testing.T) {
	for _, tt := range []struct {
		pattern, path string
		want          bool
	}{
		{m("gate"), m("gate"), true},
		{m("gate"), m("gate/gatetest"), false},
		{m("guard/..."), m("guard"), true},
		{m("guard/..."), m("guard/netguard/weburl"), true},
		{m("guard/..."), m("guardx"), false},
		{mod + "/...", m("capability"), true},
		{mod + "/...", "net/http", false},
		{"net/http", "net/http/httptrace", false},
	} {
		if got := matches(tt.pattern, tt.path); got != tt.want {
			t.Errorf("matches(%q, %q) = %v, want %v", tt.pattern, tt.path, got, tt.want)
		}
	}
}
