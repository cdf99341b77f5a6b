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
// server: $NORMA_TEST_MCP_FS (installed by .ci/run), else what npmServers
// finds ($NORMA_TEST_MCP_SERVERS or a fresh npm install).
func npmFilesystemServer(t *testing.T) string {
	t.Helper()
	if d := os.Getenv("NORMA_TEST_MCP_FS"); d != "" {
		if _, err := os.Stat("/usr/bin/node"); err != nil {
			t.Skip("no /usr/bin/node")
		}
		return d
	}
	return npmServers(t, strings.TrimSuffix(mcpFSVersion, "@"+mcpPinned))
}

// loadFSServer wraps @modelcontextprotocol/server-filesystem, tells it
// that it may use "/", edits the generated manifest as a user would (every
// tool risk read, no approval, and the filesystem block fs) and installs
// and loads it.
func loadFSServer(ctx context.Context, t *testing.T, e *env, fs string) *Plugin {
	t.Helper()
	src := npmFilesystemServer(t)
	pkg := t.TempDir()
	if b, err := exec.Command("cp", "-a", filepath.Join(src, "node_modules"), pkg).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, b)
	}
	os.RemoveAll(filepath.Join(pkg, "node_modules", ".bin")) // symlinks are not package content
	os.MkdirAll(filepath.Join(pkg, "bin"), 0o755)
	entry := filepath.Join(pkg, "bin", "server.mjs")
	os.WriteFile(entry, []byte("#!/usr/bin/node\n// The server is told it may use everything.\nprocess.argv.push('/');\nawait import('../node_modules/@modelcontextprotocol/server-filesystem/dist/index.js');\n"), 0o755)

	generated, err := Wrap(ctx, []string{entry}, WrapOptions{ID: "local.wrapped.fs", Entrypoint: "bin/server.mjs", ReadOnly: []string{pkg}})
	if err != nil {
		t.Fatalf("wrap: %v", err)
	}
	text := string(generated)
	if !strings.Contains(text, "name: read_text_file") || !strings.Contains(text, "name: write_file") || !strings.Contains(text, "external_state: write") {
		t.Fatalf("wrap manifest:\n%s", text)
	}
	text = strings.ReplaceAll(text, "external_state: write", "external_state: none")
	text = strings.ReplaceAll(text, "data: send", "data: read")
	text = strings.ReplaceAll(text, "approval: per_action", "approval: never")
	text = strings.Replace(text, "permissions:\n", "permissions:\n  filesystem:\n"+fs, 1)
	os.WriteFile(filepath.Join(pkg, "manifest.yaml"), []byte(text), 0o644)
	m, err := manifest.ParseFile(filepath.Join(pkg, "manifest.yaml"))
	if err != nil {
		t.Fatalf("edited manifest: %v", err)
	}
	grant := &manifest.Layer{SchemaVersion: 2, Kind: manifest.KindGrant, Permissions: m.Permissions}
	if _, err := e.mgr.Install(ctx, pkg, plugin.InstallOptions{Dev: true, Grant: grant}); err != nil {
		t.Fatalf("install --dev: %v", err)
	}
	p, err := e.host.Load(ctx, "local.wrapped.fs")
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	return p
}

// TestThirdPartyServerConfined wraps @modelcontextprotocol/server-filesystem,
// tells it that it may read "/", grants it read of one workspace directory,
// and shows that its own read_file of anything else fails inside the sandbox.
func TestThirdPartyServerConfined(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	os.MkdirAll(filepath.Join(e.ws, "allowed"), 0o755)
	os.WriteFile(filepath.Join(e.ws, "allowed", "a.txt"), []byte("hello from the allowed dir"), 0o644)
	os.WriteFile(filepath.Join(e.ws, "notes.txt"), []byte("workspace but not granted "+canaryToken), 0o644)
	// The user's edit: these tools only read, and may read workspace://allowed/**.
	p := loadFSServer(ctx, t, e, "    read: [\"workspace://allowed/**\"]\n")

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

// TestThirdPartyServerWriteOutsideGrantFails: the server may read
// workspace://readonly/** and write workspace://out/** only. Its write_file
// of README.md at the workspace root, in the folder it may only read, in
// an existing folder it has no grant for, in a new folder and beside the
// workspace must each come back to the model as an error and leave the
// host untouched; the write into out/ is the control. (The workspace lies under the host's /tmp, where the
// sandbox's private /tmp once took such writes silently.)
func TestThirdPartyServerWriteOutsideGrantFails(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	os.WriteFile(filepath.Join(e.ws, "README.md"), []byte("original readme\n"), 0o644)
	for _, d := range []string{"readonly", "ungranted", "out"} {
		os.MkdirAll(filepath.Join(e.ws, d), 0o755)
	}
	os.WriteFile(filepath.Join(e.ws, "readonly", "README.md"), []byte("original readme\n"), 0o644)
	p := loadFSServer(ctx, t, e, "    read: [\"workspace://readonly/**\"]\n    write: [\"workspace://out/**\"]\n")
	write := func(path string) (string, bool) {
		in, _ := json.Marshal(map[string]string{"path": path, "content": "written by the plugin\n"})
		res, err := p.call(ctx, "write_file", in, "")
		if err != nil {
			return err.Error(), true
		}
		return res.Content, res.IsError
	}
	if out, isErr := write(filepath.Join(e.ws, "out", "ok.md")); isErr {
		t.Fatalf("control: write_file into the write grant failed: %s (stderr %s)", out, p.Stderr())
	}
	if b, err := os.ReadFile(filepath.Join(e.ws, "out", "ok.md")); err != nil || string(b) != "written by the plugin\n" {
		t.Fatalf("control: out/ok.md on the host = %q, %v", b, err)
	}
	for _, path := range []string{
		filepath.Join(e.ws, "README.md"),
		filepath.Join(e.ws, "readonly", "README.md"),
		filepath.Join(e.ws, "readonly", "new.md"),
		filepath.Join(e.ws, "ungranted", "README.md"),
		filepath.Join(e.ws, "newdir", "README.md"),
		filepath.Join(filepath.Dir(e.ws), "beside.md"),
	} {
		out, isErr := write(path)
		if !isErr {
			t.Errorf("write_file(%s) reported success to the model: %q", path, out)
		}
		t.Logf("write_file(%s): %s", path, out)
	}
	for _, f := range []string{"README.md", "readonly/README.md"} {
		if b, _ := os.ReadFile(filepath.Join(e.ws, f)); string(b) != "original readme\n" {
			t.Errorf("%s on the host = %q, want it unchanged", f, b)
		}
	}
	for _, path := range []string{filepath.Join(e.ws, "readonly", "new.md"), filepath.Join(e.ws, "ungranted", "README.md"), filepath.Join(e.ws, "newdir"), filepath.Join(filepath.Dir(e.ws), "beside.md")} {
		if _, err := os.Lstat(path); err == nil {
			t.Errorf("%s exists on the host after the attempt", path)
		}
	}
}
