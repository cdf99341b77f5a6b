package main

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// TestMCPImportThenRewriteDoor: `mcp import` of a file, then `mcp import
// --rewrite` of the same file converts every server of it (those the
// first run added are recognised by name and command, not added again),
// and a second --rewrite changes nothing.
func TestMCPImportThenRewriteDoor(t *testing.T) {
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("no /usr/bin/python3")
	}
	e := newRunEnv(t)
	dir, file := importDir(t, ".mcp.json", `{"mcpServers": {
  "one": {"command": "./echo-server", "args": ["--flag"]},
  "two": {"command": "./echo-server", "args": ["."]}
}}
`)
	grant := grantFile(t, "  {}\n")
	if code, out, stderr := e.importCmd(t, dir, nil, file, "--grant", grant, "--yes"); code != 0 {
		t.Fatalf("import: exit %d\n%s\n%s", code, out, stderr)
	}
	code, out, stderr := e.importCmd(t, dir, nil, file, "--rewrite", "--grant", grant, "--yes")
	if code != 0 || !strings.Contains(out, "already added one") || !strings.Contains(out, "already added two") || !strings.Contains(out, "rewrote") {
		t.Fatalf("import --rewrite: exit %d\n%s\n%s", code, out, stderr)
	}
	var doc struct {
		MCPServers map[string]struct {
			Command string   `json:"command"`
			Args    []string `json:"args"`
		} `json:"mcpServers"`
	}
	now, _ := os.ReadFile(file)
	if err := json.Unmarshal(now, &doc); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"one", "two"} {
		s := doc.MCPServers[name]
		if len(s.Args) < 3 || s.Args[0] != "mcp" || s.Args[1] != "proxy" || s.Args[2] != name {
			t.Errorf("%s not converted: %+v", name, s)
		}
	}
	code, out, stderr = e.importCmd(t, dir, nil, file, "--rewrite", "--grant", grant, "--yes")
	if code != 0 || strings.Contains(out, "rewrote") {
		t.Errorf("second --rewrite: exit %d\n%s\n%s", code, out, stderr)
	}
	if again, _ := os.ReadFile(file); string(again) != string(now) {
		t.Errorf("the second --rewrite changed the file:\n%s", again)
	}
}
