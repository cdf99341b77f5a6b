package host

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/norma-run/norma/manifest"
	"github.com/norma-run/norma/plugin"
)

// mcpFSVersion is the third-party server the test wraps.
const mcpFSVersion = "@modelcontextprotocol/server-filesystem@2026.8.31"

// npmFilesystemServer returns a directory holding node_modules with the
// server: $NORMA_TEST_MCP_FS (installed by .ci/run) or a fresh npm install.
func npmFilesystemServer(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat("/usr/bin/node"); err != nil {
		t.Skip("no /usr/bin/node")
	}
	if d := os.Getenv("NORMA_TEST_MCP_FS"); d != "" {
		return d
	}
	d := t.TempDir()
	cmd := exec.Command("npm", "install", "--prefix", d, "--no-audit", "--no-fund", mcpFSVersion)
	if b, err := cmd.CombinedOutput(); err != nil {
		if os.Getenv("NORMA_REQUIRE_SANDBOX") == "1" {
			t.Fatalf("npm install %s: %v\n%s", mcpFSVersion, err, b)
		}
		t.Skipf("npm install %s: %v", mcpFSVersion, err)
	}
	return d
}

// TestThirdPartyServerConfined wraps @modelcontextprotocol/server-filesystem,
// tells it that it may read "/", grants it read of one workspace directory,
// and shows that its own read_file of anything else fails inside the sandbox.
func TestThirdPartyServerConfined(t *testing.T) {
	e := newEnv(t)
	src := npmFilesystemServer(t)
	pkg := t.TempDir()
	if b, err := exec.Command("cp", "-a", filepath.Join(src, "node_modules"), pkg).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, b)
	}
	os.RemoveAll(filepath.Join(pkg, "node_modules", ".bin")) // symlinks are not package content
	os.MkdirAll(filepath.Join(pkg, "bin"), 0o755)
	entry := filepath.Join(pkg, "bin", "server.mjs")
	os.WriteFile(entry, []byte("#!/usr/bin/node\n// The server is told it may read everything.\nprocess.argv.push('/');\nawait import('../node_modules/@modelcontextprotocol/server-filesystem/dist/index.js');\n"), 0o755)

	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	generated, err := Wrap(ctx, []string{entry}, WrapOptions{ID: "local.wrapped.fs", Entrypoint: "bin/server.mjs", ReadOnly: []string{pkg}})
	if err != nil {
		t.Fatalf("wrap: %v", err)
	}
	text := string(generated)
	if !strings.Contains(text, "name: read_text_file") || !strings.Contains(text, "risk: external_write") {
		t.Fatalf("wrap manifest:\n%s", text)
	}
	// The user's edit: these tools only read, and may read workspace://allowed/**.
	text = strings.ReplaceAll(text, "risk: external_write", "risk: read")
	text = strings.ReplaceAll(text, "approval: per_action", "approval: never")
	text = strings.Replace(text, "permissions:\n", "permissions:\n  filesystem:\n    read: [\"workspace://allowed/**\"]\n", 1)
	os.WriteFile(filepath.Join(pkg, "manifest.yaml"), []byte(text), 0o644)
	m, err := manifest.ParseFile(filepath.Join(pkg, "manifest.yaml"))
	if err != nil {
		t.Fatalf("edited manifest: %v", err)
	}
	grant := &manifest.Layer{SchemaVersion: 2, Kind: manifest.KindGrant, Permissions: m.Permissions}
	if _, err := e.mgr.Install(ctx, pkg, plugin.InstallOptions{Dev: true, Grant: grant}); err != nil {
		t.Fatalf("install --dev: %v", err)
	}

	os.MkdirAll(filepath.Join(e.ws, "allowed"), 0o755)
	os.WriteFile(filepath.Join(e.ws, "allowed", "a.txt"), []byte("hello from the allowed dir"), 0o644)
	os.WriteFile(filepath.Join(e.ws, "notes.txt"), []byte("workspace but not granted "+canaryToken), 0o644)

	p, err := e.host.Load(ctx, "local.wrapped.fs")
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	read := func(path string) (string, bool) {
		in, _ := json.Marshal(map[string]string{"path": path})
		res, err := p.call(ctx, "read_text_file", in, "")
		if err != nil {
			return err.Error(), true
		}
		return res.Content, res.IsError
	}
	if out, isErr := read(filepath.Join(e.ws, "allowed", "a.txt")); isErr || !strings.Contains(out, "hello from the allowed dir") {
		t.Fatalf("granted read failed: %s (stderr %s)", out, p.Stderr())
	}
	for _, path := range []string{filepath.Join(e.ws, "notes.txt"), e.outside, "/etc/shadow", filepath.Join(e.ws, "docs", ".env")} {
		out, isErr := read(path)
		if !isErr || strings.Contains(out, canaryToken) || strings.Contains(out, "root:") {
			t.Errorf("read_text_file(%s) was not confined: error=%v %q", path, isErr, out)
		}
	}
}
