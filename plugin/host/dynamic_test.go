package host

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/norma-run/norma/audit"
	"github.com/norma-run/norma/capability"
)

// installEcho installs the echo example with its manifest plus extra
// declared tools.
func installEcho(t *testing.T, e *env, extra ...string) {
	t.Helper()
	src, _ := os.ReadFile(filepath.Join(repoRoot(t), "examples/plugins/echo/manifest.yaml"))
	text := string(src)
	for _, name := range extra {
		text += "  - name: " + name + "\n    risk: read\n    approval: never\n"
	}
	alt := filepath.Join(t.TempDir(), "manifest.yaml")
	os.WriteFile(alt, []byte(text), 0o644)
	e.install(t, "echo", alt)
}

func echoTool(ctx context.Context, p *Plugin, tool, text string) (string, error) {
	in, _ := json.Marshal(map[string]string{"text": text})
	r, err := p.call(ctx, tool, in, "")
	return r.Content, err
}

func registered(t *testing.T, p *Plugin) []string {
	t.Helper()
	ts, err := p.Tools()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, x := range ts {
		out = append(out, x.Name())
	}
	return out
}

// waitFor polls cond for up to 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestDynamicToolsWithinManifest: a server that adds a declared tool after
// start, with a tools/list_changed, is not held: the new tool is pinned,
// no hold file is written, and the next Load (a new host, as the next
// run) offers it and starts without a hold.
func TestDynamicToolsWithinManifest(t *testing.T) {
	e := newEnv(t)
	installEcho(t, e, "echo.later")
	ctx := t.Context()
	p, err := e.host.Load(ctx, "com.example.echo")
	if err != nil {
		t.Fatal(err)
	}
	if got := registered(t, p); !slices.Equal(got, []string{"mcp__com.example.echo__echo"}) {
		t.Fatalf("before the change: %v", got)
	}
	if out, err := echoTool(ctx, p, "echo", "!add echo.later"); err != nil || out != "added echo.later" {
		t.Fatalf("!add = %q, %v", out, err)
	}
	waitFor(t, "echo.later pinned", func() bool {
		b, _ := os.ReadFile(p.lockPath)
		return strings.Contains(string(b), `"echo.later"`)
	})
	if err := p.isHeld(); err != nil {
		t.Fatalf("held after a change within the manifest: %v", err)
	}
	if _, err := os.Stat(holdPath(e.home, "com.example.echo")); !os.IsNotExist(err) {
		t.Fatalf("a hold file was written: %v", err)
	}
	// The running session's plugin can call the new tool; the gate's
	// registry offers it from the next Load.
	if out, err := echoTool(ctx, p, "echo.later", "late"); err != nil || out != "late" {
		t.Fatalf("echo.later = %q, %v", out, err)
	}
	again, err := New(Config{Home: e.home, Manager: e.mgr, Workspace: e.ws, WorkspacePolicy: e.workspacePolicy(t),
		RunID: "run-2", Vault: e.host.cfg.Vault, Audit: audit.NewMemory(), CallTimeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	q, err := again.Load(ctx, "com.example.echo")
	if err != nil {
		t.Fatalf("next Load: %v", err)
	}
	if got := registered(t, q); !slices.Equal(got, []string{"mcp__com.example.echo__echo", "mcp__com.example.echo__echo.later"}) {
		t.Fatalf("next Load offers %v", got)
	}
	// The restarted server serves echo only (its pin matches): no hold.
	if out, err := echoTool(ctx, q, "echo", "hi"); err != nil || out != "hi" {
		t.Fatalf("after restart echo = %q, %v", out, err)
	}
}

// TestDynamicToolsAttack: after start, the server adds a tool its manifest
// does not declare, or serves a pinned tool with another description.
// Either holds the plugin: the hold is audited and persisted, the next
// call is refused without starting anything, and the next host refuses to
// load it.
func TestDynamicToolsAttack(t *testing.T) {
	for _, tc := range []struct{ name, input string }{
		{"undeclared", "!add echo.backdoor"},
		{"redescribed", "!redescribe"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			installEcho(t, e)
			ctx := t.Context()
			p, err := e.host.Load(ctx, "com.example.echo")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := echoTool(ctx, p, "echo", tc.input); err != nil && capability.ReasonOf(err) != ReasonToolsChanged {
				t.Fatalf("%s: %v", tc.input, err)
			}
			waitFor(t, "the hold", func() bool { return p.isHeld() != nil })
			// The hold is recorded before the process is stopped.
			waitFor(t, "the held plugin's process to stop", func() bool {
				p.mu.Lock()
				defer p.mu.Unlock()
				return p.proc == nil
			})
			p.mu.Lock()
			started := p.started
			p.mu.Unlock()
			if _, err := echoTool(ctx, p, "echo", "after"); capability.ReasonOf(err) != ReasonToolsChanged {
				t.Fatalf("call after the hold = %v, want PLUGIN_TOOLS_CHANGED", err)
			}
			p.mu.Lock()
			if p.started != started || p.proc != nil {
				t.Error("a call to the held plugin started it again")
			}
			p.mu.Unlock()
			if h := Hold(e.home, "com.example.echo"); !strings.Contains(h, string(ReasonToolsChanged)) {
				t.Fatalf("hold file: %q", h)
			}
			recs, _ := e.audit.Query(ctx, audit.Filter{})
			if !slices.ContainsFunc(recs, func(r audit.Record) bool { return r.Event.Type == audit.TypePluginHeld }) {
				t.Error("no plugin_held audit event")
			}
			again, err := New(Config{Home: e.home, Manager: e.mgr, Workspace: e.ws, WorkspacePolicy: e.workspacePolicy(t),
				RunID: "run-2", Vault: e.host.cfg.Vault, Audit: audit.NewMemory(), CallTimeout: 20 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer again.Close()
			if _, err := again.Load(ctx, "com.example.echo"); capability.ReasonOf(err) != ReasonPluginHeld {
				t.Fatalf("next Load = %v, want PLUGIN_HELD", err)
			}
		})
	}
}
