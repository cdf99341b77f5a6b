package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMCPImportRewriteDoor: `mcp import .mcp.json --rewrite --yes` adds
// the echo server, shows the diff, and rewrites its entry to the built
// norma's `mcp proxy echo --home HOME`, keeping its env, the remote
// server and the file's other keys, with the old file as a backup; the
// rewritten command line is a working MCP server (through the proxy) to
// a client that runs it as written; a second run changes nothing and
// adds nothing.
func TestMCPImportRewriteDoor(t *testing.T) {
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("no /usr/bin/python3")
	}
	e := newRunEnv(t)
	dir, file := importDir(t, ".mcp.json", `{
  "mcpServers": {
    "echo": {
      "command": "./echo-server",
      "args": ["--flag"],
      "env": {"ECHO_GREETING": "hi"},
      "timeout": 30000
    },
    "remote": {"type": "http", "url": "https://mcp.example.com/mcp"}
  },
  "otherSetting": [1, 2]
}
`)
	orig, _ := os.ReadFile(file)
	code, out, stderr := e.importCmd(t, dir, nil, file, "--rewrite", "--grant", grantFile(t, "  {}\n"), "--yes")
	if code != 0 {
		t.Fatalf("import --rewrite: exit %d\n%s\n%s", code, out, stderr)
	}
	bin, _ := filepath.EvalSymlinks(normaBin(t))
	for _, want := range []string{"-      \"command\": \"./echo-server\",", "+      \"command\": " + jsonString(bin) + ",", "-      \"args\": [\"--flag\"],", "added echo", "rewrote " + file} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	var doc struct {
		MCPServers map[string]map[string]any `json:"mcpServers"`
		Other      []any                     `json:"otherSetting"`
	}
	now, _ := os.ReadFile(file)
	if err := json.Unmarshal(now, &doc); err != nil {
		t.Fatal(err)
	}
	echo := doc.MCPServers["echo"]
	var args []string
	for _, a := range echo["args"].([]any) {
		args = append(args, a.(string))
	}
	if echo["command"] != bin || !slices.Equal(args, []string{"mcp", "proxy", "echo", "--home", e.home}) {
		t.Errorf("rewritten entry: %v", echo)
	}
	if env, _ := echo["env"].(map[string]any); env["ECHO_GREETING"] != "hi" || echo["timeout"] != 30000.0 || len(doc.Other) != 2 ||
		doc.MCPServers["remote"]["url"] != "https://mcp.example.com/mcp" {
		t.Errorf("other keys were not kept:\n%s", now)
	}
	if b, err := os.ReadFile(file + ".norma-backup"); err != nil || string(b) != string(orig) {
		t.Errorf("backup: %q, %v", b, err)
	}

	// The client runs the entry as written.
	cmd := exec.Command(echo["command"].(string), args...)
	cmd.Dir = e.ws
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := mcp.NewClient(&mcp.Implementation{Name: "rewrite-test"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("run the rewritten entry: %v", err)
	}
	tl, err := s.ListTools(ctx, nil)
	if err != nil || len(tl.Tools) != 1 || tl.Tools[0].Name != "echo" {
		t.Errorf("tools through the rewritten entry: %v, %v", tl, err)
	}
	s.Close()

	code, out, stderr = e.importCmd(t, dir, nil, file, "--rewrite", "--grant", grantFile(t, "  {}\n"), "--yes")
	if code != 0 || !strings.Contains(out, "skipped echo: it already runs `norma mcp proxy`") || strings.Contains(out, "rewrote") || strings.Contains(out, "@@") {
		t.Errorf("second import --rewrite: exit %d\n%s\n%s", code, out, stderr)
	}
	if again, _ := os.ReadFile(file); string(again) != string(now) {
		t.Errorf("the second run changed the file:\n%s", again)
	}
}

func jsonString(s string) string { b, _ := json.Marshal(s); return string(b) }
