package main

import (
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/norma-run/norma/sandbox/sandboxtest"
)

// TestDoorPluginRuntime: through the built binary, a package whose
// entrypoint is an npm-style .bin symlink to a "#!/usr/bin/env python3"
// server installs with --dev (the link stored as a copy), its install
// screen names the real data directory, and `norma run` starts it with
// the manifest's args and env: ${data} is the data directory, which it
// can write, and ${secret:api_token} the broker's placeholder — the vault
// value set with `norma secret set` is nowhere in the output or the state
// directory. The state directory lies in the workspace (a run in the home
// directory): Bash cannot read or list the plugin's data directory. plugin
// remove deletes the data directory.
func TestDoorPluginRuntime(t *testing.T) {
	sandboxtest.Require(t)
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("no /usr/bin/python3")
	}
	work, ws := t.TempDir(), t.TempDir()
	home := filepath.Join(ws, ".local", "state", "norma")
	vault := "VAULT-" + runCanary + "-7c41d09e2b"
	set := exec.Command(normaBin(t), "--home", home, "secret", "set", "api_token")
	set.Stdin = strings.NewReader(vault + "\n")
	if out, err := set.CombinedOutput(); err != nil {
		t.Fatalf("secret set: %v\n%s", err, out)
	}
	pkg := filepath.Join(work, "pkg")
	os.MkdirAll(filepath.Join(pkg, "lib"), 0o755)
	os.MkdirAll(filepath.Join(pkg, "bin"), 0o755)
	server, err := os.ReadFile("../../plugin/host/testdata/pyserver/server.py")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(pkg, "lib", "server.py"), server, 0o755)
	if err := os.Symlink("../lib/server.py", filepath.Join(pkg, "bin", "server")); err != nil {
		t.Fatal(err)
	}
	perms := "permissions:\n  process:\n    spawn: deny\n  secrets:\n    - name: api_token\n      purpose: https://api.example.invalid\n      inject_as: brokered_header\n"
	var tools strings.Builder
	for _, n := range []string{"env", "listdir", "read", "write", "spawn"} {
		tools.WriteString("  - name: " + n + "\n    risk: read\n    approval: never\n")
	}
	os.WriteFile(filepath.Join(pkg, "manifest.yaml"), []byte("schema_version: 2\nid: local.test.py\nversion: 1.0.0\nentrypoint: bin/server\n"+
		"args: [\"--data=${data}\"]\nenv:\n  TOKEN: \"${secret:api_token}\"\n  PYSERVER_MARK: \"${data}/started\"\ndata_dir: true\n"+
		"tools:\n"+tools.String()+perms), 0o644)
	grant := filepath.Join(work, "grant.yaml")
	os.WriteFile(grant, []byte("schema_version: 2\nkind: grant\n"+perms), 0o644)

	code, out, errs := door(t, "--home", home, "plugin", "install", "--dev", pkg, "--yes", "--grant", grant)
	data := filepath.Join(home, "plugins", "local.test.py", "data")
	if code != 0 || !strings.Contains(out, "with a data directory of its own, read-write, kept across runs and updates: "+data+"\n") {
		t.Fatalf("install: exit %d\n%s%s", code, out, errs)
	}
	if fi, err := os.Lstat(filepath.Join(home, "plugins", "local.test.py", "1.0.0", "bin", "server")); err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("the installed bin/server is %v %v, want a regular file", fi, err)
	}

	script := filepath.Join(work, "script.yaml")
	os.WriteFile(script, []byte("turns:\n  - tool_calls:\n      - {id: t1, name: mcp__local.test.py__env, input: {}}\n"+
		"      - {id: t2, name: mcp__local.test.py__write, input: {path: "+data+"/note, content: DATA-NOTE-51c2}}\n"+
		"  - tool_calls:\n      - {id: t3, name: Bash, input: {command: \"cat .local/state/norma/plugins/local.test.py/data/note; ls -a .local/state/norma/plugins/local.test.py/data .local/state/norma/plugins\"}}\n"+
		"  - text: done\n"), 0o644)
	code, out, errs = door(t, "--home", home, "run", "--provider", "scripted", "--script", script, "--workspace", ws, "--yes", "--json", "go")
	if code != 0 {
		t.Fatalf("run: exit %d\n%s%s", code, out, errs)
	}
	calls := toolCalls(jsonLines(t, out))
	result, _ := calls["t1"]["result"].(string)
	var se struct {
		Env  map[string]string
		Argv []string
	}
	if err := json.Unmarshal([]byte(result), &se); err != nil {
		t.Fatalf("env result %q: %v\n%s", result, err, out)
	}
	python, _ := filepath.EvalSymlinks("/usr/bin/python3")
	if len(se.Argv) != 3 || se.Argv[0] != python || se.Argv[2] != "--data="+data {
		t.Errorf("argv = %q", se.Argv)
	}
	// The placeholder is masked on its way to the model like a value would
	// be; either way it is not the value.
	if tok := se.Env["TOKEN"]; tok == "" || strings.Contains(tok, vault) {
		t.Errorf("TOKEN = %q", tok)
	}
	if b, err := os.ReadFile(filepath.Join(data, "note")); err != nil || string(b) != "DATA-NOTE-51c2" {
		t.Errorf("the write into the data directory: %q %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(data, "started")); err != nil {
		t.Errorf("PYSERVER_MARK=${data}/started was not written: %v", err)
	}
	// Bash: the note unreadable, the data directory and plugins/ unlisted
	// (a listing would show "started" and "note").
	if bash, _ := calls["t3"]["result"].(string); strings.Count(bash, "Permission denied") != 3 || strings.Contains(bash, "DATA-NOTE-51c2") ||
		strings.Contains(bash, "started") || strings.Contains(bash, "note\n") {
		t.Errorf("Bash saw the data directory: %q", bash)
	}
	filepath.WalkDir(home, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if b, _ := os.ReadFile(p); strings.Contains(string(b), vault) {
				t.Errorf("%s holds the vault value", p)
			}
		}
		return nil
	})
	if code, out, errs := door(t, "--home", home, "plugin", "remove", "local.test.py"); code != 0 {
		t.Fatalf("remove: exit %d\n%s%s", code, out, errs)
	}
	if _, err := os.Lstat(data); err == nil {
		t.Error("plugin remove kept the data directory")
	}
}
