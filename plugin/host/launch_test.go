package host

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/norma-run/norma/audit"
	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/internal/treetest"
	"github.com/norma-run/norma/manifest"
	"github.com/norma-run/norma/plugin"
	"github.com/norma-run/norma/secret"
)

// pyManifest is the manifest of the python test server (testdata/pyserver)
// with extra top-level lines (args, env, data_dir) and permissions.
func pyManifest(id, extra, perms string) string {
	var tools strings.Builder
	for _, t := range []string{"env", "listdir", "read", "write", "spawn"} {
		fmt.Fprintf(&tools, "  - name: %s\n    risk: read\n    approval: never\n", t)
	}
	return "schema_version: 2\nid: " + id + "\nversion: 1.0.0\nentrypoint: bin/server.py\n" + extra +
		"tools:\n" + tools.String() + "permissions:\n  process:\n    spawn: deny\n" + perms
}

// pySecret declares the vault's canary secret, delivered to the server
// only as a placeholder.
const pySecret = "  secrets:\n    - name: issue_api_token\n      purpose: https://api.example.invalid\n      inject_as: brokered_header\n"

// installPy writes the python test server with the given "#!" line and
// manifest into a package, installs it --dev with grant (nil: everything
// the manifest asks) and returns the package directory.
func installPy(t *testing.T, e *env, shebang, mf string, grant *manifest.Permissions) string {
	t.Helper()
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("no /usr/bin/python3")
	}
	src, err := os.ReadFile(filepath.Join("testdata", "pyserver", "server.py"))
	if err != nil {
		t.Fatal(err)
	}
	_, body, _ := strings.Cut(string(src), "\n")
	pkg := t.TempDir()
	os.MkdirAll(filepath.Join(pkg, "bin"), 0o755)
	os.WriteFile(filepath.Join(pkg, "bin", "server.py"), []byte(shebang+"\n"+body), 0o755)
	os.WriteFile(filepath.Join(pkg, "manifest.yaml"), []byte(mf), 0o644)
	m, err := manifest.ParseFile(filepath.Join(pkg, "manifest.yaml"))
	if err != nil {
		t.Fatalf("manifest: %v\n%s", err, mf)
	}
	perms := m.Permissions
	if grant != nil {
		perms = *grant
	}
	g := &manifest.Layer{SchemaVersion: 2, Kind: manifest.KindGrant, Permissions: perms}
	if _, err := e.mgr.Install(t.Context(), pkg, plugin.InstallOptions{Dev: true, Grant: g}); err != nil {
		t.Fatalf("install --dev: %v", err)
	}
	return pkg
}

// pyCall calls a tool of the python server and returns its text and
// whether it is an error.
func pyCall(ctx context.Context, t *testing.T, p *Plugin, name string, args any) (string, bool) {
	t.Helper()
	in, _ := json.Marshal(args)
	res, err := p.call(ctx, name, in, "")
	if err != nil {
		t.Fatalf("%s: %v (stderr %s)", name, err, p.Stderr())
	}
	return res.Content, res.IsError
}

// serverEnv is what the env tool reports: the server's environment and
// command line.
type serverEnv struct {
	Env  map[string]string
	Argv []string
}

func pyEnv(ctx context.Context, t *testing.T, p *Plugin) serverEnv {
	t.Helper()
	out, isErr := pyCall(ctx, t, p, "env", map[string]any{})
	var se serverEnv
	if err := json.Unmarshal([]byte(out), &se); isErr || err != nil {
		t.Fatalf("env: %s %v", out, err)
	}
	return se
}

// TestLaunchArgsEnvSecretPlaceholder: the manifest's args and env reach
// the server, expanded — ${package}, ${workspace}, ${data} and
// ${secret:NAME} — and the secret only as the broker's placeholder: the
// canary value is nowhere in the server's environment (as it reports it
// and as /proc/self/environ holds it), its command line, its stderr or the
// audit log. The "#!/usr/bin/env python3" entrypoint runs as
// python3 directly, and the server, which may not spawn, cannot run
// /bin/sh.
func TestLaunchArgsEnvSecretPlaceholder(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	extra := "args: [\"--pkg=${package}\", \"--ws=${workspace}\", \"--data=${data}\", \"--token=${secret:issue_api_token}\"]\n" +
		"env:\n  TOKEN_HEADER: \"Bearer ${secret:issue_api_token}\"\n  DATA: \"${data}\"\n  LANG: en_US.UTF-8\n  PYSERVER_MARK: \"${data}/started\"\ndata_dir: true\n"
	installPy(t, e, "#!/usr/bin/env python3", pyManifest("local.test.py", extra, pySecret), nil)
	p, err := e.host.Load(ctx, "local.test.py")
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	se := pyEnv(ctx, t, p)
	st, _ := e.mgr.Info("local.test.py")
	pkg := e.mgr.Dir("local.test.py", st.Active)
	data := e.mgr.DataDir("local.test.py")
	python, _ := filepath.EvalSymlinks("/usr/bin/python3")
	brkPH := func() string {
		p.mu.Lock()
		defer p.mu.Unlock()
		ph, ok := p.brk.Placeholder("issue_api_token")
		if !ok {
			t.Fatal("the broker has no placeholder")
		}
		return ph.String()
	}()
	want := []string{python, filepath.Join(pkg, "bin", "server.py"), "--pkg=" + pkg, "--ws=" + e.ws, "--data=" + data, "--token=" + brkPH}
	if !slices.Equal(se.Argv, want) {
		t.Errorf("argv = %q\nwant %q", se.Argv, want)
	}
	if got := se.Env["TOKEN_HEADER"]; got != "Bearer "+brkPH || !strings.HasPrefix(brkPH, secret.PlaceholderPrefix+"issue_api_token:") {
		t.Errorf("TOKEN_HEADER = %q, want the placeholder %q", got, brkPH)
	}
	if se.Env["DATA"] != data || se.Env["LANG"] != "en_US.UTF-8" || se.Env["PATH"] != SandboxPath {
		t.Errorf("env DATA=%q LANG=%q PATH=%q", se.Env["DATA"], se.Env["LANG"], se.Env["PATH"])
	}
	if fi, err := os.Stat(data); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Errorf("data dir %s: %v %v, want a 0700 directory", data, fi, err)
	}
	environ, isErr := pyCall(ctx, t, p, "read", map[string]string{"path": "/proc/self/environ"})
	if isErr || !strings.Contains(environ, "TOKEN_HEADER=Bearer "+brkPH) {
		t.Errorf("/proc/self/environ = %q", environ)
	}
	if strings.Count(environ, "LANG=") != 1 {
		t.Errorf("LANG appears %d times in the environment", strings.Count(environ, "LANG="))
	}
	// No spawn: /bin/sh cannot be executed, and what it would do is not done.
	ran := filepath.Join(data, "sh-ran")
	out, isErr := pyCall(ctx, t, p, "spawn", map[string]any{"argv": []string{"/bin/sh", "-c", "echo ran > " + ran}})
	if !isErr || !strings.Contains(out, "PermissionError") {
		t.Errorf("spawn /bin/sh = %q (error %v), want PermissionError", out, isErr)
	}
	if _, err := os.Lstat(ran); err == nil {
		t.Error("/bin/sh ran inside a no-spawn plugin")
	}
	// The canary value is nowhere.
	recs, _ := e.audit.Query(ctx, audit.Filter{})
	auditJSON, _ := json.Marshal(recs)
	envJSON, _ := json.Marshal(se)
	for where, s := range map[string]string{"env tool": string(envJSON), "/proc/self/environ": environ, "stderr": p.Stderr(), "audit": string(auditJSON)} {
		if strings.Contains(s, canaryToken) {
			t.Errorf("the secret value appears in %s", where)
		}
	}
}

// TestLaunchSecretNotGranted: a template naming a secret the grant does
// not give has no placeholder, so the start fails with a coded error that
// names the secret (never its value) and the server never runs.
func TestLaunchSecretNotGranted(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	extra := "env:\n  PYSERVER_MARK: \"${data}/started\"\n  TOKEN: \"${secret:issue_api_token}\"\ndata_dir: true\n"
	installPy(t, e, "#!/usr/bin/env python3", pyManifest("local.test.py", extra, pySecret), &manifest.Permissions{})
	_, err := e.host.Load(ctx, "local.test.py")
	if capability.ReasonOf(err) != ReasonPluginStart || !strings.Contains(err.Error(), "issue_api_token is not granted") {
		t.Fatalf("Load = %v, want PLUGIN_START_FAILED naming the secret", err)
	}
	if strings.Contains(err.Error(), canaryToken) {
		t.Fatal("the error holds the secret value")
	}
	if _, err := os.Lstat(filepath.Join(e.mgr.DataDir("local.test.py"), "started")); err == nil {
		t.Fatal("the server ran")
	}
}

// TestLaunchInterpreters: each form of "#!" line starts the python server
// with the interpreter found on the host in the sandbox's PATH and run
// directly (argv[0] is its real path, then its "#!" arguments, then the
// script), while the caller's PATH holds a decoy python3 and node.
func TestLaunchInterpreters(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	decoys := t.TempDir()
	for _, n := range []string{"python3", "node", "env"} {
		os.WriteFile(filepath.Join(decoys, n), []byte("#!/bin/sh\necho decoy\n"), 0o755)
	}
	t.Setenv("PATH", decoys+":"+os.Getenv("PATH"))
	python, _ := filepath.EvalSymlinks("/usr/bin/python3")
	for i, tc := range []struct {
		shebang string
		args    []string
	}{
		{"#!/usr/bin/env python3", nil},
		{"#!/usr/bin/env -S python3 -u -B", []string{"-u", "-B"}},
		{"#!/usr/bin/python3", nil},
		{"#!/usr/bin/python3 -u", []string{"-u"}},
		{"#! /usr/bin/env\tpython3 \r", nil},
	} {
		id := fmt.Sprintf("local.test.py%d", i)
		installPy(t, e, tc.shebang, pyManifest(id, "", ""), nil)
		p, err := e.host.Load(ctx, id)
		if err != nil {
			t.Fatalf("%q: load: %v", tc.shebang, err)
		}
		se := pyEnv(ctx, t, p)
		st, _ := e.mgr.Info(id)
		want := slices.Concat([]string{python}, tc.args, []string{filepath.Join(e.mgr.Dir(id, st.Active), "bin", "server.py")})
		if !slices.Equal(se.Argv, want) {
			t.Errorf("%q: argv = %q, want %q", tc.shebang, se.Argv, want)
		}
		p.Close()
	}
}

// TestEntryCommand: how each entrypoint is started, what a no-spawn
// plugin may execute, and the "#!" lines refused with a clear error.
func TestEntryCommand(t *testing.T) {
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("no /usr/bin/python3")
	}
	python, _ := filepath.EvalSymlinks("/usr/bin/python3")
	pyld := elfInterp(python)
	dir := t.TempDir()
	t.Setenv("PATH", dir) // a decoy python3 first in the caller's PATH
	os.WriteFile(filepath.Join(dir, "python3"), []byte("#!/bin/sh\n"), 0o755)
	script := func(body string) string {
		f, _ := os.CreateTemp(dir, "entry-*")
		f.WriteString(body)
		f.Close()
		return f.Name()
	}
	// A #! interpreter that is itself a script resolves to its interpreter.
	inner := script("#!/usr/bin/python3 -I\n")
	os.Chmod(inner, 0o755)
	for _, tc := range []struct {
		line     string
		argv     []string // before the entry
		err      string
		selfArgv bool // the entry runs as itself
	}{
		{line: "#!/usr/bin/env python3\n", argv: []string{python}},
		{line: "#!/usr/bin/env -S python3 -u\n", argv: []string{python, "-u"}},
		{line: "#!/usr/bin/env -Spython3\n", argv: []string{python}},
		{line: "#!/usr/bin/python3 -u -B\n", argv: []string{python, "-u -B"}},
		{line: "#!" + inner + " -x\n", argv: []string{python, "-I", inner, "-x"}},
		{line: "\x7fELF not really", selfArgv: true},
		{line: "#!/usr/bin/env nosuchinterp\n", err: "nosuchinterp not found in the sandbox's PATH"},
		{line: "#!/usr/bin/env python3 -u\n", err: "env without -S takes one word"},
		{line: "#!/usr/bin/env -i python3\n", err: "env without -S takes one word"},
		{line: "#!/usr/bin/env -S -i python3\n", err: "env option \"-i\" is not supported"},
		{line: "#!/usr/bin/env -S A=1 python3\n", err: "variable assignment"},
		{line: "#!/usr/bin/env -S python3 \"-u\"\n", err: "quotes, escapes or variables"},
		{line: "#!/usr/bin/env\n", err: "env names no program"},
		{line: "#!/usr/bin/env ./python3\n", err: "relative path"},
		{line: "#!python3\n", err: "not an absolute path"},
		{line: "#!/no/such/interp\n", err: "does not exist on this host"},
		{line: "#!/usr/bin/" + strings.Repeat("x", 300), err: "longer than 256 bytes"},
	} {
		entry := script(tc.line)
		cmd, err := EntryCommand(entry)
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: err = %v, want %q", tc.line, err, tc.err)
			}
			continue
		case err != nil:
			t.Errorf("%q: %v", tc.line, err)
			continue
		case tc.selfArgv:
			if !slices.Equal(cmd.Argv, []string{entry}) || !slices.Equal(cmd.Exec, []string{entry}) {
				t.Errorf("%q: %+v", tc.line, cmd)
			}
			continue
		}
		if want := append(slices.Clone(tc.argv), entry); !slices.Equal(cmd.Argv, want) {
			t.Errorf("%q: argv = %q, want %q", tc.line, cmd.Argv, want)
		}
		wantExec := slices.Concat([]string{python}, pyld, []string{entry})
		if strings.HasPrefix(tc.line, "#!"+inner) {
			wantExec = slices.Concat([]string{python}, pyld, []string{inner, entry})
		}
		if !slices.Equal(cmd.Exec, wantExec) {
			t.Errorf("%q: exec = %q, want %q", tc.line, cmd.Exec, wantExec)
		}
	}
}

// FuzzParseShebang: any "#!" line either parses into an interpreter that is
// absolute or a bare name, with no empty argument, or is refused.
func FuzzParseShebang(f *testing.F) {
	for _, s := range []string{"/usr/bin/env node", "/usr/bin/env -S node --x", "/usr/bin/python3 -u", " /bin/sh\t-e ", "/usr/bin/env -S"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		name, args, err := parseShebang(line)
		if err != nil {
			return
		}
		if name == "" || strings.Contains(name, "/") && !filepath.IsAbs(name) || strings.ContainsAny(name, " \t") {
			t.Fatalf("parseShebang(%q) = %q", line, name)
		}
		for _, a := range args {
			if a == "" {
				t.Fatalf("parseShebang(%q): empty argument in %q", line, args)
			}
		}
	})
}

// The npm servers of issue 17, at the pinned version.
const (
	mcpMemory = "@modelcontextprotocol/server-memory"
	mcpPinned = "2026.8.31"
)

var npmInstalled sync.Map // package → prefix dir

// npmServers returns a prefix directory whose node_modules holds the npm
// package pkg: $NORMA_TEST_MCP_SERVERS (a prefix holding all four servers
// of issue 17, installed by .ci/run) or a fresh npm install of the pinned
// version, once per test binary.
func npmServers(t *testing.T, pkg string) string {
	t.Helper()
	if _, err := os.Stat("/usr/bin/node"); err != nil {
		t.Skip("no /usr/bin/node")
	}
	if d := os.Getenv("NORMA_TEST_MCP_SERVERS"); d != "" {
		return d
	}
	if d, ok := npmInstalled.Load(pkg); ok {
		return d.(string)
	}
	d, err := os.MkdirTemp("", "norma-npm-")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("npm", "install", "--prefix", d, "--no-audit", "--no-fund", pkg+"@"+mcpPinned)
	if b, err := cmd.CombinedOutput(); err != nil {
		if os.Getenv("NORMA_REQUIRE_SANDBOX") == "1" {
			t.Fatalf("npm install %s: %v\n%s", pkg, err, b)
		}
		t.Skipf("npm install %s: %v", pkg, err)
	}
	npmInstalled.Store(pkg, d)
	return d
}

// memoryTools are the tools server-memory serves.
var memoryTools = []string{"create_entities", "create_relations", "add_observations", "delete_entities", "delete_observations",
	"delete_relations", "read_graph", "search_nodes", "open_nodes"}

// memoryPackage copies node_modules (without .bin) into a new package dir
// and writes a manifest that starts server-memory's own dist/index.js,
// "#!/usr/bin/env node", with the extra top-level lines.
func memoryPackage(t *testing.T, version, extra string) string {
	t.Helper()
	src := npmServers(t, mcpMemory)
	pkg := t.TempDir()
	if b, err := exec.Command("cp", "-a", filepath.Join(src, "node_modules"), pkg).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, b)
	}
	os.RemoveAll(filepath.Join(pkg, "node_modules", ".bin"))
	entry := "node_modules/" + mcpMemory + "/dist/index.js"
	if b, _ := os.ReadFile(filepath.Join(pkg, entry)); !strings.HasPrefix(string(b), "#!/usr/bin/env node\n") {
		t.Fatalf("%s does not start with #!/usr/bin/env node", entry)
	}
	var tools strings.Builder
	for _, n := range memoryTools {
		fmt.Fprintf(&tools, "  - name: %s\n    risk: read\n    approval: never\n", n)
	}
	mf := "schema_version: 2\nid: local.test.memory\nversion: " + version + "\nentrypoint: " + entry + "\n" + extra +
		"tools:\n" + tools.String() + "permissions:\n  process:\n    spawn: deny\n"
	os.WriteFile(filepath.Join(pkg, "manifest.yaml"), []byte(mf), 0o644)
	return pkg
}

func devGrant(t *testing.T, pkg string) *manifest.Layer {
	t.Helper()
	m, err := manifest.ParseFile(filepath.Join(pkg, "manifest.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return &manifest.Layer{SchemaVersion: 2, Kind: manifest.KindGrant, Permissions: m.Permissions}
}

func memoryCall(ctx context.Context, t *testing.T, p *Plugin, name string, args any) (string, bool) {
	t.Helper()
	return pyCall(ctx, t, p, name, args)
}

// TestMemoryServerDataDir: the real server-memory, started from its own
// "#!/usr/bin/env node" script, with MEMORY_FILE_PATH=${data}/memory.jsonl
// keeps its entities across a restart of the plugin in a new host, and
// across an update; plugin remove deletes them.
func TestMemoryServerDataDir(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	extra := "env:\n  MEMORY_FILE_PATH: \"${data}/memory.jsonl\"\ndata_dir: true\n"
	pkg := memoryPackage(t, "1.0.0", extra)
	if _, err := e.mgr.Install(ctx, pkg, plugin.InstallOptions{Dev: true, Grant: devGrant(t, pkg)}); err != nil {
		t.Fatalf("install: %v", err)
	}
	p, err := e.host.Load(ctx, "local.test.memory")
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	out, isErr := memoryCall(ctx, t, p, "create_entities", map[string]any{"entities": []map[string]any{
		{"name": "norma", "entityType": "project", "observations": []string{"confines plugins"}}}})
	if isErr {
		t.Fatalf("create_entities: %s (stderr %s)", out, p.Stderr())
	}
	data := e.mgr.DataDir("local.test.memory")
	if b, err := os.ReadFile(filepath.Join(data, "memory.jsonl")); err != nil || !strings.Contains(string(b), "confines plugins") {
		t.Fatalf("memory.jsonl on the host: %q %v", b, err)
	}
	p.Close()

	readGraph := func(h *Host) string {
		t.Helper()
		p, err := h.Load(ctx, "local.test.memory")
		if err != nil {
			t.Fatalf("load: %v", err)
		}
		defer p.Close()
		out, isErr := memoryCall(ctx, t, p, "read_graph", map[string]any{})
		if isErr {
			t.Fatalf("read_graph: %s", out)
		}
		return out
	}
	h2, err := New(e.host.cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer h2.Close()
	if out := readGraph(h2); !strings.Contains(out, "confines plugins") {
		t.Fatalf("after a restart read_graph = %s", out)
	}
	// An update keeps the data directory.
	pkg2 := memoryPackage(t, "1.0.1", extra)
	if res, err := e.mgr.Update(ctx, pkg2, plugin.InstallOptions{Dev: true, Grant: devGrant(t, pkg2)}); err != nil || res.Held {
		t.Fatalf("update: %+v %v", res, err)
	}
	if out := readGraph(h2); !strings.Contains(out, "confines plugins") {
		t.Fatalf("after an update read_graph = %s", out)
	}
	h2.Close()
	if err := e.mgr.Remove(ctx, "local.test.memory"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(data); err == nil {
		t.Error("plugin remove kept the data directory")
	}
}

// TestMemoryServerWithoutDataDir: without data_dir, server-memory's
// default store inside the package is read-only (EROFS), and the package
// directory is unchanged.
func TestMemoryServerWithoutDataDir(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	pkg := memoryPackage(t, "1.0.0", "")
	if _, err := e.mgr.Install(ctx, pkg, plugin.InstallOptions{Dev: true, Grant: devGrant(t, pkg)}); err != nil {
		t.Fatalf("install: %v", err)
	}
	st, _ := e.mgr.Info("local.test.memory")
	dir := e.mgr.Dir("local.test.memory", st.Active)
	before := treetest.Snapshot(t, dir)
	p, err := e.host.Load(ctx, "local.test.memory")
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	out, isErr := memoryCall(ctx, t, p, "create_entities", map[string]any{"entities": []map[string]any{
		{"name": "norma", "entityType": "project", "observations": []string{"x"}}}})
	if !isErr || !strings.Contains(out, "EROFS") {
		t.Fatalf("create_entities without a data dir = %s (error %v), want EROFS", out, isErr)
	}
	p.Close()
	treetest.Equal(t, dir, before)
	if _, err := os.Lstat(e.mgr.DataDir("local.test.memory")); err == nil {
		t.Error("a data directory was created without data_dir")
	}
}

// TestDataDirIsolation: a plugin's data directory is its own. Another
// plugin, with a data directory of its own, cannot read it or list it, nor
// read or list anything else of the state directory (the grants, the
// pins, the plugin states, norma.db, plugins/ — the sandbox's skeleton
// directories that hold its binds cannot be listed), and it can write
// nowhere in it but its own data directory. The state directory lies
// under /tmp (as in tests; the sandbox has a private /tmp there) and
// outside it (as in real use).
func TestDataDirIsolation(t *testing.T) {
	homes := map[string]string{"under /tmp": t.TempDir()}
	if d, err := os.MkdirTemp("/var/tmp", "norma-home-"); err == nil {
		t.Cleanup(func() { os.RemoveAll(d) })
		homes["outside /tmp"] = d
	} else if os.Getenv("NORMA_REQUIRE_SANDBOX") == "1" {
		t.Fatalf("a state directory outside /tmp: %v", err)
	}
	for name, home := range homes {
		t.Run(name, func(t *testing.T) { dataDirIsolation(t, newEnvAt(t, home, t.TempDir()), "") })
	}
}

// dataDirIsolation runs the attacks of TestDataDirIsolation in e, with
// plugin b granted the extra permission lines perms.
func dataDirIsolation(t *testing.T, e *env, perms string) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	os.WriteFile(filepath.Join(e.home, "norma.db"), []byte("db "+canaryToken), 0o600)
	installPy(t, e, "#!/usr/bin/env python3", pyManifest("local.test.a", "data_dir: true\n", ""), nil)
	installPy(t, e, "#!/usr/bin/env python3", pyManifest("local.test.b", "data_dir: true\n", perms), nil)
	a, err := e.host.Load(ctx, "local.test.a")
	if err != nil {
		t.Fatal(err)
	}
	b, err := e.host.Load(ctx, "local.test.b")
	if err != nil {
		t.Fatal(err)
	}
	aData, bData := e.mgr.DataDir("local.test.a"), e.mgr.DataDir("local.test.b")
	if out, isErr := pyCall(ctx, t, a, "write", map[string]string{"path": filepath.Join(aData, "notes"), "content": "a's " + canaryToken}); isErr {
		t.Fatalf("control: a cannot write its data dir: %s", out)
	}
	if out, isErr := pyCall(ctx, t, b, "write", map[string]string{"path": filepath.Join(bData, "ok"), "content": "b"}); isErr {
		t.Fatalf("control: b cannot write its data dir: %s", out)
	}
	plugins := filepath.Join(e.home, "plugins")
	before := treetest.Snapshot(t, e.home)
	for _, path := range []string{
		filepath.Join(aData, "notes"), filepath.Join(e.home, "norma.db"),
		filepath.Join(plugins, "local.test.a", "grant.yaml"), filepath.Join(plugins, "local.test.b", "grant.yaml"),
		filepath.Join(plugins, "local.test.b", "state.json"), filepath.Join(plugins, "local.test.b", "tools.pin.json"),
		filepath.Join(e.home, "broker", "ca.key"),
	} {
		if out, isErr := pyCall(ctx, t, b, "read", map[string]string{"path": path}); !isErr || strings.Contains(out, canaryToken) {
			t.Errorf("b read %s: %q", path, out)
		}
	}
	for _, dir := range []string{aData, filepath.Join(plugins, "local.test.a"), e.home, plugins, filepath.Join(plugins, "local.test.b"), filepath.Join(e.home, "broker")} {
		if out, isErr := pyCall(ctx, t, b, "listdir", map[string]string{"path": dir}); !isErr {
			t.Errorf("b listed %s: %s", dir, out)
		}
	}
	// Its own data directory it may list (the control).
	if out, isErr := pyCall(ctx, t, b, "listdir", map[string]string{"path": bData}); isErr || out != `["ok"]` {
		t.Errorf("control: b lists its data dir as %s", out)
	}
	for _, path := range []string{filepath.Join(plugins, "local.test.b", "x"), filepath.Join(aData, "x"), filepath.Join(e.home, "x"), filepath.Join(plugins, "x")} {
		if out, isErr := pyCall(ctx, t, b, "write", map[string]string{"path": path, "content": "b"}); !isErr {
			t.Errorf("b wrote %s: %s", path, out)
		}
	}
	treetest.Equal(t, e.home, before)
}

// TestDataDirStateInWorkspace: the state directory inside the workspace
// (WS/.local/state/norma, the layout of a run in the home directory), and
// plugin b granted to read WS/.local, which holds it, and write WS/out. The
// state directory is hidden from b by identity, except exactly its own
// binds — its package, its data directory and the broker CA — which it
// still reaches; the attacks of TestDataDirIsolation all fail.
func TestDataDirStateInWorkspace(t *testing.T) {
	ws := t.TempDir()
	home := filepath.Join(ws, ".local", "state", "norma")
	os.MkdirAll(home, 0o700)
	os.MkdirAll(filepath.Join(ws, "out"), 0o755)
	os.MkdirAll(filepath.Join(ws, ".local", "share"), 0o755)
	os.WriteFile(filepath.Join(ws, ".local", "share", "readme.md"), []byte("workspace file"), 0o644)
	e := newEnvAt(t, home, ws)
	dataDirIsolation(t, e, "  filesystem:\n    read: [\"workspace://.local/**\"]\n    write: [\"workspace://out/**\"]\n")
	b, err := e.host.Load(t.Context(), "local.test.b")
	if err != nil {
		t.Fatal(err)
	}
	if out, isErr := pyCall(t.Context(), t, b, "read", map[string]string{"path": filepath.Join(ws, ".local", "share", "readme.md")}); isErr || out != "workspace file" {
		t.Errorf("control: b cannot read the granted workspace: %s", out)
	}
	if out, isErr := pyCall(t.Context(), t, b, "write", map[string]string{"path": filepath.Join(ws, "out", "x"), "content": "x"}); isErr {
		t.Errorf("control: b cannot write workspace://out: %s", out)
	}
}
