package host

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/norma-run/norma/audit"
	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/examples/issueapi"
	"github.com/norma-run/norma/manifest"
	"github.com/norma-run/norma/plugin"
	"github.com/norma-run/norma/sandbox/sandboxtest"
	"github.com/norma-run/norma/secret"
)

func TestMain(m *testing.M) { sandboxtest.Main(m) }

const canaryToken = "canary-token-7f3a9c1e5b"

func requireSandbox(t testing.TB) { t.Helper(); sandboxtest.Require(t) }

var (
	buildOnce sync.Map // package → binary path
	binDir    string
)

// buildExample builds an example plugin as a static binary once per test run.
func buildExample(t testing.TB, name string) string {
	t.Helper()
	if v, ok := buildOnce.Load(name); ok {
		return v.(string)
	}
	if binDir == "" {
		d, err := os.MkdirTemp("", "norma-host-bin-")
		if err != nil {
			t.Fatal(err)
		}
		binDir = d
	}
	out := filepath.Join(binDir, name)
	cmd := exec.Command("go", "build", "-trimpath", "-o", out, "./examples/plugins/"+name)
	cmd.Dir = repoRoot(t)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build %s: %v\n%s", name, err, b)
	}
	buildOnce.Store(name, out)
	return out
}

func repoRoot(t testing.TB) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// env is one test world: a state dir, a workspace, a fake API, a manager.
type env struct {
	home, ws string
	api      *issueapi.Server
	mgr      *plugin.Manager
	audit    *audit.Log
	key      []byte
	signer   func(dir string)
	host     *Host
	outside  string
}

func newEnv(t testing.TB) *env {
	t.Helper()
	return newEnvAt(t, t.TempDir(), t.TempDir())
}

// newEnvAt is newEnv with the state directory home and the workspace ws.
func newEnvAt(t testing.TB, home, ws string) *env {
	t.Helper()
	requireSandbox(t)
	e := &env{home: home, ws: ws}
	// A random loopback address on port 443: the manifest's origin is
	// https://api.example.invalid (port 443) and the resolver maps the name here.
	var err error
	for range 5 {
		n, _ := rand.Int(rand.Reader, big.NewInt(250))
		e.api, err = issueapi.Start(fmt.Sprintf("127.0.%d.%d:443", n.Int64()%250+1, n.Int64()+2), canaryToken, "api.example.invalid", "evil.example.invalid")
		if err == nil {
			break
		}
	}
	if err != nil {
		t.Skipf("cannot listen on a loopback :443 (needs root or CAP_NET_BIND_SERVICE): %v", err)
	}
	t.Cleanup(func() { e.api.Close() })
	os.MkdirAll(filepath.Join(e.ws, "docs"), 0o755)
	os.WriteFile(filepath.Join(e.ws, "docs", "intro.md"), []byte("# Intro\n"), 0o644)
	os.WriteFile(filepath.Join(e.ws, "docs", ".env"), []byte("TOKEN="+canaryToken), 0o600)
	e.outside = filepath.Join(t.TempDir(), "outside-secret.txt")
	os.WriteFile(e.outside, []byte("outside "+canaryToken), 0o644)

	pub, priv, _ := plugin.GenerateKey()
	ts, err := plugin.OpenTrustStore(filepath.Join(e.home, "trust"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ts.Add(pub, "Example Corp", []string{"com.example"}, time.Now()); err != nil {
		t.Fatal(err)
	}
	e.signer = func(dir string) {
		if _, err := plugin.Sign(context.Background(), dir, priv, nil); err != nil {
			t.Fatal(err)
		}
	}
	e.audit = audit.NewMemory()
	wsPolicy := e.workspacePolicy(t)
	e.mgr, err = plugin.NewManager(plugin.Options{Home: e.home, Trust: ts, Audit: e.audit, Workspace: wsPolicy, Out: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	host, apiPort, _ := net.SplitHostPort(e.api.Addr)
	_ = apiPort
	vault, err := secret.NewEnvVault(map[string]string{"issue_api_token": "ISSUE_API_TOKEN"}, func(k string) (string, bool) {
		return canaryToken, k == "ISSUE_API_TOKEN"
	})
	if err != nil {
		t.Fatal(err)
	}
	e.host, err = New(Config{
		Home: e.home, Manager: e.mgr, Workspace: e.ws, WorkspacePolicy: wsPolicy, RunID: "run-1",
		Vault: vault, Audit: e.audit, UpstreamRootCAs: e.api.Pool,
		Resolver:    issueapi.Resolver{"api.example.invalid": {host}, "evil.example.invalid": {host}},
		CallTimeout: 20 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.host.Close() })
	return e
}

func (e *env) workspacePolicy(t testing.TB) *manifest.Layer {
	l, err := manifest.ParseLayer("ws.yaml", []byte("schema_version: 2\nkind: workspace\npermissions:\n  filesystem:\n    deny: [\"workspace://**/.env*\"]\n  network:\n    allow_private: [127.0.0.0/8]\n"))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// install packs, signs and installs an example with the grant of its own manifest.
func (e *env) install(t testing.TB, name, manifestPath string) {
	t.Helper()
	bin := buildExample(t, name)
	pkg := t.TempDir()
	m, err := manifest.ParseFile(manifestPath)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(manifestPath)
	os.WriteFile(filepath.Join(pkg, "manifest.yaml"), data, 0o644)
	os.MkdirAll(filepath.Join(pkg, filepath.Dir(m.Entrypoint)), 0o755)
	b, _ := os.ReadFile(bin)
	os.WriteFile(filepath.Join(pkg, m.Entrypoint), b, 0o755)
	e.signer(pkg)
	grant := &manifest.Layer{SchemaVersion: 2, Kind: manifest.KindGrant, Permissions: m.Permissions}
	if _, err := e.mgr.Install(context.Background(), pkg, plugin.InstallOptions{Grant: grant}); err != nil {
		t.Fatalf("install %s: %v", name, err)
	}
}

func TestIssueHelperThroughSandboxAndBroker(t *testing.T) {
	e := newEnv(t)
	e.install(t, "issue-helper", filepath.Join(repoRoot(t), "examples/plugins/issue-helper/manifest.yaml"))
	ctx := t.Context()
	p, err := e.host.Load(ctx, "com.example.issue-helper")
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	tools, err := p.Tools()
	if err != nil || len(tools) != 2 {
		t.Fatalf("tools: %v %v", tools, err)
	}

	res, err := p.call(ctx, "issues.summarize", json.RawMessage(`{"owner":"acme"}`), "")
	if err != nil || res.IsError || !strings.Contains(res.Content, "2 open issues") {
		t.Fatalf("summarize = %+v, %v (stderr %s)", res, err, p.Stderr())
	}
	// The server saw the real token; the plugin only ever had a placeholder.
	if seen := e.api.AuthSeen(); len(seen) != 1 || seen[0] != "Bearer "+canaryToken {
		t.Fatalf("server saw %q", seen)
	}
	if strings.Contains(res.Content, canaryToken) || strings.Contains(p.Stderr(), canaryToken) {
		t.Fatal("the token leaked into the plugin's output")
	}

	// An approved external-write call posts exactly one comment, with the
	// call's idempotency key; a retry with the same key posts nothing new.
	for range 2 {
		res, err = p.call(ctx, "issues.comment", json.RawMessage(`{"owner":"acme","number":42,"body":"Looks good"}`), "nik_test_1")
		if err != nil || res.IsError {
			t.Fatalf("comment = %+v, %v (stderr %s)", res, err, p.Stderr())
		}
	}
	if c := e.api.Comments(); len(c) != 1 || c[0].IdempotencyKey != "nik_test_1" || c[0].Body != "Looks good" {
		t.Fatalf("comments = %+v", c)
	}
	// A write without an approved call behind it is refused by the broker.
	before := e.api.Requests()
	res, err = p.call(ctx, "issues.comment", json.RawMessage(`{"owner":"acme","number":42,"body":"sneaky"}`), "")
	if err == nil && !res.IsError {
		t.Fatalf("unapproved comment went through: %+v", res)
	}
	if e.api.Requests() != before || len(e.api.Comments()) != 1 {
		t.Fatal("an unapproved write reached the server")
	}
	// Undeclared tool names never reach the plugin.
	if _, err := p.call(ctx, "issues.delete", json.RawMessage(`{}`), ""); capability.ReasonOf(err) != capability.ReasonToolUndeclared {
		t.Fatalf("undeclared call: %v", err)
	}
}

// TestMallory runs the hostile plugin: every attempt must fail. The same
// plugin run without the sandbox (the negative control) succeeds at some.
func TestMallory(t *testing.T) {
	e := newEnv(t)
	e.install(t, "mallory", filepath.Join(repoRoot(t), "examples/plugins/mallory/manifest.yaml"))
	tcp, _ := net.Listen("tcp", "127.0.0.1:0")
	defer tcp.Close()
	var tcpHits int
	var mu sync.Mutex
	go func() {
		for {
			c, err := tcp.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			tcpHits++
			mu.Unlock()
			c.Close()
		}
	}()
	udp, _ := net.ListenPacket("udp", "127.0.0.1:0")
	defer udp.Close()
	unixPath := filepath.Join(t.TempDir(), "host.sock")
	ux, _ := net.Listen("unix", unixPath)
	defer ux.Close()
	writeTarget := filepath.Join(t.TempDir(), "mallory-was-here")
	in, _ := json.Marshal(map[string]string{
		"canary_tcp": tcp.Addr().String(), "canary_udp": udp.LocalAddr().String(), "canary_unix": unixPath,
		"outside_file": e.outside, "write_target": writeTarget, "denied_file": filepath.Join(e.ws, "docs", ".env"),
	})
	ctx := t.Context()
	p, err := e.host.Load(ctx, "com.example.mallory")
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	res, err := p.call(ctx, "mallory.run", in, "")
	if err != nil {
		t.Fatalf("mallory.run: %v (stderr %s)", err, p.Stderr())
	}
	var rep struct {
		Succeeded []string
		Attempts  []struct {
			Name, Detail string
		}
	}
	text := res.Content
	if i := strings.Index(text, "\n[norma"); i > 0 {
		text = text[:i]
	}
	if err := json.Unmarshal([]byte(text), &rep); err != nil {
		t.Fatalf("report: %v\n%s", err, res.Content)
	}
	if len(rep.Attempts) < 15 {
		t.Fatalf("only %d attempts ran: %+v", len(rep.Attempts), rep.Attempts)
	}
	if len(rep.Succeeded) != 0 {
		t.Errorf("mallory succeeded at: %v\n%+v", rep.Succeeded, rep.Attempts)
	}
	if _, err := os.Stat(writeTarget); err == nil {
		t.Error("mallory wrote outside its root")
	}
	mu.Lock()
	if tcpHits != 0 {
		t.Errorf("the host TCP canary saw %d connections", tcpHits)
	}
	mu.Unlock()
	udp.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	if n, _, err := udp.ReadFrom(make([]byte, 64)); err == nil {
		t.Errorf("the host UDP canary received %d bytes", n)
	}
	if strings.Contains(res.Content, canaryToken) {
		t.Error("a canary leaked into mallory's output")
	}
	// Negative control: the same plugin, same call, without the OS sandbox
	// (--unsafe-no-sandbox) gets through — so the empty report above is the
	// sandbox's doing, not mallory's incompetence.
	unsafeHost, err := New(Config{Home: t.TempDir(), Manager: e.mgr, Workspace: e.ws, WorkspacePolicy: e.workspacePolicy(t),
		RunID: "run-unsafe", Vault: e.host.cfg.Vault, Audit: audit.NewMemory(), Unsafe: true, CallTimeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer unsafeHost.Close()
	up, err := unsafeHost.Load(ctx, "com.example.mallory")
	if err != nil {
		t.Fatalf("unsafe load: %v", err)
	}
	ures, err := up.call(ctx, "mallory.run", in, "")
	if err != nil {
		t.Fatalf("unsafe mallory.run: %v", err)
	}
	for _, want := range []string{"read a host file outside the grant", "connect TCP to the host"} {
		if !strings.Contains(ures.Content, `"succeeded":[`) || !strings.Contains(ures.Content, want) {
			t.Errorf("control: unsandboxed mallory should succeed at %q; report %s", want, ures.Content)
		}
	}
	os.Remove(writeTarget)

	// Registering a tool after consent holds the plugin.
	deadline := time.Now().Add(5 * time.Second)
	for p.isHeld() == nil && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := p.call(ctx, "mallory.run", in, ""); capability.ReasonOf(err) != ReasonToolsChanged {
		t.Errorf("after a tools/list_changed the plugin must be held, got %v", err)
	}
	var held bool
	recs, _ := e.audit.Query(ctx, audit.Filter{})
	for _, r := range recs {
		held = held || r.Event.Type == audit.TypePluginHeld
	}
	if !held {
		t.Error("no plugin_held audit event")
	}
	// The hold survives a restart of the host: a new process refuses to
	// load the plugin until the user consents to its tools.
	again, err := New(Config{Home: e.home, Manager: e.mgr, Workspace: e.ws, WorkspacePolicy: e.workspacePolicy(t),
		RunID: "run-2", Vault: e.host.cfg.Vault, Audit: audit.NewMemory(), CallTimeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if _, err := again.Load(ctx, "com.example.mallory"); capability.ReasonOf(err) != ReasonPluginHeld {
		t.Fatalf("after a restart Load = %v, want PLUGIN_HELD", err)
	}
	if Hold(e.home, "com.example.mallory") == "" {
		t.Fatal("Hold reports nothing")
	}
	if err := ReleaseHold(e.home, "com.example.mallory"); err != nil {
		t.Fatal(err)
	}
	if _, err := again.Load(ctx, "com.example.mallory"); err != nil {
		t.Fatalf("after consent Load = %v", err)
	}
}

// TestUndeclaredToolFailsLoad: a server that offers a tool its manifest does
// not declare never gets registered.
func TestUndeclaredToolFailsLoad(t *testing.T) {
	e := newEnv(t)
	src, _ := os.ReadFile(filepath.Join(repoRoot(t), "examples/plugins/mallory/manifest.yaml"))
	alt := filepath.Join(t.TempDir(), "manifest.yaml")
	os.WriteFile(alt, []byte(strings.ReplaceAll(string(src), "mallory.run", "mallory.other")), 0o644)
	e.install(t, "mallory", alt)
	_, err := e.host.Load(t.Context(), "com.example.mallory")
	if capability.ReasonOf(err) != capability.ReasonToolUndeclared {
		t.Fatalf("Load = %v, want TOOL_UNDECLARED", err)
	}
	recs, _ := e.audit.Query(t.Context(), audit.Filter{})
	if !slices.ContainsFunc(recs, func(r audit.Record) bool { return r.Event.Reason == string(capability.ReasonToolUndeclared) }) {
		t.Error("TOOL_UNDECLARED was not audited")
	}
	if errors.Is(err, nil) {
		t.Fatal("unreachable")
	}
}
