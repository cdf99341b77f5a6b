package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

var snakeKeyRE = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// checkJSONKeys fails for every object key of out (one JSON value, or one
// per line) that is not snake_case. Objects under verbatimKeys hold data
// (environment variable names) and are not checked.
func checkJSONKeys(t *testing.T, what, out string) {
	t.Helper()
	var values []any
	dec := json.NewDecoder(strings.NewReader(out))
	for {
		var v any
		err := dec.Decode(&v)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Errorf("%s: not JSON: %v\n%s", what, err, out)
			return
		}
		values = append(values, v)
	}
	if len(values) == 0 {
		t.Errorf("%s: no JSON output", what)
	}
	var bad []string
	var walk func(v any, path string)
	walk = func(v any, path string) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				if !snakeKeyRE.MatchString(k) {
					bad = append(bad, path+"."+k)
				}
				if !verbatimKeys[k] {
					walk(e, path+"."+k)
				}
			}
		case []any:
			for _, e := range x {
				walk(e, path+"[]")
			}
		}
	}
	for _, v := range values {
		walk(v, "")
	}
	if len(bad) > 0 {
		slices.Sort(bad)
		bad = slices.Compact(bad)
		t.Errorf("%s: keys not in snake_case: %v", what, bad)
	}
}

// jsonCommands lists the command paths that have a --json flag.
func jsonCommands() []string {
	var out []string
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Flags().Lookup("json") != nil {
			out = append(out, strings.TrimPrefix(c.CommandPath(), "norma "))
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(newRoot())
	sort.Strings(out)
	return out
}

// TestJSONKeysSnakeCase runs every command that has --json, on state that
// makes each print its fields (an installed plugin with a held update, a
// pending approval, audit events, a secret), and checks that every key of
// its output is snake_case. A --json command without a case here fails
// the test.
func TestJSONKeysSnakeCase(t *testing.T) {
	home, work, ws := t.TempDir(), t.TempDir(), t.TempDir()
	key := filepath.Join(work, "dev")
	mustNorma(t, "plugin", "keygen", "--out", key)
	mustNorma(t, "--home", home, "plugin", "trust", "add", key+".pub", "--publisher", "Example", "--prefix", "com.example")
	docs := "  filesystem: {read: [workspace://docs/**]}\n"
	wider := "  filesystem: {read: [workspace://docs/**, workspace://src/**]}\n"
	grant := filepath.Join(work, "grant.yaml")
	os.WriteFile(grant, []byte("schema_version: 2\nkind: grant\npermissions:\n"+docs), 0o644)
	grant2 := filepath.Join(work, "grant2.yaml")
	os.WriteFile(grant2, []byte("schema_version: 2\nkind: grant\npermissions:\n"+wider), 0o644)
	v1 := echoPkg(t, echoManifest("1.0.0", "", docs), "", key)
	v11 := echoPkg(t, echoManifest("1.1.0", "", wider), "", key)
	typo := filepath.Join(work, "typo.yaml")
	data, _ := os.ReadFile(helperManifest)
	os.WriteFile(typo, bytes.Replace(data, []byte("external_writes:"), []byte("external_write:"), 1), 0o644)
	script := filepath.Join(work, "script.yaml")
	os.WriteFile(script, []byte("turns:\n  - tool_calls:\n      - {id: w1, name: Write, input: {path: notes.md, content: n}}\n  - text: done\n"), 0o644)
	settingsFile := filepath.Join(work, "settings.yaml")
	os.WriteFile(settingsFile, []byte("permissions:\n  allow: [\"Bash(git status)\"]\n  defaultMode: acceptEdits\nenv:\n  NODE_ENV: test\n  myVar: x\n"), 0o644)
	var in bytes.Buffer
	in.WriteString("value-of-the-json-test-secret\n")
	mustNorma(t, "--home", home, "serve", "token", "add", "json-test", "--role", "viewer")
	var out, errb bytes.Buffer
	if code := runWith([]string{"--home", home, "secret", "set", "json_test"}, &in, &out, &errb); code != 0 {
		t.Fatalf("secret set: exit %d %s%s", code, out.String(), errb.String())
	}

	// The run leaves a pending approval, and the audit events.
	runOut := mustNorma(t, "--home", home, "run", "--workspace", ws, "--script", script, "--json", "--approval-wait", "0s", "go")
	var approvalID string
	sc := bufio.NewScanner(strings.NewReader(runOut))
	for sc.Scan() {
		var e map[string]any
		json.Unmarshal(sc.Bytes(), &e)
		if e["event"] == "tool_call" {
			approvalID, _ = e["approval_id"].(string)
		}
	}
	if approvalID == "" {
		t.Fatalf("the run left no pending approval:\n%s", runOut)
	}

	echo := echoServer(t, work, "echo-server")
	mcpJSON := filepath.Join(work, ".mcp.json")
	os.WriteFile(mcpJSON, []byte(`{"mcpServers": {"echo2": {"command": "`+echo+`"}, "web": {"url": "https://mcp.example.com/mcp"}}}`), 0o644)
	empty := filepath.Join(work, "empty-grant.yaml")
	os.WriteFile(empty, []byte("schema_version: 2\nkind: grant\npermissions: {}\n"), 0o644)

	h := []string{"--home", home}
	cases := []struct {
		cmd  string
		args []string
		code int // -1: any
	}{
		{"run", nil, 0}, // checked from runOut below
		{"plugin verify", []string{"plugin", "verify", v1, "--json"}, 0},
		{"plugin install", []string{"plugin", "install", v1, "--yes", "--grant", grant, "--json"}, 0},
		{"plugin update", []string{"plugin", "update", v11, "--json"}, exitConsent},
		{"plugin info", []string{"plugin", "info", "com.example.echo", "--json"}, 0},
		{"plugin list", []string{"plugin", "list", "--json"}, 0},
		{"plugin consent", []string{"plugin", "consent", "com.example.echo", "--yes", "--grant", grant2, "--json"}, 0},
		{"plugin trust list", []string{"plugin", "trust", "list", "--json"}, 0},
		{"approvals list", []string{"approvals", "list", "--json"}, 0},
		{"approvals show", []string{"approvals", "show", approvalID, "--json"}, 0},
		{"audit tail", []string{"audit", "tail", "--json"}, 0},
		{"audit query", []string{"audit", "query", "--json"}, 0},
		{"audit verify", []string{"audit", "verify", "--json"}, 0},
		{"manifest lint", []string{"manifest", "lint", "--json", typo}, exitFailed},
		{"manifest show", []string{"manifest", "show", "--json", helperManifest}, 0},
		{"manifest diff", []string{"manifest", "diff", "--json", helperManifest, helperUpdate}, exitConsent},
		{"policy explain", []string{"policy", "explain", "--workspace", ws, "--tool", "Read", "--input", `{"path":".env"}`, "--json"}, 0},
		{"policy test", []string{"policy", "test", "--json", "testdata/policytest/cases.yaml"}, 0},
		{"secret list", []string{"secret", "list", "--json"}, 0},
		{"sandbox doctor", []string{"sandbox", "doctor", "--json"}, -1},
		{"settings show", []string{"settings", "show", "--workspace", ws, "--settings", settingsFile, "--json"}, 0},
		{"tools list", []string{"tools", "list", "--json"}, 0},
		{"permissions list", []string{"permissions", "list", "--workspace", ws, "--json"}, 0},
		{"mcp add", []string{"mcp", "add", "echo", "--grant", empty, "--yes", "--json", "--", echo}, 0},
		{"mcp import", []string{"mcp", "import", mcpJSON, "--grant", empty, "--yes", "--json"}, 0},
		{"mcp list", []string{"mcp", "list", "--json"}, 0},
		{"mcp get", []string{"mcp", "get", "echo", "--json"}, 0},
		{"serve token list", []string{"serve", "token", "list", "--json"}, 0},
		{"demo", nil, 0}, // TestDoorDemo's run (runDemo)
	}
	covered := map[string]bool{}
	for _, c := range cases {
		covered[c.cmd] = true
		var got string
		switch c.cmd {
		case "run":
			got = runOut
		case "demo":
			if os.Getenv("NORMA_REQUIRE_SANDBOX") == "" && !sandboxAvailable() {
				continue
			}
			code, out, errs := runDemo(t)
			if code != 0 {
				t.Errorf("demo: exit %d\n%s", code, errs)
				continue
			}
			got = out
		default:
			code, out, errs := norma(t, append(h, c.args...)...)
			if c.code >= 0 && code != c.code {
				t.Errorf("%s: exit %d, want %d\n%s%s", c.cmd, code, c.code, out, errs)
				continue
			}
			got = out
		}
		checkJSONKeys(t, c.cmd, got)
	}
	for _, c := range jsonCommands() {
		if !covered[c] {
			t.Errorf("norma %s has --json but no case in TestJSONKeysSnakeCase", c)
		}
	}
}
