package runtime_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/gate"
	"github.com/norma-run/norma/manifest"
	"github.com/norma-run/norma/runtime"
	"github.com/norma-run/norma/sandbox/sandboxtest"
	"github.com/norma-run/norma/secret"
)

// devManifest declares the plugin host's python test server: read is
// allowed, write asks for approval on every call.
const devManifest = `schema_version: 2
id: local.test.wsdev
version: 0.1.0
entrypoint: server.py
tools:
  - {name: read, risk: read, approval: never}
  - {name: write, risk: read}
  - {name: env, risk: read, approval: never}
  - {name: listdir, risk: read, approval: never}
  - {name: spawn, risk: read}
permissions:
  filesystem:
    read: ["workspace://**"]
  process:
    spawn: deny
`

// TestOpenLaunchedDeclaration: a Declaration with a Launch is started by
// the plugin host and its tools go through the run's gate: an allowed
// read runs in the sandbox, under the workspace policy as a ceiling (its
// deny of .env hides the file from the server), a write that
// needs approval is refused in dontAsk mode before the server sees it.
// With nothing installed, Open creates no plugin state (no manager).
func TestOpenLaunchedDeclaration(t *testing.T) {
	sandboxtest.Require(t)
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("no /usr/bin/python3")
	}
	src, err := os.ReadFile(filepath.Join("..", "plugin", "host", "testdata", "pyserver", "server.py"))
	if err != nil {
		t.Fatal(err)
	}
	pkg := t.TempDir()
	os.WriteFile(filepath.Join(pkg, "server.py"), src, 0o644)
	m, err := manifest.Parse("manifest.yaml", []byte(devManifest))
	if err != nil {
		t.Fatal(err)
	}
	dir, home := newWorkspace(t, "schema_version: 2\nkind: workspace\npermissions:\n  filesystem:\n    deny: [\"workspace://**/.env\"]\n"), t.TempDir()
	vault := func(context.Context) (secret.Vault, error) {
		return secret.NewEnvVault(nil, func(string) (string, bool) { return "", false })
	}
	rt, err := runtime.Open(t.Context(), runtime.Options{Dir: dir, Home: home, Audit: nopSink{}, Vault: vault, Mode: gate.ModeDontAsk, ModeGiven: true,
		Declared: []runtime.Declaration{{Manifest: m, Dir: pkg, Launch: []string{"python3", "server.py"}}}})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	if d := rt.Declared(); d == nil || d.ServerName() != m.ID {
		t.Fatalf("Declared() = %v", d)
	}
	const script = `turns:
  - tool_calls:
      - {id: r1, name: mcp__local.test.wsdev__read, input: {path: "NOTES"}}
      - {id: r2, name: mcp__local.test.wsdev__read, input: {path: "ENV"}}
      - {id: w1, name: mcp__local.test.wsdev__write, input: {path: "MADE", content: "x"}}
  - text: done
`
	os.WriteFile(filepath.Join(dir, "dev.md"), []byte("dev-notes\n"), 0o644)
	r := strings.NewReplacer("NOTES", filepath.Join(dir, "dev.md"), "ENV", filepath.Join(dir, ".env"), "MADE", filepath.Join(dir, "made.md"))
	s := scriptedSession(t, rt, r.Replace(script))
	out, err := s.Run(t.Context(), "go")
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Calls) != 3 {
		t.Fatalf("calls = %+v", out.Calls)
	}
	want := []capability.Reason{capability.ReasonAllowed, capability.ReasonToolError, capability.ReasonModeDenied}
	for i, c := range out.Calls {
		if c.Reason != string(want[i]) {
			t.Errorf("call %s = %s, want %s", c.ID, c.Reason, want[i])
		}
	}
	if c := out.Calls[1]; !c.IsError || strings.Contains(c.Result, "TOKEN=x") {
		t.Errorf("reading .env in the sandbox succeeded: %+v", c)
	}
	if c := out.Calls[0]; !strings.Contains(c.Result, "dev-notes") || c.IsError {
		t.Errorf("read notes.md: %+v", c)
	}
	if _, err := os.Stat(filepath.Join(dir, "made.md")); err == nil {
		t.Error("made.md was written by a refused call")
	}
	if _, err := os.Stat(filepath.Join(home, "plugins")); err == nil {
		t.Error("Open created the plugin state directory for a plugin that is not installed")
	}
}
