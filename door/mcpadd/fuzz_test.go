package mcpadd

import (
	"strings"
	"testing"
)

// FuzzParseConfig: any bytes, as JSON or TOML, parse or fail with an
// error that names the file; never a panic (lineCol on any offset).
func FuzzParseConfig(f *testing.F) {
	f.Add([]byte(`{"mcpServers": {"a": {"command": "x", "args": ["1"], "env": {"K": "${V:-d}"}}}}`), false)
	f.Add([]byte("[mcp_servers.a]\ncommand = \"x\"\nargs = [\"1\"]\n"), true)
	f.Add([]byte("{\n  \"mcpServers\": {\"a\": {\"command\": 1}}\n}"), false)
	f.Fuzz(func(t *testing.T, b []byte, isTOML bool) {
		var servers map[string]serverEntry
		var err error
		if isTOML {
			servers, err = parseTOML("f.toml", b)
		} else {
			servers, err = parseJSON("f.json", b)
		}
		if err != nil && !strings.HasPrefix(err.Error(), "f.") {
			t.Fatalf("error without the file name: %v", err)
		}
		for name, e := range servers {
			_ = e.config(name)
		}
	})
}
