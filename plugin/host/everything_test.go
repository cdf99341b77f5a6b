package host

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/norma-run/norma/audit"
	"github.com/norma-run/norma/manifest"
	"github.com/norma-run/norma/plugin"
)

// mcpEverythingVersion is the reference server with resources, prompts,
// elicitation, sampling, logging and conditional tools.
const mcpEverythingVersion = "@modelcontextprotocol/server-everything@2026.8.31"

var everythingOnce struct {
	sync.Once
	pkg, manifest string
	err           error
}

// everythingPackage builds, once per test binary, a dev package of
// server-everything: its node_modules, an entrypoint script that starts
// the stdio transport, and the manifest `plugin wrap` proposes, edited as
// a user would (every tool risk read, no approval).
func everythingPackage(t *testing.T) (pkg, manifestText string) {
	t.Helper()
	src := npmServers(t, strings.TrimSuffix(mcpEverythingVersion, "@"+mcpPinned))
	everythingOnce.Do(func() {
		dir, err := os.MkdirTemp("", "norma-everything-")
		if err != nil {
			everythingOnce.err = err
			return
		}
		if b, err := exec.Command("cp", "-a", filepath.Join(src, "node_modules"), dir).CombinedOutput(); err != nil {
			everythingOnce.err = errorsNew("cp: " + err.Error() + " " + string(b))
			return
		}
		os.RemoveAll(filepath.Join(dir, "node_modules", ".bin"))
		os.MkdirAll(filepath.Join(dir, "bin"), 0o755)
		entry := filepath.Join(dir, "bin", "server.mjs")
		os.WriteFile(entry, []byte("#!/usr/bin/node\nprocess.argv.push('stdio');\nawait import('../node_modules/@modelcontextprotocol/server-everything/dist/index.js');\n"), 0o755)
		generated, err := Wrap(context.Background(), []string{entry}, WrapOptions{ID: "local.everything", Entrypoint: "bin/server.mjs", ReadOnly: []string{dir}})
		if err != nil {
			everythingOnce.err = err
			return
		}
		text := strings.ReplaceAll(strings.ReplaceAll(strings.ReplaceAll(string(generated), "risk: external_write", "risk: read"), "external_state: write", "external_state: none"), "data: send", "data: read")
		text = strings.ReplaceAll(text, "approval: per_action", "approval: never")
		everythingOnce.pkg, everythingOnce.manifest = dir, text
	})
	if everythingOnce.err != nil {
		t.Fatalf("server-everything package: %v", everythingOnce.err)
	}
	return everythingOnce.pkg, everythingOnce.manifest
}

type strErr string

func (e strErr) Error() string { return string(e) }
func errorsNew(s string) error { return strErr(s) }

// loadEverything installs server-everything (with manifest text edit
// applied to the proposed manifest) as server name "everything" and
// loads it.
func loadEverything(ctx context.Context, t *testing.T, e *env, edit func(string) string) *Plugin {
	t.Helper()
	src, text := everythingPackage(t)
	if edit != nil {
		text = edit(text)
	}
	pkg := t.TempDir()
	if b, err := exec.Command("cp", "-a", src+"/.", pkg).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, b)
	}
	os.WriteFile(filepath.Join(pkg, "manifest.yaml"), []byte(text), 0o644)
	m, err := manifest.ParseFile(filepath.Join(pkg, "manifest.yaml"))
	if err != nil {
		t.Fatalf("manifest: %v\n%s", err, text)
	}
	grant := &manifest.Layer{SchemaVersion: 2, Kind: manifest.KindGrant, Permissions: m.Permissions}
	if _, err := e.mgr.Install(ctx, pkg, plugin.InstallOptions{Dev: true, Grant: grant, Name: "everything"}); err != nil {
		t.Fatalf("install --dev: %v", err)
	}
	p, err := e.host.Load(ctx, "local.everything")
	if err != nil {
		t.Fatalf("load: %v (stderr %s)", err, p.stderrOrEmpty())
	}
	return p
}

func (p *Plugin) stderrOrEmpty() string {
	if p == nil {
		return ""
	}
	return p.Stderr()
}

// TestEverythingDynamicTools: server-everything registers its elicitation
// and sampling tools after `initialized` (the client declares both) and
// announces tools/list_changed. It loads, survives the change, and loads
// again in the next run without a hold.
func TestEverythingDynamicTools(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	p := loadEverything(ctx, t, e, nil)
	names := registered(t, p)
	for _, want := range []string{"mcp__everything__echo", "mcp__everything__trigger-elicitation-request", "mcp__everything__trigger-sampling-request"} {
		if !slices.Contains(names, want) {
			t.Fatalf("%s not registered: %v", want, names)
		}
	}
	for range 2 {
		res, err := p.call(ctx, "echo", json.RawMessage(`{"message":"hi"}`), "")
		if err != nil || res.IsError || !strings.Contains(res.Content, "hi") {
			t.Fatalf("echo = %+v, %v (stderr %s)", res, err, p.Stderr())
		}
		time.Sleep(500 * time.Millisecond) // let every list_changed be handled
	}
	if err := p.isHeld(); err != nil {
		t.Fatalf("held: %v", err)
	}
	if _, err := os.Stat(holdPath(e.home, "local.everything")); !os.IsNotExist(err) {
		t.Fatalf("hold file: %v", err)
	}
	recs, _ := e.audit.Query(ctx, audit.Filter{})
	if slices.ContainsFunc(recs, func(r audit.Record) bool { return r.Event.Type == audit.TypePluginHeld }) {
		t.Fatal("plugin_held audited")
	}
	// The next run: a new host, the plugin started lazily by a call.
	again, err := New(Config{Home: e.home, Manager: e.mgr, Workspace: e.ws, WorkspacePolicy: e.workspacePolicy(t),
		RunID: "run-2", Vault: e.host.cfg.Vault, Audit: audit.NewMemory(), CallTimeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	q, err := again.Load(ctx, "local.everything")
	if err != nil {
		t.Fatalf("next Load: %v", err)
	}
	if got := registered(t, q); !slices.Equal(got, names) {
		t.Fatalf("next Load offers %v, want %v", got, names)
	}
	res, err := q.call(ctx, "get-sum", json.RawMessage(`{"a":2,"b":3}`), "")
	if err != nil || res.IsError || !strings.Contains(res.Content, "5") {
		t.Fatalf("get-sum = %+v, %v", res, err)
	}
	time.Sleep(500 * time.Millisecond)
	if err := q.isHeld(); err != nil {
		t.Fatalf("held in the next run: %v", err)
	}
}

// TestProtocolGenerations records what go-sdk v1.8.0's client negotiates:
// with server-everything (the TypeScript SDK 1.32, which knows no
// server/discover) the client falls back to the initialize handshake of
// 2025-11-25; with a go-sdk v1.8.0 server (the echo example) it gets the
// stateless 2026-07-28 through server/discover. Both serve tools.
func TestProtocolGenerations(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	p := loadEverything(ctx, t, e, nil)
	if _, err := p.call(ctx, "echo", json.RawMessage(`{"message":"v"}`), ""); err != nil {
		t.Fatal(err)
	}
	if v := p.ProtocolVersion(); v != "2025-11-25" {
		t.Errorf("server-everything negotiated %q, want 2025-11-25", v)
	}
	installEcho(t, e)
	q, err := e.host.Load(ctx, "com.example.echo")
	if err != nil {
		t.Fatal(err)
	}
	if out, err := echoTool(ctx, q, "echo", "v"); err != nil || out != "v" {
		t.Fatalf("echo = %q, %v", out, err)
	}
	if v := q.ProtocolVersion(); v != "2026-07-28" {
		t.Errorf("the go-sdk server negotiated %q, want 2026-07-28", v)
	}
}

// TestEverythingResourcesAndPrompts: the feature tools list and read
// server-everything's resources (a text document; a blob reported by type
// and size, not passed on) and list and get its prompts with arguments.
func TestEverythingResourcesAndPrompts(t *testing.T) {
	e := newEnv(t)
	e.host.cfg.MaxOutput = 64 << 10
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	loadEverything(ctx, t, e, nil)
	ft, err := e.host.FeatureTools()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, x := range ft {
		got = append(got, x.Name())
	}
	if !slices.Equal(got, []string{ListResourcesTool, ReadResourceTool, ListPromptsTool, GetPromptTool}) {
		t.Fatalf("feature tools: %v", got)
	}
	for _, tc := range []struct {
		name    string
		run     func(context.Context, featureInput) (string, error)
		in      featureInput
		want    []string
		notWant []string
	}{
		{"list resources", e.host.listResources, featureInput{}, []string{`"server": "everything"`, "demo://resource/static/document/features.md"}, nil},
		{"read text", e.host.readResource, featureInput{Server: "everything", URI: "demo://resource/static/document/features.md"}, []string{"#"}, nil},
		{"read blob", e.host.readResource, featureInput{Server: "everything", URI: "demo://resource/dynamic/blob/7"},
			[]string{"[binary resource demo://resource/dynamic/blob/7: ", "bytes, not shown]"}, []string{"Resource 7", "UmVzb3VyY2Ug"}},
		{"list prompts", e.host.listPrompts, featureInput{Server: "everything"}, []string{`"name": "args-prompt"`, `"name": "city"`}, nil},
		{"get prompt", e.host.getPrompt, featureInput{Server: "everything", Name: "args-prompt", Arguments: map[string]string{"city": "Lyon"}},
			[]string{"[user] What's weather in Lyon?"}, nil},
	} {
		out, err := tc.run(ctx, tc.in)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(out, w) {
				t.Errorf("%s: no %q in\n%s", tc.name, w, truncate(out, 2000))
			}
		}
		for _, w := range tc.notWant {
			if strings.Contains(out, w) {
				t.Errorf("%s: %q passed on:\n%s", tc.name, w, out)
			}
		}
	}
	if _, err := e.host.readResource(ctx, featureInput{Server: "nosuch", URI: "demo://x"}); err == nil || !strings.Contains(err.Error(), "everything") {
		t.Errorf("unknown server: %v", err)
	}
}
