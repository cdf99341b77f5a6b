package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/norma-run/norma/secret"
)

// importDir is a directory holding the echo server and a client's file.
func importDir(t *testing.T, name, body string) (string, string) {
	t.Helper()
	dir := t.TempDir()
	echoServer(t, dir, "echo-server")
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, p
}

func (e runEnv) importCmd(t *testing.T, dir string, env []string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(normaBin(t), append([]string{"--home", e.home, "mcp", "import"}, args...)...)
	cmd.Dir, cmd.Env = dir, append(os.Environ(), env...)
	return doorCmd(t, cmd)
}

// TestMCPImportClaudeDoor imports a .mcp.json: the stdio servers are
// added (a ${VAR} in env read from the environment, a credential declared
// with --secret going to the vault and nowhere else), the HTTP server is
// reported and skipped, and a server whose credential is not declared is
// refused while the others are still added.
func TestMCPImportClaudeDoor(t *testing.T) {
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("no /usr/bin/python3")
	}
	e := newRunEnv(t)
	dir, file := importDir(t, ".mcp.json", `{"mcpServers": {
  "echo": {"command": "./echo-server", "args": ["--flag"], "env": {"ECHO_GREETING": "${NORMA_TEST_GREETING}", "ECHO_TOKEN": "${NORMA_TEST_ECHO_TOKEN}"}},
  "leaky": {"command": "./echo-server", "env": {"LEAKY_API_KEY": "`+runCanary+`"}},
  "remote": {"type": "http", "url": "https://mcp.example.com/mcp"}
}}`)
	env := []string{"NORMA_TEST_GREETING=hello", "NORMA_TEST_ECHO_TOKEN=" + runCanary}
	code, out, stderr := e.importCmd(t, dir, env, file, "--secret", "ECHO_TOKEN=https://api.example.com",
		"--grant", grantFile(t, "  secrets:\n    - {name: mcp_echo_echo_token, purpose: \"https://api.example.com\", inject_as: brokered_header, env: ECHO_TOKEN}\n"), "--yes")
	if code != exitFailed || !strings.Contains(stderr, "leaky: --env LEAKY_API_KEY looks like a credential") || !strings.Contains(stderr, "1 of 3 servers") {
		t.Errorf("import: exit %d\n%s\n%s", code, out, stderr)
	}
	if !strings.Contains(out, "skipped remote: a remote (HTTP/SSE) server (https://mcp.example.com/mcp) is not supported") || !strings.Contains(out, "added echo") {
		t.Errorf("import output:\n%s", out)
	}
	code, out, _ = e.mcp(t, nil, "get", "echo")
	if code != 0 || !strings.Contains(out, "ECHO_GREETING=hello") || !strings.Contains(out, "bin/echo --flag") {
		t.Errorf("mcp get echo: %d\n%s", code, out)
	}
	if code, _, _ := e.mcp(t, nil, "get", "leaky"); code == 0 {
		t.Error("the server with an undeclared credential was added")
	}
	v, err := secret.OpenFileVault(t.Context(), filepath.Join(e.home, "secrets"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if val, err := v.Get(t.Context(), "mcp_echo_echo_token"); err != nil || string(val.Reveal()) != runCanary {
		t.Errorf("vault: %v", err)
	}
	if hits := filesContaining(t, runCanary, e.home, e.ws); len(hits) > 0 {
		t.Errorf("the canary is in clear in %v", hits)
	}
}

// TestMCPImportCodexDoor imports a Codex config.toml; a syntax error is
// reported as FILE:LINE:COL and adds nothing.
func TestMCPImportCodexDoor(t *testing.T) {
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("no /usr/bin/python3")
	}
	e := newRunEnv(t)
	dir, file := importDir(t, "config.toml", "model = \"o3\"\n\n[mcp_servers.echo]\ncommand = \"./echo-server\"\nargs = [\"--flag\"]\n\n[mcp_servers.docs]\nurl = \"https://docs.example.com/mcp\"\n")
	code, out, stderr := e.importCmd(t, dir, nil, file, "--grant", grantFile(t, "  {}\n"), "--yes", "--json")
	if code != 0 {
		t.Fatalf("import: exit %d\n%s\n%s", code, out, stderr)
	}
	lines := jsonLines(t, out)
	if len(lines) != 2 || lines[0]["skipped"] == nil || lines[1]["name"] != "echo" || lines[1]["id"] != "local.mcp.echo" {
		t.Errorf("import --json:\n%s", out)
	}
	bad := filepath.Join(dir, "bad.toml")
	os.WriteFile(bad, []byte("[mcp_servers.x]\ncommand = \"./echo-server\"\nargs = [1,\n"), 0o644)
	code, _, stderr = e.importCmd(t, dir, nil, bad, "--grant", grantFile(t, "  {}\n"), "--yes")
	if code != exitFailed || !strings.Contains(stderr, bad+":3:") {
		t.Errorf("bad TOML: exit %d %s", code, stderr)
	}
	if code, _, _ := e.mcp(t, nil, "get", "x"); code == 0 {
		t.Error("a server of the broken file was added")
	}
}
