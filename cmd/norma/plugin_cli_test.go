package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/norma-run/norma/sandbox/sandboxtest"
)

// The plugin host re-executes this test binary as the sandbox init.
func TestMain(m *testing.M) { sandboxtest.Main(m) }

// TestPluginCLIToRun is what a user does with a plugin, through the CLI
// only: keygen, trust, sign, verify, install headless with a grant file,
// list, then `norma run` calling the plugin's tool through the gate, and
// remove. The tool answers only if the installed plugin was really loaded.
func TestPluginCLIToRun(t *testing.T) {
	sandboxtest.Require(t)
	home, work := t.TempDir(), t.TempDir()
	pkg := filepath.Join(work, "echo")
	os.MkdirAll(filepath.Join(pkg, "bin"), 0o755)
	build := exec.Command("go", "build", "-trimpath", "-o", filepath.Join(pkg, "bin", "echo"), "../../examples/plugins/echo")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
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
	code, out, errs := norma(t, "--home", home, "run", "--provider", "scripted", "--script", script, "--workspace", ws, "--json", "go")
	if code != 0 || !strings.Contains(out, `"tool":"mcp__com.example.echo__echo"`) || !strings.Contains(out, `"decision":"allow"`) {
		t.Fatalf("run: exit %d\n%s%s", code, out, errs)
	}
	if strings.Contains(out, `"is_error":true`) {
		t.Fatalf("the plugin call failed:\n%s%s", out, errs)
	}
	if code, out, errs := norma(t, "--home", home, "plugin", "remove", "com.example.echo"); code != 0 {
		t.Fatalf("remove: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs = norma(t, "--home", home, "run", "--provider", "scripted", "--script", script, "--workspace", ws, "--json", "go")
	if !strings.Contains(out, "TOOL_UNKNOWN") {
		t.Fatalf("after remove the tool must be unknown: exit %d\n%s%s", code, out, errs)
	}
}
