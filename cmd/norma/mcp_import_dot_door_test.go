package main

import (
	"os"
	"strings"
	"testing"
	"time"
)

// TestMCPImportDotDoor: a project's .mcp.json that gives its server "."
// and "./data" (as server-filesystem's usually does) is imported with
// those arguments mapped to the workspace, ${workspace} and
// ${workspace}/data, and the server asks to use them on the install
// screen.
func TestMCPImportDotDoor(t *testing.T) {
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("no /usr/bin/python3")
	}
	e := newRunEnv(t)
	dir, file := importDir(t, ".mcp.json", `{"mcpServers": {"echo": {"command": "./echo-server", "args": [".", "./data"]}}}`)
	os.Mkdir(dir+"/data", 0o755)
	code, out, stderr := e.importCmd(t, dir, nil, file, "--grant", grantFile(t, "  {}\n"), "--yes")
	if code != 0 {
		t.Fatalf("import: exit %d\n%s\n%s", code, out, stderr)
	}
	if !strings.Contains(out, "workspace://**") {
		t.Errorf("the install screen does not ask for the workspace:\n%s", out)
	}
	code, out, _ = e.mcp(t, nil, "get", "echo")
	if code != 0 || !strings.Contains(out, "bin/echo ${workspace} ${workspace}/data") {
		t.Errorf("mcp get echo: %d\n%s", code, out)
	}
}

// TestMCPAddNoTerminalDoor: `mcp add` with nothing to answer the consent
// prompt (stdin /dev/null) and no --grant --yes fails at once, before
// installing anything, and says how to consent instead.
func TestMCPAddNoTerminalDoor(t *testing.T) {
	e := newRunEnv(t)
	start := time.Now()
	code, _, stderr := door(t, "--home", e.home, "mcp", "add", "fs", "--", "npx", "-y", "@modelcontextprotocol/server-filesystem@2026.8.31", ".")
	if code != exitUsage || !strings.Contains(stderr, "nobody can consent") || !strings.Contains(stderr, "--grant FILE --yes") {
		t.Errorf("mcp add without a terminal: exit %d\n%s", code, stderr)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("it failed after %s, not at once", d)
	}
	if entries, _ := os.ReadDir(e.home + "/plugins"); len(entries) > 0 {
		t.Errorf("something was installed: %v", entries)
	}
}
