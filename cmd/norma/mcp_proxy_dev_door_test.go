package main

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/norma-run/norma/manifest"
)

// devServer is a manifest that is not installed, next to the plugin
// host's python test server, in a directory of their own: read, listdir
// and env run without approval, write and spawn ask on every call, and
// the server may read the workspace, write out/ and spawn nothing.
const devServer = `schema_version: 2
id: local.dev.py
version: 0.1.0
entrypoint: server.py
tools:
  - {name: read, risk: read, approval: never}
  - {name: listdir, risk: read, approval: never}
  - {name: env, risk: read, approval: never}
  - {name: write, risk: read}
  - {name: spawn, risk: read}
permissions:
  filesystem:
    read: ["workspace://**"]
    write: ["workspace://out/**"]
  process:
    spawn: deny
`

// devPackage writes devServer and the python server into a directory and
// returns the manifest's path.
func devPackage(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		if os.Getenv("NORMA_REQUIRE_SANDBOX") == "1" {
			t.Fatal("/usr/bin/python3 is required")
		}
		t.Skip("no /usr/bin/python3")
	}
	src, err := os.ReadFile(filepath.Join("..", "..", "plugin", "host", "testdata", "pyserver", "server.py"))
	if err != nil {
		t.Fatal(err)
	}
	pkg := t.TempDir()
	mf := filepath.Join(pkg, "manifest.yaml")
	if err := os.WriteFile(filepath.Join(pkg, "server.py"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(mf, []byte(devServer), 0o644); err != nil {
		t.Fatal(err)
	}
	return mf
}

// TestMCPProxyDevManifestDoor: `norma mcp proxy --manifest FILE --
// python3 server.py` serves a manifest that is not installed to a go-sdk
// client over stdio, as an installed server is served. tools/list gives
// its tools under their own names; an allowed read runs; .env, denied by
// the workspace policy, is hidden from the server and its canary reaches
// nobody; a write the client approves runs once in out/, one outside the
// grant fails in the sandbox and writes nothing, and /bin/sh cannot be
// spawned; --headless refuses a write at once (MODE_DENIED), nothing
// written; --grant caps the manifest (a grant without write: the approved
// write fails, nothing written). Afterwards the state directory holds no
// plugin state, the audit log records each start as a dev consent with
// the manifest's digest and every call, and verifies; no server is left.
func TestMCPProxyDevManifestDoor(t *testing.T) {
	mf := devPackage(t)
	pkg := filepath.Dir(mf)
	m, err := manifest.ParseFile(mf)
	if err != nil {
		t.Fatal(err)
	}
	e := newRunEnv(t)
	os.MkdirAll(filepath.Join(e.ws, "out"), 0o755)
	os.MkdirAll(filepath.Join(e.ws, ".norma"), 0o755)
	os.WriteFile(filepath.Join(e.ws, ".norma", "policy.yaml"), []byte("schema_version: 2\nkind: workspace\npermissions:\n  filesystem:\n    deny: [\"workspace://**/.env\"]\n"), 0o644)
	p := func(rel string) string { return filepath.Join(e.ws, rel) }
	dev := []string{"--manifest", mf, "--", "python3", "server.py"}

	var asked atomic.Int32
	var msgs []string
	s := e.proxyClient(t, elicitAnswer(&asked, &msgs, "accept", "approve"), "", dev[0], dev[1:]...)
	tl, err := s.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tl.Tools {
		names = append(names, tool.Name)
	}
	if got := strings.Join(names, " "); !strings.Contains(" "+got+" ", " read ") || !strings.Contains(" "+got+" ", " write ") || strings.Contains(got, "mcp__") {
		t.Fatalf("tools/list: %v", names)
	}
	if text, reason, isErr := callTool(t, s, "read", map[string]any{"path": p("docs/intro.md")}); isErr || reason != "ALLOWED" || !strings.Contains(text, "hello") {
		t.Errorf("allowed read: %q %s %v", text, reason, isErr)
	}
	if text, _, isErr := callTool(t, s, "read", map[string]any{"path": p(".env")}); !isErr {
		t.Errorf("reading .env was not refused: %q", text)
	}
	if text, reason, isErr := callTool(t, s, "write", map[string]any{"path": p("out/ok.md"), "content": "approved"}); isErr || reason != "ALLOWED" {
		t.Errorf("approved write: %q %s", text, reason)
	}
	if b, err := os.ReadFile(p("out/ok.md")); err != nil || string(b) != "approved" {
		t.Errorf("out/ok.md = %q, %v", b, err)
	}
	if asked.Load() != 1 || !strings.Contains(msgs[0], "write") {
		t.Errorf("elicitation: %d asks, %q", asked.Load(), msgs)
	}
	// Approved, but outside the write grant (and into the package): the
	// sandbox refuses.
	for _, path := range []string{p("docs/evil.md"), filepath.Join(pkg, "evil.py")} {
		if text, _, isErr := callTool(t, s, "write", map[string]any{"path": path, "content": "evil"}); !isErr {
			t.Errorf("write %s outside the grant reported success: %q", path, text)
		}
		if _, err := os.Stat(path); err == nil {
			t.Errorf("%s was written outside the write grant", path)
		}
	}
	ran := p("out/sh-ran")
	if text, _, isErr := callTool(t, s, "spawn", map[string]any{"argv": []string{"/bin/sh", "-c", "echo ran > " + ran}}); !isErr || !strings.Contains(text, "PermissionError") {
		t.Errorf("spawn /bin/sh: %q %v, want PermissionError", text, isErr)
	}
	if _, err := os.Stat(ran); err == nil {
		t.Error("/bin/sh ran in a server that may not spawn")
	}

	// --headless: refused at once, nobody asked.
	var hasked atomic.Int32
	var hmsgs []string
	h := e.proxyClient(t, elicitAnswer(&hasked, &hmsgs, "accept", "approve"), "", "--headless", dev...)
	if text, reason, isErr := callTool(t, h, "write", map[string]any{"path": p("out/h.md"), "content": "h"}); !isErr || reason != "MODE_DENIED" ||
		!strings.HasPrefix(text, "norma: MODE_DENIED:") {
		t.Errorf("headless write: %q %s %v", text, reason, isErr)
	}
	if _, err := os.Stat(p("out/h.md")); err == nil || hasked.Load() != 0 {
		t.Errorf("headless write: out/h.md exists (%v) or %d asks", err, hasked.Load())
	}

	// --grant without write: an approved write to out/ fails in the
	// sandbox.
	grant := grantFile(t, "  filesystem:\n    read: [\"workspace://**\"]\n")
	var gasked atomic.Int32
	var gmsgs []string
	g := e.proxyClient(t, elicitAnswer(&gasked, &gmsgs, "accept", "approve"), "", "--grant", append([]string{grant}, dev...)...)
	if text, _, isErr := callTool(t, g, "write", map[string]any{"path": p("out/g.md"), "content": "g"}); !isErr {
		t.Errorf("write the grant does not give: %q", text)
	}
	if _, err := os.Stat(p("out/g.md")); err == nil {
		t.Error("out/g.md was written though the grant gives no write")
	}
	if text, reason, isErr := callTool(t, g, "read", map[string]any{"path": p("docs/intro.md")}); isErr || reason != "ALLOWED" || !strings.Contains(text, "hello") {
		t.Errorf("read under the grant: %q %s %v", text, reason, isErr)
	}

	for _, c := range []*mcp.ClientSession{s, h, g} {
		c.Close()
	}
	if procs := processesWith(pkg); len(procs) > 0 {
		t.Errorf("processes left with the package in their command line: %v", procs)
	}
	if _, err := os.Stat(filepath.Join(e.home, "plugins")); err == nil {
		t.Error("the proxy left plugin state (STATE/plugins) for a manifest that is not installed")
	}
	evs := e.auditEvents(t)
	var consents int
	for _, ev := range evs {
		if ev["type"] != "consent_granted" {
			continue
		}
		d, _ := ev["detail"].(map[string]any)
		if d["dev"] != "true" || ev["plugin"] != m.ID || ev["manifest_digest"] != m.Digest() || d["package"] != pkg {
			t.Errorf("consent event: %v", ev)
		}
		consents++
	}
	if consents != 3 {
		t.Errorf("%d dev consent events, want one per proxy (3)", consents)
	}
	writes := strings.Join(callReasons(evs, "mcp__local.dev.py__write"), " ")
	// Four were approved (ok ran; evil.md, evil.py and g.md failed in the
	// sandbox), h was refused by the mode.
	if strings.Count(writes, "APPROVAL_REQUIRED") != 4 || strings.Count(writes, "ALLOWED") != 1 || strings.Count(writes, "TOOL_ERROR") != 3 ||
		strings.Count(writes, "MODE_DENIED") != 1 {
		t.Errorf("audited writes: %s", writes)
	}
	if code, out, errs := door(t, "--home", e.home, "audit", "verify"); code != 0 {
		t.Errorf("audit verify: exit %d\n%s%s", code, out, errs)
	}
}

// TestMCPProxyDevManifestRefusedDoor: the development form without a
// command is a usage error, and a manifest whose directory is the
// workspace (mounted whole, it would show the server the workspace's
// .env) is refused with PLUGIN_DEV_PACKAGE; neither starts a server or
// leaves plugin state.
func TestMCPProxyDevManifestRefusedDoor(t *testing.T) {
	mf := devPackage(t)
	e := newRunEnv(t)
	if code, _, errs := door(t, "--home", e.home, "mcp", "proxy", "--manifest", mf); code != exitUsage || !strings.Contains(errs, "-- CMD ARGS") {
		t.Errorf("no command: exit %d\n%s", code, errs)
	}
	inWS := filepath.Join(e.ws, "manifest.yaml")
	b, _ := os.ReadFile(mf)
	os.WriteFile(inWS, b, 0o644)
	src, _ := os.ReadFile(filepath.Join(filepath.Dir(mf), "server.py"))
	os.WriteFile(filepath.Join(e.ws, "server.py"), src, 0o644)
	code, _, errs := door(t, "--home", e.home, "mcp", "proxy", "--workspace", e.ws, "--manifest", inWS, "--", "python3", "server.py")
	if code == 0 || !strings.Contains(errs, "PLUGIN_DEV_PACKAGE") {
		t.Errorf("manifest in the workspace: exit %d\n%s", code, errs)
	}
	if _, err := os.Stat(filepath.Join(e.home, "plugins")); err == nil {
		t.Error("plugin state was created")
	}
}

// fsDevPackage copies node_modules holding
// @modelcontextprotocol/server-filesystem ($NORMA_TEST_MCP_SERVERS, or a
// fresh npm install of the pinned version) into a directory of its own
// with a manifest declaring its tools: the reads without approval, the
// writes asking on every call; it may read the workspace and write out/.
// It returns the manifest's path.
func fsDevPackage(t *testing.T) string {
	t.Helper()
	requireNPM(t)
	src := os.Getenv("NORMA_TEST_MCP_SERVERS")
	if src == "" {
		src = t.TempDir()
		if b, err := exec.Command("npm", "install", "--prefix", src, "--no-audit", "--no-fund", "@modelcontextprotocol/server-filesystem@"+mcpServerVersion).CombinedOutput(); err != nil {
			if os.Getenv("NORMA_REQUIRE_SANDBOX") == "1" {
				t.Fatalf("npm install: %v\n%s", err, b)
			}
			t.Skipf("npm install: %v", err)
		}
	}
	pkg := filepath.Join(t.TempDir(), "fs-server")
	os.MkdirAll(pkg, 0o755)
	if b, err := exec.Command("cp", "-a", filepath.Join(src, "node_modules"), pkg).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, b)
	}
	var b strings.Builder
	b.WriteString("schema_version: 2\nid: local.dev.fs\nversion: 0.1.0\nentrypoint: node_modules/@modelcontextprotocol/server-filesystem/dist/index.js\ntools:\n")
	for _, name := range []string{"directory_tree", "get_file_info", "list_allowed_directories", "list_directory", "list_directory_with_sizes",
		"read_file", "read_media_file", "read_multiple_files", "read_text_file", "search_files"} {
		fmt.Fprintf(&b, "  - {name: %s, risk: read, approval: never}\n", name)
	}
	for _, name := range []string{"create_directory", "edit_file", "move_file", "write_file"} {
		fmt.Fprintf(&b, "  - {name: %s, risk: read}\n", name)
	}
	b.WriteString("permissions:\n  filesystem:\n    read: [\"workspace://**\"]\n    write: [\"workspace://out/**\"]\n  process:\n    spawn: deny\n")
	mf := filepath.Join(pkg, "manifest.yaml")
	if err := os.WriteFile(mf, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return mf
}

// TestMCPProxyDevFilesystemDoor: the npm server-filesystem, not
// installed, run by `norma mcp proxy --manifest FILE -- node
// node_modules/.../dist/index.js ${workspace}` (node found in the
// sandbox's PATH, ${workspace} expanded): tools/list gives its fourteen
// tools with their schemas; a read runs; a write the client approves runs
// in out/; an approved write outside out/, which the server itself would
// allow (the workspace is its allowed directory), fails in the sandbox and
// writes nothing; --headless refuses a write at once. No plugin state is
// left and no server runs afterwards.
func TestMCPProxyDevFilesystemDoor(t *testing.T) {
	mf := fsDevPackage(t)
	e := newRunEnv(t)
	os.MkdirAll(filepath.Join(e.ws, "out"), 0o755)
	p := func(rel string) string { return filepath.Join(e.ws, rel) }
	dev := []string{"--manifest", mf, "--", "node", "node_modules/@modelcontextprotocol/server-filesystem/dist/index.js", "${workspace}"}

	var asked atomic.Int32
	var msgs []string
	s := e.proxyClient(t, elicitAnswer(&asked, &msgs, "accept", "approve"), "", dev[0], dev[1:]...)
	tl, err := s.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	tools := map[string]*mcp.Tool{}
	for _, tool := range tl.Tools {
		tools[tool.Name] = tool
	}
	if w := tools["write_file"]; len(tools) != 14 || w == nil || !strings.Contains(string(mustJSON(t, w.InputSchema)), `"content"`) {
		t.Fatalf("tools/list: %d tools, write_file %v", len(tools), w)
	}
	if text, reason, isErr := callTool(t, s, "read_text_file", map[string]any{"path": p("docs/intro.md")}); isErr || reason != "ALLOWED" || !strings.Contains(text, "hello") {
		t.Errorf("allowed read: %q %s %v", text, reason, isErr)
	}
	if text, reason, isErr := callTool(t, s, "write_file", map[string]any{"path": p("out/ok.md"), "content": "approved"}); isErr || reason != "ALLOWED" {
		t.Errorf("approved write: %q %s", text, reason)
	}
	if b, err := os.ReadFile(p("out/ok.md")); err != nil || string(b) != "approved" || asked.Load() != 1 {
		t.Errorf("out/ok.md = %q, %v; %d asks", b, err, asked.Load())
	}
	if text, _, isErr := callTool(t, s, "write_file", map[string]any{"path": p("docs/evil.md"), "content": "evil"}); !isErr {
		t.Errorf("write outside the grant reported success: %q", text)
	}
	if _, err := os.Stat(p("docs/evil.md")); err == nil {
		t.Error("docs/evil.md was written outside the write grant")
	}
	h := e.proxyClient(t, nil, "", "--headless", dev...)
	if text, reason, isErr := callTool(t, h, "write_file", map[string]any{"path": p("out/h.md"), "content": "h"}); !isErr || reason != "MODE_DENIED" {
		t.Errorf("headless write: %q %s %v", text, reason, isErr)
	}
	if _, err := os.Stat(p("out/h.md")); err == nil {
		t.Error("out/h.md was written by a refused call")
	}
	s.Close()
	h.Close()
	if procs := processesWith(filepath.Dir(mf)); len(procs) > 0 {
		t.Errorf("processes left with the package in their command line: %v", procs)
	}
	if _, err := os.Stat(filepath.Join(e.home, "plugins")); err == nil {
		t.Error("the proxy left plugin state (STATE/plugins)")
	}
}

// TestMCPProxyDevShadowsInstalledDoor: with a plugin of the same id
// installed, `mcp proxy --manifest` serves the development server and
// leaves the installed one out for the run (said on stderr): its calls
// reach the development copy, which reports its own package as working
// directory, and the installed plugin's state is unchanged (it was not
// started: no tool pins written).
func TestMCPProxyDevShadowsInstalledDoor(t *testing.T) {
	mf := devPackage(t)
	e := newRunEnv(t)
	inst := t.TempDir()
	b, _ := os.ReadFile(mf)
	os.WriteFile(filepath.Join(inst, "manifest.yaml"), b, 0o644)
	src, _ := os.ReadFile(filepath.Join(filepath.Dir(mf), "server.py"))
	os.WriteFile(filepath.Join(inst, "server.py"), src, 0o755)
	os.WriteFile(filepath.Join(inst, "installed-copy"), nil, 0o644)
	if code, out, errs := door(t, "--home", e.home, "plugin", "install", "--dev", inst, "--yes", "--grant", grantFile(t, "  filesystem:\n    read: [\"workspace://**\"]\n")); code != 0 {
		t.Fatalf("install: exit %d\n%s%s", code, out, errs)
	}
	before := stateTree(t, filepath.Join(e.home, "plugins"))
	cmd := exec.Command(normaBin(t), "--home", e.home, "mcp", "proxy", "--manifest", mf, "--", "python3", "server.py")
	cmd.Dir = e.ws
	var stderr strings.Builder
	cmd.Stderr = &stderr
	c := mcp.NewClient(&mcp.Implementation{Name: "norma-door-test", Version: "1"}, nil)
	s, err := c.Connect(t.Context(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, stderr.String())
	}
	text, reason, isErr := callTool(t, s, "listdir", map[string]any{"path": "."})
	if isErr || reason != "ALLOWED" || !strings.Contains(text, `"server.py"`) || strings.Contains(text, "installed-copy") {
		t.Errorf("listdir . = %q %s %v, want the development package", text, reason, isErr)
	}
	s.Close()
	if !strings.Contains(stderr.String(), "installed plugin local.dev.py is left out") {
		t.Errorf("stderr does not say the installed plugin is left out:\n%s", stderr.String())
	}
	if after := stateTree(t, filepath.Join(e.home, "plugins")); !slices.Equal(before, after) {
		t.Errorf("the installed plugin's state changed:\nbefore %q\nafter  %q", before, after)
	}
}

// stateTree lists the paths under dir.
func stateTree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err == nil {
			out = append(out, p)
		}
		return nil
	})
	return out
}
