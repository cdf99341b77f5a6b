package mcpadd

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/norma-run/norma/manifest"
)

func requireNode(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("npm"); err != nil {
		if os.Getenv("NORMA_REQUIRE_SANDBOX") == "1" {
			t.Fatal("npm is required")
		}
		t.Skip("no npm")
	}
}

func mustBuild(t *testing.T, o Options) (*Package, *manifest.Manifest) {
	t.Helper()
	if o.Timeout == 0 {
		o.Timeout = time.Minute
	}
	p, err := Build(t.Context(), o)
	if err != nil {
		t.Fatalf("Build(%v): %v", o.Argv, err)
	}
	t.Cleanup(p.Cleanup)
	m, err := manifest.ParseFile(filepath.Join(p.Dir, "manifest.yaml"))
	if err != nil {
		t.Fatalf("manifest: %v\n%s", err, p.Manifest)
	}
	return p, m
}

// TestBuildNPM installs server-memory with npm, takes its bin target as the
// entrypoint, pins version and integrity, and proposes effects from its
// annotations.
func TestBuildNPM(t *testing.T) {
	requireNode(t)
	ws := t.TempDir()
	p, m := mustBuild(t, Options{Name: "memory", Workspace: ws,
		Argv: []string{"npx", "-y", "@modelcontextprotocol/server-memory@2026.8.31", ws},
		Env:  map[string]string{"MEMORY_FILE_PATH": "${data}/memory.jsonl"}})
	if m.ID != "local.mcp.memory" || m.Version != "2026.8.31" || m.Entrypoint != "node_modules/@modelcontextprotocol/server-memory/dist/index.js" {
		t.Errorf("id %s version %s entrypoint %s", m.ID, m.Version, m.Entrypoint)
	}
	if !m.DataDir || m.Env["MEMORY_FILE_PATH"] != "${data}/memory.jsonl" || m.Env["XDG_DATA_HOME"] != "${data}/share" || len(m.Args) != 1 || m.Args[0] != "${workspace}" {
		t.Errorf("launch: data_dir %v env %v args %v", m.DataDir, m.Env, m.Args)
	}
	if fs := m.Permissions.Filesystem; fs == nil || len(fs.Read) != 1 || fs.Read[0] != "workspace://**" || len(fs.Write) != 1 || !slices.Contains(fs.Deny, "workspace://**/.env") {
		t.Errorf("filesystem requested: %+v", m.Permissions.Filesystem)
	}
	lock, _ := os.ReadFile(filepath.Join(p.Dir, "package-lock.json"))
	src, err := ReadSource(p.Dir)
	if err != nil || src.Kind != KindNPM || src.Version != "2026.8.31" || !strings.HasPrefix(src.Integrity, "sha512-") || !strings.Contains(string(lock), src.Integrity) {
		t.Errorf("source %+v, %v", src, err)
	}
	if _, err := os.Lstat(filepath.Join(p.Dir, "node_modules", ".bin")); err == nil {
		t.Error("node_modules/.bin is still in the package")
	}
	effects := map[string]string{}
	for _, tl := range m.Tools {
		effects[tl.Name] = tl.Effects.Data + "/" + tl.Effects.ExternalState + "/" + tl.Approval
	}
	if effects["read_graph"] != "read/none/never" || effects["delete_entities"] != "read/write/per_action" || effects["create_entities"] != "read/write/per_action" {
		t.Errorf("effects %v", effects)
	}
}

// TestBuildPython installs a wheel with pip (no index: a local wheel) into
// lib/, writes a launcher for its console script, and probes it.
func TestBuildPython(t *testing.T) {
	if _, err := os.Stat(SystemPython); err != nil {
		t.Skip("no " + SystemPython)
	}
	wheels := t.TempDir()
	writeWheel(t, wheels)
	t.Setenv("PIP_NO_INDEX", "1")
	t.Setenv("PIP_FIND_LINKS", wheels)
	t.Setenv("PATH", "/usr/bin:/bin") // pip, not a uv of the developer's
	// python3 -m MODULE installs the distribution of that name and runs the module.
	if _, m := mustBuild(t, Options{Name: "pymod", Argv: []string{"python3", "-m", "normatest_echo"}}); m.Entrypoint != "bin/pymod" || m.Tools[0].Name != "echo" {
		t.Errorf("python3 -m: entrypoint %s tools %v", m.Entrypoint, m.Tools)
	}
	p, m := mustBuild(t, Options{Name: "pyecho", Argv: []string{"uvx", "normatest-echo==0.1.0", "--flag"}})
	if m.Version != "0.1.0" || m.Entrypoint != "bin/pyecho" || len(m.Tools) != 1 || m.Tools[0].Name != "echo" || m.Tools[0].Approval != "never" {
		t.Errorf("manifest:\n%s", p.Manifest)
	}
	launcher, _ := os.ReadFile(filepath.Join(p.Dir, "bin", "pyecho"))
	if !strings.HasPrefix(string(launcher), "#!/usr/bin/python3\n") || !strings.Contains(string(launcher), `"normatest_echo"`) {
		t.Errorf("launcher:\n%s", launcher)
	}
	b, _ := os.ReadFile(filepath.Join(p.Dir, SourceFile))
	var src Source
	json.Unmarshal(b, &src)
	if src.Kind != KindPython || src.Package != "normatest-echo" || src.Installer != "pip" || !strings.HasPrefix(src.Integrity, "record-sha256:") {
		t.Errorf("source %s", b)
	}
}

// TestBuildBinaryRelative: a program given by a relative path is found
// from the current directory (not in PATH) and copied into the package.
func TestBuildBinaryRelative(t *testing.T) {
	dir := t.TempDir()
	b, _ := os.ReadFile("testdata/echo_server.py")
	os.WriteFile(filepath.Join(dir, "echo-server"), b, 0o755)
	t.Chdir(dir)
	p, m := mustBuild(t, Options{Name: "echo", Argv: []string{"./echo-server", "x"}})
	if m.Entrypoint != "bin/echo" || m.DataDir || len(m.Args) != 1 || m.Args[0] != "x" {
		t.Errorf("manifest:\n%s", p.Manifest)
	}
	if got, _ := os.ReadFile(filepath.Join(p.Dir, "bin", "echo")); string(got) != string(b) {
		t.Error("bin/echo is not a copy of the program")
	}
}

// TestBuildRefusesCredentialEnv: a credential-looking --env without
// --secret is refused before anything is installed.
func TestBuildRefusesCredentialEnv(t *testing.T) {
	for _, k := range []string{"GITHUB_TOKEN", "API_KEY", "OPENAI_APIKEY", "DB_PASSWORD", "CLIENT_SECRET", "AUTH_HEADER", "X_PASS"} {
		_, err := Build(t.Context(), Options{Name: "x", Argv: []string{"/bin/true"}, Env: map[string]string{k: "v"}})
		if err == nil || !strings.Contains(err.Error(), "--secret "+k+"=") {
			t.Errorf("%s: %v", k, err)
		}
	}
	for _, k := range []string{"MEMORY_FILE_PATH", "DEBUG", "KEYBOARD_LAYOUT", "MONKEY_BUSINESS_X"} {
		if LooksLikeCredential(k) && k != "MONKEY_BUSINESS_X" {
			t.Errorf("%s looks like a credential", k)
		}
	}
}

// TestBuildNodeFile: node FILE copies FILE's directory and starts it
// through a generated launcher.
func TestBuildNodeFile(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("no node")
	}
	dir := t.TempDir()
	b, _ := os.ReadFile("testdata/echo_server.js")
	os.WriteFile(filepath.Join(dir, "server.js"), b, 0o644)
	os.MkdirAll(filepath.Join(dir, "node_modules", ".bin"), 0o755)
	os.Symlink("../x", filepath.Join(dir, "node_modules", ".bin", "x"))
	p, m := mustBuild(t, Options{Name: "jsecho", Argv: []string{"node", filepath.Join(dir, "server.js"), "a"}})
	if m.Entrypoint != "bin/jsecho" || len(m.Tools) != 1 || m.Tools[0].Name != "echo_js" || len(m.Args) != 1 {
		t.Errorf("manifest:\n%s", p.Manifest)
	}
	if got, _ := os.ReadFile(filepath.Join(p.Dir, "app", "server.js")); string(got) != string(b) {
		t.Error("app/server.js is not a copy")
	}
	if _, err := os.Lstat(filepath.Join(p.Dir, "app", "node_modules", ".bin")); err == nil {
		t.Error("the .bin links were copied")
	}
}

// TestBuildProbeSeesNothingOfTheUser: the probe runs the unreviewed server
// with its package only. It tries to read a file of the workspace and one
// of the current directory by their host paths at start: it sees neither.
func TestBuildProbeSeesNothingOfTheUser(t *testing.T) {
	const canary = "CANARY-probe-4b7e"
	ws, cwd := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(ws, "secret.txt"), []byte(canary), 0o644)
	os.WriteFile(filepath.Join(cwd, "secret.txt"), []byte(canary), 0o644)
	b, _ := os.ReadFile("testdata/echo_server.py")
	os.WriteFile(filepath.Join(cwd, "echo-server"), b, 0o755)
	t.Chdir(cwd)
	for _, file := range []string{filepath.Join(ws, "secret.txt"), filepath.Join(cwd, "secret.txt")} {
		p, m := mustBuild(t, Options{Name: "probe", Workspace: ws, Argv: []string{"./echo-server", ws}, Env: map[string]string{"ECHO_PROBE_FILE": file}})
		if strings.Contains(string(p.Manifest), canary) || !strings.Contains(m.Tools[0].Description, "blind:") {
			t.Errorf("the probe read %s: %s", file, m.Tools[0].Description)
		}
	}
	// Control: a file of the package itself is readable.
	p, m := mustBuild(t, Options{Name: "probe", Argv: []string{"./echo-server"}, Env: map[string]string{"ECHO_PROBE_FILE": "${package}/norma-source.json"}})
	if !strings.Contains(m.Tools[0].Description, "saw: {") {
		t.Errorf("control: %s\n%s", m.Tools[0].Description, p.Manifest)
	}
}

// TestChmodInsideRefusesLinkOut: a bin target reached through a linked
// directory (what npm makes of a file: dependency) that leaves the
// package is not made executable: the host file keeps its mode.
func TestChmodInsideRefusesLinkOut(t *testing.T) {
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "x.js"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "node_modules"), 0o755)
	if err := os.Symlink(outside, filepath.Join(dir, "node_modules", "foo")); err != nil {
		t.Fatal(err)
	}
	if err := chmodInside(dir, "node_modules/foo/x.js"); err == nil {
		t.Error("chmodInside followed a link out of the package")
	}
	if fi, _ := os.Stat(filepath.Join(outside, "x.js")); fi.Mode().Perm() != 0o600 {
		t.Errorf("the outside file's mode is %v", fi.Mode())
	}
}

// TestTemplateArgsRelative: "." and "./REL", as a project's .mcp.json
// writes them, are the workspace and a path in it; "../x", a bare name
// and a path outside are left as they are.
func TestTemplateArgsRelative(t *testing.T) {
	ws := t.TempDir()
	out, fs := templateArgs([]string{".", "./data", "--flag", "../x", "data", "./../../etc", ws + "/sub"}, ws)
	want := []string{"${workspace}", "${workspace}/data", "--flag", "../x", "data", "./../../etc", "${workspace}/sub"}
	if !slices.Equal(out, want) {
		t.Errorf("args = %q, want %q", out, want)
	}
	if fs == nil || !slices.Equal(fs.Read, []string{"workspace://**", "workspace://data/**", "workspace://sub/**"}) {
		t.Errorf("globs = %+v", fs)
	}
}
