package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const (
	helperManifest = "../../examples/plugins/issue-helper/manifest.yaml"
	helperUpdate   = "../../examples/plugins/issue-helper-1.5.0/manifest.yaml"
)

// norma runs the CLI in-process and returns exit code, stdout and stderr.
func norma(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := runWith(args, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

func TestManifestLint(t *testing.T) {
	code, out, _ := norma(t, "manifest", "lint", helperManifest, helperUpdate)
	if code != 0 || strings.Count(out, ": ok") != 2 {
		t.Fatalf("lint valid: exit %d\n%s", code, out)
	}
	// A new user's typo.
	data, _ := os.ReadFile(helperManifest)
	typo := filepath.Join(t.TempDir(), "typo.yaml")
	os.WriteFile(typo, bytes.Replace(data, []byte("external_writes:"), []byte("external_write:"), 1), 0o644)
	code, _, errs := norma(t, "manifest", "lint", typo)
	if code != 1 {
		t.Fatalf("lint typo: exit %d, want 1", code)
	}
	want := typo + `:37:3: permissions.external_write: unknown field "external_write" (did you mean "external_writes"?)`
	if strings.TrimSpace(errs) != want {
		t.Errorf("lint typo:\n got  %s\n want %s", errs, want)
	}
	code, out, _ = norma(t, "manifest", "lint", "--json", typo)
	var r struct {
		Valid    bool
		Problems []struct{ Line, Col int }
	}
	if code != 1 || json.Unmarshal([]byte(out), &r) != nil || r.Valid || len(r.Problems) != 1 || r.Problems[0].Line != 37 {
		t.Errorf("lint --json: exit %d %s", code, out)
	}
}

func TestManifestShowAndDiff(t *testing.T) {
	code, out, _ := norma(t, "manifest", "show", helperManifest)
	for _, want := range []string{"This plugin can:", "read files in workspace://docs/**", "issues.comment", "asks for approval", "issue_api_token → sent only to https://api.example.invalid:443"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("show: exit %d, missing %q in\n%s", code, want, out)
		}
	}
	code, out, _ = norma(t, "manifest", "show", "--json", helperManifest)
	var s struct{ Digest string }
	if code != 0 || json.Unmarshal([]byte(out), &s) != nil || !strings.HasPrefix(s.Digest, "sha256:") {
		t.Errorf("show --json: %d %s", code, out)
	}
	code, out, _ = norma(t, "manifest", "diff", helperManifest, helperUpdate)
	if code != 3 || !strings.Contains(out, "filesystem.read workspace://src/**") || !strings.Contains(out, "hooks.example.invalid") {
		t.Errorf("diff widening: exit %d\n%s", code, out)
	}
	code, out, _ = norma(t, "manifest", "diff", "--json", helperUpdate, helperManifest)
	var d struct {
		Reconsent bool
		Delta     struct{ Removed []any }
	}
	if code != 0 || json.Unmarshal([]byte(out), &d) != nil || d.Reconsent || len(d.Delta.Removed) != 2 {
		t.Errorf("diff narrowing: exit %d\n%s", code, out)
	}
}

func TestPolicyExplain(t *testing.T) {
	ws := t.TempDir()
	os.MkdirAll(filepath.Join(ws, "docs"), 0o755)
	os.WriteFile(filepath.Join(ws, ".env"), []byte("TOKEN=canary"), 0o600)
	// A symlink inside the workspace to .env: the decision is on the resolved path.
	os.Symlink("../.env", filepath.Join(ws, "docs", "notes.md"))
	for _, tc := range []struct {
		args []string
		code int
		json map[string]any
	}{
		{[]string{"--op", "fs.read workspace://docs/intro.md"}, 0, map[string]any{"decision": "allow", "reason": "ALLOWED"}},
		{[]string{"--op", "fs.read docs/notes.md", "--workspace", ws}, 0, map[string]any{"decision": "deny", "reason": "FILESYSTEM_READ_DENIED", "layer": "plugin", "rule": "plugin:permissions.filesystem.deny[0]"}},
		{[]string{"--op", "fs.write output/../../secret.txt"}, 0, map[string]any{"decision": "deny", "reason": "PATH_ESCAPE"}},
		{[]string{"--op", "net.request GET http://169.254.169.254/latest/meta-data"}, 0, map[string]any{"decision": "deny", "reason": "NETWORK_DESTINATION_DENIED"}},
		{[]string{"--op", "net.request POST https://api.example.invalid/repos/acme/issues/42/comments"}, 0, map[string]any{"decision": "approval_required", "rule": "plugin:permissions.network.requests[1]"}},
		// A tool the manifest does not declare is unknown to the gate, as in a run.
		{[]string{"--tool", "issues.delete", "--input", "{}"}, 0, map[string]any{"decision": "deny", "reason": "TOOL_UNKNOWN"}},
		// The same target the plugin host gives the gate for this call.
		{[]string{"--tool", "issues.comment", "--input", `{"owner":"acme","number":42,"body":"x"}`}, 0,
			map[string]any{"decision": "approval_required", "request": "external.write issues.comment acme#42"}},
		{[]string{"--op", "fs.read docs/x", "--tool", "issues.comment"}, 2, nil},
	} {
		args := append([]string{"policy", "explain", "--manifest", helperManifest, "--json"}, tc.args...)
		code, out, errs := norma(t, args...)
		if code != tc.code {
			t.Errorf("%v: exit %d, want %d (%s)", tc.args, code, tc.code, errs)
			continue
		}
		if tc.json == nil {
			continue
		}
		var got map[string]any
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Errorf("%v: not JSON: %s", tc.args, out)
			continue
		}
		for k, v := range tc.json {
			if got[k] != v {
				t.Errorf("%v: %s = %v, want %v", tc.args, k, got[k], v)
			}
		}
		for _, k := range []string{"decision", "reason", "layer", "rule", "request", "manifest_digest", "policy_generation", "trace"} {
			if _, ok := got[k]; !ok {
				t.Errorf("%v: JSON lacks %q", tc.args, k)
			}
		}
	}
}

func TestPolicyTest(t *testing.T) {
	code, out, errs := norma(t, "policy", "test", "testdata/policytest/cases.yaml")
	if code != 0 || !strings.Contains(out, "5 passed, 0 failed") {
		t.Fatalf("passing file: exit %d\n%s%s", code, out, errs)
	}
	code, out, _ = norma(t, "policy", "test", "testdata/policytest/failing.yaml")
	if code != 1 || !strings.Contains(out, "FAIL  3 comments need approval") || !strings.Contains(out, "+ got:    approval_required") {
		t.Fatalf("failing file: exit %d\n%s", code, out)
	}
}

// TestPolicyExplainBuiltinTool: --tool on a built-in tool decides on what
// its input declares, normalized as the gate does (paths, shell commands
// and their redirections), after schema validation; no --manifest needed.
func TestPolicyExplainBuiltinTool(t *testing.T) {
	for _, tc := range []struct {
		tool, input      string
		decision, reason string
	}{
		{"Read", `{"path":"docs/a.md"}`, "allow", "ALLOWED"},
		{"Read", `{"path":".env"}`, "deny", "FILESYSTEM_READ_DENIED"},
		{"Read", `{"file_path":"docs/a.md"}`, "deny", "SCHEMA_INVALID"},
		{"Write", `{"path":"../x","content":"y"}`, "deny", "PATH_ESCAPE"},
		{"Bash", `{"command":"cat docs/a.md > .env"}`, "deny", "FILESYSTEM_WRITE_DENIED"},
		// What cannot be known is never allowed: the gate asks.
		{"Bash", `{"command":"eval $X"}`, "approval_required", "COMMAND_UNPARSEABLE"},
		{"WebFetch", `{"url":"http://169.254.169.254/"}`, "deny", "NETWORK_DESTINATION_DENIED"},
	} {
		code, out, errs := norma(t, "policy", "explain", "--tool", tc.tool, "--input", tc.input, "--json")
		var got map[string]any
		if code != 0 || json.Unmarshal([]byte(out), &got) != nil {
			t.Errorf("%s %s: exit %d %s%s", tc.tool, tc.input, code, out, errs)
			continue
		}
		if got["decision"] != tc.decision || got["reason"] != tc.reason {
			t.Errorf("%s %s = %v %v, want %s %s", tc.tool, tc.input, got["decision"], got["reason"], tc.decision, tc.reason)
		}
	}
}
