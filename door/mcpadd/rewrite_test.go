package mcpadd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// proxyArgv is what `mcp import --rewrite` sets for server name.
func proxyArgv(name string) []string {
	return []string{"/opt/norma/bin/norma", "mcp", "proxy", name, "--home", "/h"}
}

// TestRewrite rewrites the stdio servers of each client's file: their
// command and args become the proxy's, every other byte is kept, the
// result parses to the same servers but those, and a second rewrite of
// the result (the servers now proxied) changes nothing.
func TestRewrite(t *testing.T) {
	tests := []struct {
		file    string
		servers []string
		want    []string // substrings of the result
	}{
		{"testdata/config/claude.mcp.json", []string{"memory", "echo"}, []string{
			`"command": "/opt/norma/bin/norma",` + "\n" + `      "args": ["mcp","proxy","memory","--home","/h"],` + "\n" + `      "env": {"MEMORY_FILE_PATH"`,
			`"echo": {"command": "/opt/norma/bin/norma", "args": ["mcp","proxy","echo","--home","/h"]}`,
			`"remote": {"type": "http", "url": "https://mcp.example.com/mcp"}`}},
		{"testdata/config/gemini.settings.json", []string{"echo"}, []string{`"theme": "Default"`,
			`"echo": {"command": "/opt/norma/bin/norma", "args": ["mcp","proxy","echo","--home","/h"], "env": {"ECHO_GREETING": "hi"}}`}},
		{"testdata/config/codex.config.toml", []string{"echo"}, []string{"model = \"o3\"\n",
			"command = \"/opt/norma/bin/norma\"\nargs = [\"mcp\",\"proxy\",\"echo\",\"--home\",\"/h\"]\nenv = { ECHO_GREETING",
			"[mcp_servers.docs]\nurl = \"https://docs.example.com/mcp\""}},
		{"testdata/rewrite/codex.toml", []string{"echo", "bare"}, []string{
			"# the echo server\ncommand = \"/opt/norma/bin/norma\"   # relative\nargs = [\"mcp\",\"proxy\",\"echo\",\"--home\",\"/h\"]\nenv = {",
			"startup_timeout_sec = 20\n",
			"[mcp_servers.\"bare\"]\ncommand = \"/opt/norma/bin/norma\"\nargs = [\"mcp\",\"proxy\",\"bare\",\"--home\",\"/h\"]\n",
			"[mcp_servers.echo.env2]\nA = \"1\"\n"}},
	}
	for _, tt := range tests {
		t.Run(filepath.Base(tt.file), func(t *testing.T) {
			b, err := os.ReadFile(tt.file)
			if err != nil {
				t.Fatal(err)
			}
			argv := map[string][]string{}
			for _, s := range tt.servers {
				argv[s] = proxyArgv(s)
			}
			out, err := Rewrite(tt.file, b, argv)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !strings.Contains(string(out), w) {
					t.Errorf("result lacks %q:\n%s", w, out)
				}
			}
			p := filepath.Join(t.TempDir(), filepath.Base(tt.file))
			os.WriteFile(p, out, 0o644)
			servers, err := ParseConfig(p)
			if err != nil {
				t.Fatal(err)
			}
			proxied := 0
			for _, s := range servers {
				if IsProxy(s) {
					proxied++
					if _, ok := argv[s.Name]; !ok {
						t.Errorf("%s was rewritten", s.Name)
					}
				}
			}
			if proxied != len(tt.servers) {
				t.Errorf("%d servers proxied, want %d", proxied, len(tt.servers))
			}
			again, err := Rewrite(p, out, argv)
			if err != nil || string(again) != string(out) {
				t.Errorf("a second rewrite changed the file (%v):\n%s", err, again)
			}
		})
	}
}

// TestRewriteRefuses: an entry without a command, or a TOML inline
// table, is not rewritten.
func TestRewriteRefuses(t *testing.T) {
	for file, body := range map[string]string{
		"a.json": `{"mcpServers": {"x": {"args": ["a"]}}}`,
		"b.toml": "[mcp_servers]\nx = { command = \"a\" }\n",
		"c.json": `[1]`,
	} {
		if _, err := Rewrite(file, []byte(body), map[string][]string{"x": proxyArgv("x")}); err == nil {
			t.Errorf("%s: rewritten", file)
		}
	}
}

// FuzzRewrite: whatever the file, a rewrite that succeeds gives a file
// that parses, whose rewritten servers run the proxy and whose other
// servers are unchanged (Rewrite checks the latter itself).
func FuzzRewrite(f *testing.F) {
	for _, p := range []string{"testdata/config/claude.mcp.json", "testdata/config/gemini.settings.json", "testdata/config/codex.config.toml", "testdata/rewrite/codex.toml"} {
		b, _ := os.ReadFile(p)
		f.Add(b, strings.HasSuffix(p, ".toml"))
	}
	f.Fuzz(func(t *testing.T, b []byte, toml bool) {
		file := "x.json"
		parse := parseJSON
		if toml {
			file, parse = "x.toml", parseTOML
		}
		servers, err := parse(file, b)
		if err != nil {
			return
		}
		argv := map[string][]string{}
		for name := range servers {
			argv[name] = proxyArgv(name)
		}
		out, err := Rewrite(file, b, argv)
		if err != nil {
			return
		}
		cur, err := parse(file, out)
		if err != nil {
			t.Fatalf("the result does not parse: %v\n%s", err, out)
		}
		for name := range argv {
			if c := cur[name]; !IsProxy(ServerConfig{Command: c.Command, Args: c.Args}) || c.Args[2] != name {
				t.Fatalf("%s not rewritten: %+v\n%s", name, c, out)
			}
		}
	})
}
