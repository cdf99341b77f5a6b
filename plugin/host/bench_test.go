package host

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/norma-run/norma/audit"
)

// BenchmarkPluginColdStart: from nothing to a connected, verified plugin
// (sandbox, broker, MCP initialize, tools/list, pin check).
func BenchmarkPluginColdStart(b *testing.B) {
	for _, unsafe := range []bool{false, true} {
		name := "sandboxed"
		if unsafe {
			name = "unsandboxed"
		}
		b.Run(name, func(b *testing.B) {
			h, p := benchPlugin(b, unsafe)
			_ = h
			ctx := context.Background()
			for b.Loop() {
				p.stop()
				if err := p.ensureStarted(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkPluginCall: one no-op MCP tool call on a running plugin, inside
// the sandbox behind the broker versus unconfined.
func BenchmarkPluginCall(b *testing.B) {
	for _, unsafe := range []bool{false, true} {
		name := "sandboxed"
		if unsafe {
			name = "unsandboxed"
		}
		b.Run(name, func(b *testing.B) {
			_, p := benchPlugin(b, unsafe)
			ctx := context.Background()
			in := json.RawMessage(`{"text":"hi"}`)
			b.ReportAllocs()
			for b.Loop() {
				if res, err := p.call(ctx, "echo", in, ""); err != nil || res.Content != "hi" {
					b.Fatalf("%+v %v", res, err)
				}
			}
		})
	}
}

func benchPlugin(b *testing.B, unsafe bool) (*Host, *Plugin) {
	e := newEnv(b)
	e.install(b, "echo", filepath.Join(repoRoot(b), "examples/plugins/echo/manifest.yaml"))
	h := e.host
	if unsafe {
		var err error
		h, err = New(Config{Home: b.TempDir(), Manager: e.mgr, Workspace: e.ws, Vault: e.host.cfg.Vault,
			Audit: audit.NewMemory(), Unsafe: true, CallTimeout: 20 * time.Second})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { h.Close() })
	}
	p, err := h.Load(context.Background(), "com.example.echo")
	if err != nil {
		b.Fatal(err)
	}
	if err := p.ensureStarted(context.Background()); err != nil {
		b.Fatal(err)
	}
	return h, p
}
