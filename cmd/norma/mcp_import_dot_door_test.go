package main

import (
	"os"
	"strings"
	"testing"
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
