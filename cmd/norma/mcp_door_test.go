package main

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/norma-run/norma/secret"
)

// mcpServerVersion is the version of the four npm servers the tests add.
const mcpServerVersion = "2026.8.31"

// requireNPM skips without npm (fails under NORMA_REQUIRE_SANDBOX=1, as CI
// has npm and the registry).
func requireNPM(t *testing.T) {
	t.Helper()
	for _, p := range []string{"npm", "node"} {
		if _, err := exec.LookPath(p); err != nil {
			if os.Getenv("NORMA_REQUIRE_SANDBOX") == "1" {
				t.Fatalf("%s is required", p)
			}
			t.Skipf("no %s", p)
		}
	}
}

// mcp runs `norma --home HOME mcp ARGS` through the door with env added.
func (e runEnv) mcp(t *testing.T, env []string, args ...string) (int, string, string) {
	t.Helper()
	return doorEnv(t, env, append([]string{"--home", e.home, "mcp"}, args...)...)
}

// doorRun runs `norma run` through the door with the scripted provider.
func (e runEnv) doorRun(t *testing.T, script string, args ...string) (int, []map[string]any, string) {
	t.Helper()
	argv := append([]string{"--home", e.home, "run", "--workspace", e.ws, "--provider", "scripted", "--script", e.script(t, script), "--json"}, args...)
	code, out, stderr := door(t, append(argv, "go")...)
	return code, jsonLines(t, out), stderr
}

func grantFile(t *testing.T, perms string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "grant.yaml")
	if err := os.WriteFile(p, []byte("schema_version: 2\nkind: grant\npermissions:\n"+perms), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// addNPM adds @modelcontextprotocol/server-PKG as name through the door.
func (e runEnv) addNPM(t *testing.T, name, pkg, grant string, extra []string, args ...string) map[string]any {
	t.Helper()
	argv := append([]string{"add", name, "--workspace", e.ws, "--grant", grantFile(t, grant), "--yes", "--json"}, extra...)
	argv = append(argv, "--", "npx", "-y", "@modelcontextprotocol/server-"+pkg+"@"+mcpServerVersion)
	code, out, stderr := e.mcp(t, nil, append(argv, args...)...)
	if code != 0 {
		t.Fatalf("mcp add %s: exit %d\n%s\n%s", name, code, out, stderr)
	}
	var res map[string]any
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("mcp add --json: %v\n%s", err, out)
	}
	return res
}

// filesContaining lists the files under roots whose bytes contain s (but
// the workspace's .env, where runEnv puts the canary).
func filesContaining(t *testing.T, s string, roots ...string) []string {
	t.Helper()
	var hits []string
	for _, root := range roots {
		filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() && d.Name() != ".env" {
				if b, err := os.ReadFile(p); err == nil && bytes.Contains(b, []byte(s)) {
					hits = append(hits, p)
				}
			}
			return nil
		})
	}
	return hits
}

// TestMCPAddGetListRemoveDoor adds server-memory with npx as a user types
// it, with a secret whose canary value comes from the environment: the
// pin, launch line and tools are shown by get and list; the canary is in
// the vault and in no file and no output; remove takes the plugin, its
// data directory and the secret.
func TestMCPAddGetListRemoveDoor(t *testing.T) {
	requireNPM(t)
	e := newRunEnv(t)
	env := []string{"MEMORY_API_TOKEN=" + runCanary}
	argv := []string{"add", "memory", "--workspace", e.ws, "--env", "MEMORY_FILE_PATH=${data}/memory.jsonl",
		"--secret", "MEMORY_API_TOKEN=https://api.example.com", "--grant", grantFile(t, "  secrets:\n    - {name: mcp_memory_memory_api_token, purpose: \"https://api.example.com\", inject_as: brokered_header, env: MEMORY_API_TOKEN}\n"), "--yes", "--json",
		"--", "npx", "-y", "@modelcontextprotocol/server-memory@" + mcpServerVersion}
	code, out, stderr := e.mcp(t, env, argv...)
	if code != 0 {
		t.Fatalf("mcp add: exit %d\n%s\n%s", code, out, stderr)
	}
	var added struct {
		ID, Version string
		Source      struct{ Kind, Package, Version, Integrity string }
		Tools       []string
	}
	json.Unmarshal([]byte(out), &added)
	if added.ID != "local.mcp.memory" || added.Version != mcpServerVersion || added.Source.Kind != "npm" || !strings.HasPrefix(added.Source.Integrity, "sha512-") {
		t.Errorf("mcp add --json = %s", out)
	}
	if !strings.Contains(strings.Join(added.Tools, " "), "mcp__memory__read_graph") {
		t.Errorf("tools %v", added.Tools)
	}

	code, out, _ = e.mcp(t, nil, "get", "memory", "--json")
	var got struct {
		Launch  string
		DataDir bool `json:"data_dir"`
		Source  struct{ Integrity, Version string }
		Tools   []struct {
			Name, Approval string
			Effects        struct{ Data, ExternalState string } `json:"effects"`
		}
		Grant map[string][]string
	}
	if err := json.Unmarshal([]byte(out), &got); code != 0 || err != nil {
		t.Fatalf("mcp get: %d %v\n%s", code, err, out)
	}
	if got.Source.Integrity != added.Source.Integrity || !got.DataDir || !strings.Contains(got.Launch, "MEMORY_FILE_PATH=${data}/memory.jsonl") ||
		!strings.Contains(got.Launch, "server-memory/dist/index.js") || strings.Contains(got.Launch, runCanary) {
		t.Errorf("mcp get = %s", out)
	}
	eff := map[string]string{}
	for _, tl := range got.Tools {
		eff[tl.Name] = tl.Effects.Data + "/" + tl.Approval
	}
	if eff["mcp__memory__read_graph"] != "read/never" || eff["mcp__memory__create_entities"] != "read/per_action" {
		t.Errorf("tool effects %v", eff)
	}
	if code, out, _ := e.mcp(t, nil, "get", "memory"); code != 0 || !strings.Contains(out, "sha512-") || !strings.Contains(out, "mcp__memory__read_graph") {
		t.Errorf("mcp get text: %d\n%s", code, out)
	}
	if code, out, _ := e.mcp(t, nil, "list"); code != 0 || !strings.Contains(out, "memory\tlocal.mcp.memory\t"+mcpServerVersion+"\tuser\tnpm @modelcontextprotocol/server-memory@"+mcpServerVersion) {
		t.Errorf("mcp list: %d\n%s", code, out)
	}

	// The canary: in the vault, in no file of the state dir or workspace.
	v, err := secret.OpenFileVault(t.Context(), filepath.Join(e.home, "secrets"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if val, err := v.Get(t.Context(), "mcp_memory_memory_api_token"); err != nil || string(val.Reveal()) != runCanary {
		t.Errorf("vault: %v", err)
	}
	if hits := filesContaining(t, runCanary, e.home, e.ws); len(hits) > 0 {
		t.Errorf("the canary is in clear in %v", hits)
	}

	data := filepath.Join(e.home, "plugins", "local.mcp.memory", "data")
	os.MkdirAll(data, 0o700)
	os.WriteFile(filepath.Join(data, "memory.jsonl"), []byte("{}\n"), 0o600)
	if code, out, stderr := e.mcp(t, nil, "remove", "memory"); code != 0 {
		t.Fatalf("mcp remove: %d %s %s", code, out, stderr)
	}
	if _, err := os.Stat(filepath.Join(e.home, "plugins", "local.mcp.memory")); err == nil {
		t.Error("the plugin directory (and its data) is still there")
	}
	if _, err := v.Get(t.Context(), "mcp_memory_memory_api_token"); err == nil {
		t.Error("the secret is still in the vault")
	}
	if code, out, _ := e.mcp(t, nil, "list"); code != 0 || strings.Contains(out, "memory") {
		t.Errorf("mcp list after remove: %s", out)
	}
}

// TestMCPAddRefusesCredentialEnv: a credential given as a plain --env is
// refused with how to pass it, before anything is installed; the canary
// is in no file and no output.
func TestMCPAddRefusesCredentialEnv(t *testing.T) {
	e := newRunEnv(t)
	code, out, stderr := e.mcp(t, nil, "add", "gh", "--env", "GITHUB_PERSONAL_ACCESS_TOKEN="+runCanary, "--", "npx", "-y", "@modelcontextprotocol/server-github")
	if code != exitUsage || !strings.Contains(stderr, "--secret GITHUB_PERSONAL_ACCESS_TOKEN=") {
		t.Fatalf("exit %d\n%s\n%s", code, out, stderr)
	}
	if _, err := os.Stat(filepath.Join(e.home, "plugins", "local.mcp.gh")); err == nil {
		t.Error("a plugin was installed")
	}
	if hits := filesContaining(t, runCanary, e.home, e.ws); len(hits) > 0 {
		t.Errorf("the canary is in %v", hits)
	}
	// A secret without a value anywhere is refused too.
	code, _, stderr = e.mcp(t, nil, "add", "gh", "--secret", "NO_SUCH_VAR_TOKEN=https://api.github.com", "--", "/bin/true")
	if code != exitUsage || !strings.Contains(stderr, "has no value") {
		t.Errorf("secret without value: exit %d %s", code, stderr)
	}
}

// echoServer copies the dependency-free python echo server into dir as
// NAME and returns its path.
func echoServer(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "door", "mcpadd", "testdata", "echo_server.py"))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestMCPAddRelativeProgramScopedDoor adds a program by a relative path
// (found from the current directory, not PATH) with --scope workspace: a
// run in that workspace calls its tool; a run in another workspace does
// not have it (TOOL_UNKNOWN) and the server is never started there.
func TestMCPAddRelativeProgramScopedDoor(t *testing.T) {
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("no /usr/bin/python3")
	}
	e := newRunEnv(t)
	src := t.TempDir()
	echoServer(t, src, "echo-server")
	cmd := exec.Command(normaBin(t), "--home", e.home, "mcp", "add", "echo", "--scope", "workspace", "--workspace", e.ws,
		"--grant", grantFile(t, "  {}\n"), "--yes", "--", "./echo-server")
	cmd.Dir = src
	if code, out, stderr := doorCmd(t, cmd); code != 0 {
		t.Fatalf("mcp add ./echo-server: exit %d\n%s\n%s", code, out, stderr)
	}
	if code, out, _ := e.mcp(t, nil, "list"); code != 0 || !strings.Contains(out, "echo\tlocal.mcp.echo\t0.1.0\tworkspace "+e.ws) {
		t.Errorf("mcp list:\n%s", out)
	}
	script := "turns:\n  - tool_calls:\n      - {id: c1, name: mcp__echo__echo, input: {text: hi}}\n  - text: done\n"
	code, events, stderr := e.doorRun(t, script, "--mode", "dontAsk")
	c := toolCalls(events)["c1"]
	if code != 0 || c["reason"] != "ALLOWED" || c["result"] != "echo: hi argv=" {
		t.Fatalf("run in the workspace: exit %d, call %v\n%s", code, c, stderr)
	}
	other := runEnv{home: e.home, ws: t.TempDir()}
	code, events, stderr = other.doorRun(t, script, "--mode", "dontAsk")
	if c := toolCalls(events)["c1"]; c["reason"] != "TOOL_UNKNOWN" {
		t.Errorf("run in another workspace: exit %d, call %v\n%s", code, c, stderr)
	}
}

// TestPluginWrapRelativeDoor: `plugin wrap ./server` finds the server
// from the current directory instead of saying it is not in PATH.
func TestPluginWrapRelativeDoor(t *testing.T) {
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("no /usr/bin/python3")
	}
	dir := t.TempDir()
	echoServer(t, dir, "echo-server")
	cmd := exec.Command(normaBin(t), "plugin", "wrap", "--", "./echo-server")
	cmd.Dir = dir
	code, out, stderr := doorCmd(t, cmd)
	if code != 0 || !strings.Contains(out, "name: echo") || !strings.Contains(out, "untrusted") {
		t.Fatalf("plugin wrap ./echo-server: exit %d\n%s\n%s", code, out, stderr)
	}
}

// TestMCPAddAsksConsentDoor: without --yes, add shows the install screen
// (the launch line, the untrusted-annotations note) and asks on the
// terminal before it registers the server.
func TestMCPAddAsksConsentDoor(t *testing.T) {
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("no /usr/bin/python3")
	}
	e := newRunEnv(t)
	echo := echoServer(t, t.TempDir(), "echo-server")
	cmd := exec.Command(normaBin(t), "--home", e.home, "mcp", "add", "echo", "--", echo, "--flag")
	var out, errb bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(strings.Repeat("y\n", 10)), &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("mcp add: %v\n%s\n%s", err, out.String(), errb.String())
	}
	for _, want := range []string{"the server's claims, untrusted", "Starts, inside the sandbox:\n  bin/echo --flag", "Grant? [y]es all", "added echo: local.mcp.echo 0.1.0"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	// No answer (a closed stdin) is no consent: nothing is registered.
	cmd = exec.Command(normaBin(t), "--home", e.home, "mcp", "add", "echo2", "--", echo)
	if code, _, _ := doorCmd(t, cmd); code == 0 {
		t.Error("add without an answer succeeded")
	}
	if code, _, _ := e.mcp(t, nil, "get", "echo2"); code == 0 {
		t.Error("echo2 was registered without consent")
	}
}

// TestDoorMCPGetShowsGrant: `norma mcp get NAME` prints every group of the
// grant, dotted ones (filesystem.read) too, as its --json does.
func TestDoorMCPGetShowsGrant(t *testing.T) {
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("no /usr/bin/python3")
	}
	e := newRunEnv(t)
	src := t.TempDir()
	echoServer(t, src, "echo-server")
	add := exec.Command(normaBin(t), "--home", e.home, "mcp", "add", "echo", "--workspace", e.ws,
		"--grant", grantFile(t, "  filesystem:\n    read: [\"workspace://docs/**\"]\n"), "--yes", "--", "./echo-server", e.ws)
	add.Dir = src
	if code, out, errs := doorCmd(t, add); code != 0 {
		t.Fatalf("mcp add: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs := door(t, "--home", e.home, "mcp", "get", "echo")
	if code != 0 || !strings.Contains(out, "  grant:\n    filesystem.read workspace://docs/**") {
		t.Errorf("mcp get: exit %d, without the filesystem.read grant\n%s%s", code, out, errs)
	}
}
