package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/norma-run/norma/sandbox/sandboxtest"
)

// pluginWorld is a state directory that trusts a fresh dev key, with the
// echo plugin built and a grant file: each test installs its own variant.
type pluginWorld struct {
	work, key, bin, grant string
}

func newPluginWorld(t *testing.T) pluginWorld {
	t.Helper()
	sandboxtest.Require(t)
	w := pluginWorld{work: t.TempDir()}
	w.bin = filepath.Join(w.work, "echo-bin")
	buildEcho(t, w.bin)
	w.key = filepath.Join(w.work, "dev")
	mustNorma(t, "plugin", "keygen", "--out", w.key)
	w.grant = filepath.Join(w.work, "grant.yaml")
	os.WriteFile(w.grant, []byte("schema_version: 2\nkind: grant\npermissions: {}\n"), 0o644)
	return w
}

// install returns a new state directory with the echo package of manifest
// text and entrypoint body (the built echo plugin when empty) installed.
func (w pluginWorld) install(t *testing.T, text, body string) string {
	t.Helper()
	home := t.TempDir()
	mustNorma(t, "--home", home, "plugin", "trust", "add", w.key+".pub", "--publisher", "Example", "--prefix", "com.example")
	pkg := echoPkg(t, text, w.bin, "")
	if body != "" {
		os.WriteFile(filepath.Join(pkg, "bin", "echo"), []byte(body), 0o755)
	}
	mustNorma(t, "plugin", "sign", pkg, "--key", w.key+".key")
	mustNorma(t, "--home", home, "plugin", "install", pkg, "--yes", "--grant", w.grant)
	return home
}

// TestDoorPluginLoadFailure: an installed plugin that does not load stops
// `norma run` before the model is called — with the plugin and the reason
// code on stderr (the server's last stderr line escaped) and a
// plugin_load_failed event — unless --allow-missing-plugins, which runs
// without it and says so.
func TestDoorPluginLoadFailure(t *testing.T) {
	w := newPluginWorld(t)
	manifest := echoManifest("1.0.0", "", "  {}\n")
	for _, tc := range []struct {
		name   string
		home   func(t *testing.T) string
		reason string
		detail string // in the escaped stderr line and the event's detail
		code   int
	}{
		{name: "start fails", reason: "PLUGIN_START_FAILED", detail: `boom \x1b]52;c;cm0gLXJmIH4=\x07 \u202egpj.exe`, code: 1,
			home: func(t *testing.T) string {
				return w.install(t, manifest, "#!/bin/sh\nprintf 'early line\\nboom \\033]52;c;cm0gLXJmIH4=\\007 \\342\\200\\256gpj.exe\\n' >&2\nexit 1\n")
			}},
		{name: "missing interpreter", reason: "PLUGIN_START_FAILED", detail: "its interpreter /nonexistent/bin/node does not exist", code: 1,
			home: func(t *testing.T) string {
				return w.install(t, manifest, "#!/nonexistent/bin/node\nconsole.log('x')\n")
			}},
		{name: "undeclared tool", reason: "TOOL_UNDECLARED", detail: "echo", code: 1,
			home: func(t *testing.T) string {
				return w.install(t, strings.Replace(manifest, "name: echo", "name: other", 1), "")
			}},
		{name: "bad manifest on disk", reason: "PLUGIN_MANIFEST_INVALID", detail: "manifest.yaml", code: 1,
			home: func(t *testing.T) string {
				home := w.install(t, manifest, "")
				p := filepath.Join(home, "plugins", "com.example.echo", "1.0.0", "manifest.yaml")
				os.Chmod(p, 0o644)
				if err := os.WriteFile(p, []byte("schema_version: 2\nid: [\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				return home
			}},
		{name: "held", reason: "PLUGIN_HELD", detail: "norma plugin consent com.example.echo --tools", code: 3,
			home: func(t *testing.T) string {
				home := w.install(t, manifest, "")
				hold, _ := json.Marshal(map[string]any{"version": "1.0.0", "reason": "PLUGIN_TOOLS_CHANGED", "detail": "tool echo changed since consent", "at": time.Now()})
				os.WriteFile(filepath.Join(home, "plugins", "com.example.echo", "tools.held.json"), hold, 0o644)
				return home
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := tc.home(t)
			ws := t.TempDir()
			script := filepath.Join(t.TempDir(), "script.yaml")
			os.WriteFile(script, []byte("turns:\n  - text: the model was called\n"), 0o644)
			run := func(extra ...string) (int, string, string) {
				return door(t, append([]string{"--home", home, "run", "--provider", "scripted", "--script", script, "--workspace", ws}, append(extra, "go")...)...)
			}

			code, out, errs := run("--json")
			if code != tc.code {
				t.Fatalf("exit %d, want %d\n%s%s", code, tc.code, out, errs)
			}
			var failed map[string]any
			for _, e := range jsonLines(t, out) {
				switch e["event"] {
				case "plugin_load_failed":
					failed = e
				case "session_started", "assistant_text":
					t.Fatalf("the run went on to the model: %v", e)
				}
			}
			if failed == nil || failed["plugin"] != "com.example.echo" || failed["reason"] != tc.reason || failed["continued"] != false {
				t.Fatalf("plugin_load_failed event = %v\n%s", failed, out)
			}
			line := "norma: plugin com.example.echo not loaded: " + tc.reason + ": "
			if !strings.Contains(errs, line) || !strings.Contains(errs, tc.detail) || !strings.Contains(errs, "--allow-missing-plugins") {
				t.Errorf("stderr lacks %q and %q:\n%s", line, tc.detail, errs)
			}
			if c, bad := rawControl(errs); bad {
				t.Errorf("a raw %q reached the terminal:\n%q", c, errs)
			}
			checkJSONKeys(t, "plugin_load_failed", out)

			// Allowed: the run goes on without the plugin, and says so.
			code, out, errs = run("--allow-missing-plugins")
			if code != 0 || !strings.Contains(out, "the model was called") || !strings.Contains(out, "continuing without plugin com.example.echo") ||
				!strings.Contains(errs, line) {
				t.Fatalf("--allow-missing-plugins: exit %d\n%s%s", code, out, errs)
			}
			if c, bad := rawControl(out + errs); bad {
				t.Errorf("a raw %q reached the terminal:\n%q", c, out+errs)
			}
			code, out, _ = run("--allow-missing-plugins", "--json")
			evs := jsonLines(t, out)
			if code != 0 || len(evs) == 0 || evs[0]["event"] != "plugin_load_failed" || evs[0]["continued"] != true || last(evs)["status"] != "completed" {
				t.Fatalf("--allow-missing-plugins --json: exit %d\n%s", code, out)
			}
		})
	}
}

// TestDoorExplainBrokenPlugin: `norma policy explain` describes; a broken
// installed plugin is named on stderr and the decision is still made.
func TestDoorExplainBrokenPlugin(t *testing.T) {
	w := newPluginWorld(t)
	home := w.install(t, echoManifest("1.0.0", "", "  {}\n"), "")
	p := filepath.Join(home, "plugins", "com.example.echo", "1.0.0", "manifest.yaml")
	os.Chmod(p, 0o644)
	os.WriteFile(p, []byte("schema_version: 2\nid: [\n"), 0o644)
	code, out, errs := door(t, "--home", home, "policy", "explain", "--workspace", t.TempDir(), "--tool", "Read", "--input", `{"file_path":"docs/x.md"}`, "--json")
	var ex struct{ Decision string }
	if code != 0 || json.Unmarshal([]byte(out), &ex) != nil || ex.Decision == "" {
		t.Fatalf("explain: exit %d\n%s%s", code, out, errs)
	}
	if !strings.Contains(errs, "plugin com.example.echo not loaded: PLUGIN_MANIFEST_INVALID") {
		t.Errorf("explain does not name the broken plugin:\n%s", errs)
	}
}
