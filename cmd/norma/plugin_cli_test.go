package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/norma-run/norma/sandbox/sandboxtest"
)

// The plugin host re-executes this test binary as the sandbox init.
func TestMain(m *testing.M) { sandboxtest.Main(m) }

// buildEcho builds the example echo plugin's binary (static) at out.
func buildEcho(t *testing.T, out string) {
	t.Helper()
	build := exec.Command("go", "build", "-trimpath", "-o", out, "../../examples/plugins/echo")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, b)
	}
}

// TestPluginCLIToRun is what a user does with a plugin, through the CLI
// only: keygen, trust, sign, verify, install headless with a grant file,
// list, then `norma run` calling the plugin's tool through the gate, and
// remove. The tool answers only if the installed plugin was really loaded.
func TestPluginCLIToRun(t *testing.T) {
	sandboxtest.Require(t)
	home, work := t.TempDir(), t.TempDir()
	pkg := filepath.Join(work, "echo")
	os.MkdirAll(filepath.Join(pkg, "bin"), 0o755)
	buildEcho(t, filepath.Join(pkg, "bin", "echo"))
	data, _ := os.ReadFile("../../examples/plugins/echo/manifest.yaml")
	os.WriteFile(filepath.Join(pkg, "manifest.yaml"), data, 0o644)
	grant := filepath.Join(work, "grant.yaml")
	os.WriteFile(grant, []byte("schema_version: 2\nkind: grant\npermissions: {}\n"), 0o644)
	script := filepath.Join(work, "script.yaml")
	os.WriteFile(script, []byte("turns:\n  - tool_calls:\n      - {id: t1, name: mcp__com.example.echo__echo, input: {text: from-the-plugin}}\n  - text: done\n"), 0o644)
	ws := t.TempDir()
	key := filepath.Join(work, "dev")

	steps := [][]string{
		{"plugin", "keygen", "--out", key},
		{"--home", home, "plugin", "trust", "add", key + ".pub", "--publisher", "Example", "--prefix", "com.example"},
		{"plugin", "sign", pkg, "--key", key + ".key"},
		{"--home", home, "plugin", "verify", pkg},
		{"--home", home, "plugin", "install", pkg, "--yes", "--grant", grant},
		{"--home", home, "plugin", "list"},
	}
	for _, args := range steps {
		if code, out, errs := norma(t, args...); code != 0 {
			t.Fatalf("norma %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errs)
		}
	}
	// Explaining the plugin's tool decides as the run will, and starts
	// nothing: no tool pin is written, no vault key created.
	pin := filepath.Join(home, "plugins", "com.example.echo", "tools.pin.json")
	code, out, errs := norma(t, "--home", home, "policy", "explain", "--workspace", ws, "--tool", "mcp__com.example.echo__echo", "--input", `{"text":"x"}`, "--json")
	var ex struct{ Decision, Reason string }
	if code != 0 || json.Unmarshal([]byte(out), &ex) != nil || ex.Decision != "allow" {
		t.Fatalf("explain: exit %d\n%s%s", code, out, errs)
	}
	for _, p := range []string{pin, filepath.Join(home, "secrets")} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("explain wrote %s: it must start nothing and write nothing", p)
		}
	}
	code, out, errs = norma(t, "--home", home, "run", "--provider", "scripted", "--script", script, "--workspace", ws, "--json", "go")
	if code != 0 || !strings.Contains(out, `"tool":"mcp__com.example.echo__echo"`) || !strings.Contains(out, `"decision":"allow"`) {
		t.Fatalf("run: exit %d\n%s%s", code, out, errs)
	}
	if strings.Contains(out, `"is_error":true`) {
		t.Fatalf("the plugin call failed:\n%s%s", out, errs)
	}
	// The text output names the plugin's tool once (its target is the
	// tool's name) and shows what the tool returned.
	code, out, errs = door(t, "--home", home, "run", "--provider", "scripted", "--script", script, "--workspace", ws, "go")
	var line string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "mcp__com.example.echo__echo") {
			line = l
		}
	}
	if code != 0 || strings.Count(line, "mcp__com.example.echo__echo") != 1 || !strings.Contains(line, "→ allow ALLOWED") ||
		!strings.Contains(out, "⎿ ") || !strings.Contains(out, "from-the-plugin") {
		t.Errorf("text run: exit %d, call line %q\n%s%s", code, line, out, errs)
	}
	if code, out, errs := norma(t, "--home", home, "plugin", "remove", "com.example.echo"); code != 0 {
		t.Fatalf("remove: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs = norma(t, "--home", home, "run", "--provider", "scripted", "--script", script, "--workspace", ws, "--json", "go")
	if !strings.Contains(out, "TOOL_UNKNOWN") {
		t.Fatalf("after remove the tool must be unknown: exit %d\n%s%s", code, out, errs)
	}
}

const echoTool = "  - name: echo\n    risk: read\n    approval: never\n"

// echoManifest is the echo plugin's manifest at version v with the echo
// tool, the extra tools and the permission lines perms.
func echoManifest(v, extraTools, perms string) string {
	return "schema_version: 2\nid: com.example.echo\nversion: " + v + "\ndescription: Returns its input.\nentrypoint: bin/echo\n" +
		"tools:\n" + echoTool + extraTools + "permissions:\n" + perms
}

// echoPkg writes a package directory with manifest text and the
// entrypoint bin (a built echo plugin, or a stand-in script when empty),
// signed with key unless key is empty.
func echoPkg(t *testing.T, text, bin, key string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "echo")
	os.MkdirAll(filepath.Join(dir, "bin"), 0o755)
	body := []byte("#!/bin/sh\nexit 0\n")
	if bin != "" {
		var err error
		if body, err = os.ReadFile(bin); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(dir, "bin", "echo"), body, 0o755)
	os.WriteFile(filepath.Join(dir, "manifest.yaml"), []byte(text), 0o644)
	if key != "" {
		if code, out, errs := norma(t, "plugin", "sign", dir, "--key", key+".key"); code != 0 {
			t.Fatalf("sign: exit %d\n%s%s", code, out, errs)
		}
	}
	return dir
}

func mustNorma(t *testing.T, args ...string) string {
	t.Helper()
	code, out, errs := norma(t, args...)
	if code != 0 {
		t.Fatalf("norma %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errs)
	}
	return out
}

// TestPluginUpdateCLI: through the CLI, an update that `manifest diff`
// calls a widening exits 3 and is shown as held by `plugin list` and
// `plugin info`; a narrowing update applies with exit 0.
func TestPluginUpdateCLI(t *testing.T) {
	home, work := t.TempDir(), t.TempDir()
	key := filepath.Join(work, "dev")
	mustNorma(t, "plugin", "keygen", "--out", key)
	mustNorma(t, "--home", home, "plugin", "trust", "add", key+".pub", "--publisher", "Example", "--prefix", "com.example")
	grant := filepath.Join(work, "grant.yaml")
	os.WriteFile(grant, []byte("schema_version: 2\nkind: grant\npermissions:\n  filesystem: {read: [workspace://docs/**]}\n"), 0o644)
	v1 := echoPkg(t, echoManifest("1.0.0", "", "  filesystem: {read: [workspace://docs/**]}\n"), "", key)
	mustNorma(t, "--home", home, "plugin", "install", v1, "--yes", "--grant", grant)

	// Widening: a new tool that writes externally without approval.
	wide := echoManifest("1.1.0", "  - name: post\n    risk: external_write\n    approval: never\n", "  filesystem: {read: [workspace://docs/**]}\n")
	v11 := echoPkg(t, wide, "", key)
	if code, out, _ := norma(t, "manifest", "diff", filepath.Join(v1, "manifest.yaml"), filepath.Join(v11, "manifest.yaml")); code != 3 {
		t.Fatalf("manifest diff of the widening: exit %d, want 3\n%s", code, out)
	}
	code, out, errs := norma(t, "--home", home, "plugin", "update", v11)
	if code != 3 || !strings.Contains(out, "HELD") || !strings.Contains(out, "+ tool post (data send, external_state write, approval never)") {
		t.Fatalf("update (widening): exit %d, want 3 and the held tool\n%s%s", code, out, errs)
	}
	if out := mustNorma(t, "--home", home, "plugin", "list"); !strings.Contains(out, "com.example.echo 1.0.0") || !strings.Contains(out, "update 1.1.0 held") {
		t.Errorf("list after a held update:\n%s", out)
	}
	out = mustNorma(t, "--home", home, "plugin", "info", "com.example.echo")
	for _, want := range []string{"com.example.echo 1.0.0", "held update 1.1.0", "+ tools tool post", "filesystem.read workspace://docs/**"} {
		if !strings.Contains(out, want) {
			t.Errorf("info after a held update lacks %q:\n%s", want, out)
		}
	}
	var info struct {
		State      struct{ Active, Held string }
		GrantError string
		Pending    map[string][]string
	}
	if err := json.Unmarshal([]byte(mustNorma(t, "--home", home, "plugin", "info", "--json", "com.example.echo")), &info); err != nil ||
		info.State.Active != "1.0.0" || info.State.Held != "1.1.0" || info.GrantError != "" || len(info.Pending["tools"]) != 1 {
		t.Errorf("info --json after a held update: %+v %v", info, err)
	}

	// Narrowing: no file reads any more. Applies at once; the held update goes.
	v12 := echoPkg(t, echoManifest("1.2.0", "", "  {}\n"), "", key)
	if code, out, _ := norma(t, "manifest", "diff", filepath.Join(v1, "manifest.yaml"), filepath.Join(v12, "manifest.yaml")); code != 0 {
		t.Fatalf("manifest diff of the narrowing: exit %d, want 0\n%s", code, out)
	}
	if code, out, errs := norma(t, "--home", home, "plugin", "update", v12); code != 0 || !strings.Contains(out, "updated com.example.echo 1.2.0") {
		t.Fatalf("update (narrowing): exit %d, want 0\n%s%s", code, out, errs)
	}
	if out := mustNorma(t, "--home", home, "plugin", "list"); !strings.Contains(out, "com.example.echo 1.2.0") || strings.Contains(out, "held") {
		t.Errorf("list after a narrowing update:\n%s", out)
	}
	if out := mustNorma(t, "--home", home, "plugin", "info", "com.example.echo"); strings.Contains(out, "filesystem.read") || strings.Contains(out, "grant: plugin") {
		t.Errorf("grant after a narrowing update still reads, or is broken:\n%s", out)
	}
}

// TestPluginDevSameVersionCLI: a --dev update with the installed version
// and one more write permission is refused, and the plugin keeps working:
// `plugin info` shows its grant, `plugin consent` finds nothing held (not
// PLUGIN_GRANT_MISMATCH) and `norma run` calls its tool.
func TestPluginDevSameVersionCLI(t *testing.T) {
	sandboxtest.Require(t)
	home, work, ws := t.TempDir(), t.TempDir(), t.TempDir()
	bin := filepath.Join(work, "echo-bin")
	buildEcho(t, bin)
	grant := filepath.Join(work, "grant.yaml")
	os.WriteFile(grant, []byte("schema_version: 2\nkind: grant\npermissions: {}\n"), 0o644)
	mustNorma(t, "--home", home, "plugin", "install", "--dev", echoPkg(t, echoManifest("1.0.0", "", "  {}\n"), bin, ""), "--yes", "--grant", grant)

	more := echoPkg(t, echoManifest("1.0.0", "", "  filesystem: {write: [workspace://out/**]}\n"), bin, "")
	code, out, errs := norma(t, "--home", home, "plugin", "update", "--dev", more)
	if code != 1 || !strings.Contains(errs, "PLUGIN_ROLLBACK") || !strings.Contains(errs, "1.0.0 is already installed with other contents") {
		t.Fatalf("same-version --dev update: exit %d, want 1 and a clear refusal\n%s%s", code, out, errs)
	}
	out = mustNorma(t, "--home", home, "plugin", "info", "com.example.echo")
	if strings.Contains(out, "MISMATCH") || strings.Contains(out, "held") || !strings.Contains(out, "grant (generation 1") {
		t.Errorf("info after the refused update:\n%s", out)
	}
	if _, out, errs := norma(t, "--home", home, "plugin", "consent", "com.example.echo"); strings.Contains(out+errs, "PLUGIN_GRANT_MISMATCH") || !strings.Contains(errs, "no held update") {
		t.Errorf("consent after the refused update:\n%s%s", out, errs)
	}
	script := filepath.Join(work, "script.yaml")
	os.WriteFile(script, []byte("turns:\n  - tool_calls:\n      - {id: t1, name: mcp__com.example.echo__echo, input: {text: still-works}}\n  - text: done\n"), 0o644)
	code, out, errs = norma(t, "--home", home, "run", "--provider", "scripted", "--script", script, "--workspace", ws, "--json", "go")
	if code != 0 || !strings.Contains(out, `"decision":"allow"`) || strings.Contains(out, `"is_error":true`) || strings.Contains(out+errs, "MISMATCH") {
		t.Fatalf("run after the refused update: exit %d\n%s%s", code, out, errs)
	}
}
