package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/norma-run/norma/internal/treetest"
	"github.com/norma-run/norma/sandbox/sandboxtest"
	"github.com/norma-run/norma/secret"
)

// identityDoorScript renames, moves and links the parents of what the
// policy protects by name, with real bash in the sandbox, then asks the
// file tools for the state directory and for what a rename would have
// exposed.
const identityDoorScript = `turns:
  - tool_calls:
      - {id: lsstate, name: Bash, input: {command: "ls -la .local/state/norma"}}
      - {id: catkey, name: Bash, input: {command: "cat .local/state/norma/secrets/vault.key"}}
      - {id: mvstate, name: Bash, input: {command: "mv .local/state x"}}
      - {id: mvlocal, name: Bash, input: {command: "mv .local y && cat y/state/norma/secrets/vault.key"}}
      - {id: mvdocs, name: Bash, input: {command: "mv docs docs2 && cat docs2/private/secret"}}
      - {id: mvnorma, name: Bash, input: {command: "printf 'mv .norma x && mkdir .norma && printf widening > .norma/policy.yaml' | sh"}}
      - {id: lnpolicy, name: Bash, input: {command: "ln .norma/policy.yaml p.yaml"}}
      - {id: readmoved, name: Read, input: {path: docs2/private/secret}}
      - {id: readkey, name: Read, input: {path: .local/state/norma/secrets/vault.key}}
      - {id: globstate, name: Glob, input: {pattern: ".local/**"}}
      - {id: grepstate, name: Grep, input: {pattern: ".", path: .local/state/norma}}
  - text: done
`

// TestDoorProtectionByIdentity: `norma run --home WS/.local/state/norma`
// (the default layout when an agent runs in the home directory), through
// the built binary. The state directory, created by `norma secret set`,
// is unreachable to Bash (ls, cat of the vault key, mv of its parents all
// fail in the sandbox) and to Read, Glob and Grep; renaming the parent of
// a tree the workspace policy denies, or of the policy itself, fails. The
// canary (the secret's value and the denied file's content) and the vault
// key never appear in any output, and the policy file, the vault and the
// denied tree are byte-identical afterwards.
func TestDoorProtectionByIdentity(t *testing.T) {
	sandboxtest.Require(t)
	ws := t.TempDir()
	home := filepath.Join(ws, ".local/state/norma")
	policy := "schema_version: 2\nkind: workspace\npermissions:\n  filesystem:\n    deny: [workspace://docs/private/**]\n"
	for name, body := range map[string]string{
		"docs/intro.md":       "# intro\n",
		"docs/private/secret": runCanary + "\n",
		".norma/policy.yaml":  policy,
	} {
		p := filepath.Join(ws, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	set := exec.Command(normaBin(t), "--home", home, "secret", "set", "api_token")
	set.Stdin = strings.NewReader(runCanary + "\n")
	if out, err := set.CombinedOutput(); err != nil {
		t.Fatalf("norma secret set: %v\n%s", err, out)
	}
	key, err := os.ReadFile(filepath.Join(home, "secrets", secret.KeyFileName))
	if err != nil || len(key) == 0 {
		t.Fatalf("vault key: %q, %v", key, err)
	}
	// The sandbox makes the agent-file floor's missing directories at the
	// first command (sandboxpolicy.Derive); made here, so that the
	// comparison sees what the attacks change.
	for _, d := range []string{".claude", ".codex", ".gemini", ".cursor", ".vscode"} {
		if err := os.Mkdir(filepath.Join(ws, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// The run writes its own state under home; everything else must stay.
	before := treetest.Snapshot(t, ws)
	secretsBefore := treetest.Snapshot(t, filepath.Join(home, "secrets"))
	script := filepath.Join(t.TempDir(), "script.yaml")
	if err := os.WriteFile(script, []byte(identityDoorScript), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := door(t, "--home", home, "run", "--workspace", ws, "--script", script, "--yes", "--json", "go")
	if code != 0 {
		t.Fatalf("run: exit %d\n%s%s", code, out, errs)
	}
	if k := strings.TrimSpace(string(key)); strings.Contains(out+errs, k) {
		t.Errorf("the vault key reached the output:\n%s", out)
	}
	calls := toolCalls(jsonLines(t, out))
	if len(calls) != 11 {
		t.Fatalf("calls = %d, want 11:\n%s", len(calls), out)
	}
	for id, c := range calls {
		res, _ := c["result"].(string)
		isErr, _ := c["is_error"].(bool)
		switch {
		case c["tool"] == "Bash":
			if !isErr && c["decision"] == "allow" && strings.HasSuffix(res, "[exit code 0]") {
				t.Errorf("Bash %s succeeded: %q", id, res)
			}
		case id == "globstate" || id == "grepstate":
			if !isErr && (strings.Contains(res, "vault") || strings.Contains(res, "secrets")) {
				t.Errorf("%s listed the state directory: %q", id, res)
			}
		default:
			if !isErr {
				t.Errorf("%s was not refused: %q", id, res)
			}
		}
	}
	for _, id := range []string{"mvstate", "mvlocal", "mvdocs", "mvnorma"} {
		if r, _ := calls[id]["result"].(string); !strings.Contains(r, "Device or resource busy") && !strings.Contains(r, "Permission denied") {
			t.Errorf("%s: %q; want the sandbox's refusal", id, r)
		}
	}
	// mv .local/state x falls back to a copy across the pin, which finds
	// the state directory unreadable: the copy holds no file.
	for _, line := range treetest.Snapshot(t, filepath.Join(ws, "x")) {
		if strings.Contains(line, "sha256=") {
			t.Errorf("the copy x holds a file: %s", line)
		}
	}
	os.RemoveAll(filepath.Join(ws, "x"))
	treetest.Equal(t, filepath.Join(home, "secrets"), secretsBefore)
	var kept []string
	for _, l := range before {
		if !strings.HasPrefix(l, ".local/state/norma") {
			kept = append(kept, l)
		}
	}
	var now []string
	for _, l := range treetest.Snapshot(t, ws) {
		if !strings.HasPrefix(l, ".local/state/norma") {
			now = append(now, l)
		}
	}
	if strings.Join(kept, "\n") != strings.Join(now, "\n") {
		t.Errorf("the workspace changed outside the state directory:\nbefore\n%s\nafter\n%s", strings.Join(kept, "\n"), strings.Join(now, "\n"))
	}
}

// TestDoorHardLinkToDeniedTree: a hard link to a file of a denied tree,
// made before the deny rule existed, does not show the file's content
// under its other name. Bash refuses to start (the sandbox cannot hide a
// file with several names, and says which), the Read tool refuses the
// link, and the canary never appears in any output.
func TestDoorHardLinkToDeniedTree(t *testing.T) {
	sandboxtest.Require(t)
	ws := t.TempDir()
	for name, body := range map[string]string{
		"docs/private/secret": runCanary + "\n",
		".norma/policy.yaml":  "schema_version: 2\nkind: workspace\npermissions:\n  filesystem:\n    deny: [workspace://docs/private/**]\n",
		"notes/readme.md":     "notes\n",
	} {
		p := filepath.Join(ws, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Link(filepath.Join(ws, "docs/private/secret"), filepath.Join(ws, "notes/link")); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(t.TempDir(), "script.yaml")
	if err := os.WriteFile(script, []byte("turns:\n  - tool_calls:\n"+
		"      - {id: bash, name: Bash, input: {command: \"cat notes/link\"}}\n"+
		"      - {id: read, name: Read, input: {path: notes/link}}\n  - text: done\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := door(t, "--home", t.TempDir(), "run", "--workspace", ws, "--script", script, "--yes", "--json", "go")
	if code != 0 {
		t.Fatalf("run: exit %d\n%s%s", code, out, errs)
	}
	if strings.Contains(out+errs, runCanary) {
		t.Fatalf("the denied file's content reached the output:\n%s", out)
	}
	calls := toolCalls(jsonLines(t, out))
	if c := calls["bash"]; c == nil || c["is_error"] != true || c["reason"] != "SANDBOX_SPEC_INVALID" || !strings.Contains(fmt.Sprint(c["message"]), "notes/link") {
		t.Errorf("Bash cat notes/link = %v; want SANDBOX_SPEC_INVALID naming notes/link", c)
	}
	if c := calls["read"]; c == nil || c["reason"] != "HARDLINK_REFUSED" {
		t.Errorf("Read notes/link = %v; want HARDLINK_REFUSED", c)
	}
}
