package mcpadd

import (
	"reflect"
	"strings"
	"testing"
)

// TestParseConfig reads the servers of the three clients' files, remote
// servers marked as such.
func TestParseConfig(t *testing.T) {
	tests := []struct {
		file string
		want []ServerConfig
	}{
		{"testdata/config/claude.mcp.json", []ServerConfig{
			{Name: "echo", Command: "./echo-server", Args: []string{"--flag"}},
			{Name: "memory", Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-memory@2026.8.31"},
				Env: map[string]string{"MEMORY_FILE_PATH": "${NORMA_TEST_MEMORY_DIR:-/var/memory}/memory.jsonl"}},
			{Name: "remote", Remote: "https://mcp.example.com/mcp"},
		}},
		{"testdata/config/codex.config.toml", []ServerConfig{
			{Name: "docs", Remote: "https://docs.example.com/mcp"},
			{Name: "echo", Command: "./echo-server", Args: []string{"--flag"}, Env: map[string]string{"ECHO_GREETING": "${NORMA_TEST_GREETING}"}},
		}},
		{"testdata/config/gemini.settings.json", []ServerConfig{
			{Name: "echo", Command: "./echo-server", Args: []string{"--flag"}, Env: map[string]string{"ECHO_GREETING": "hi"}},
			{Name: "stream", Remote: "https://stream.example.com/mcp"},
		}},
	}
	for _, tt := range tests {
		got, err := ParseConfig(tt.file)
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParseConfig(%s) = %+v, %v\nwant %+v", tt.file, got, err, tt.want)
		}
	}
}

// TestParseConfigErrors: a syntax error names FILE:LINE:COL.
func TestParseConfigErrors(t *testing.T) {
	for file, want := range map[string]string{
		"testdata/config/bad.json": "testdata/config/bad.json:3:27: ",
		"testdata/config/bad.toml": "testdata/config/bad.toml:3:",
	} {
		_, err := ParseConfig(file)
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("ParseConfig(%s) = %v, want %s...", file, err, want)
		}
	}
}

func TestExpandHostEnv(t *testing.T) {
	env := map[string]string{"A": "1", "EMPTY": ""}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	for in, want := range map[string]string{"${A}/x": "1/x", "${B:-d}": "d", "${EMPTY:-e}": "e", "$A ${A}": "$A 1", "${data}/m": ""} {
		got, err := ExpandHostEnv(in, false, lookup)
		if want == "" {
			if err == nil || !strings.Contains(err.Error(), "${data} is not set") {
				t.Errorf("ExpandHostEnv(%q) = %q, %v, want an error", in, got, err)
			}
			continue
		}
		if err != nil || got != want {
			t.Errorf("ExpandHostEnv(%q) = %q, %v, want %q", in, got, err, want)
		}
	}
}
