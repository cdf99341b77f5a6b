package runtime_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/internal/treetest"
	"github.com/norma-run/norma/policy"
	"github.com/norma-run/norma/runtime"
	"github.com/norma-run/norma/sandbox/sandboxtest"
	"github.com/norma-run/norma/secret"
)

const identityCanary = "CANARY-identity-91c4"

// identityScript attacks the names the policy decides on: it renames,
// moves, links and recreates the parents of a deny rule's tree, of the
// workspace policy and settings, and of Norma's state directory inside the
// workspace, with real bash in the sandbox, then asks the file tools for
// what the new names would expose.
const identityScript = `turns:
  - tool_calls:
      - {id: mvdocs, name: Bash, input: {command: "mv docs docs2 && cat docs2/private/secret"}}
      - {id: mvpriv, name: Bash, input: {command: "mv docs/private docs/open && cat docs/open/secret"}}
      - {id: rmdocs, name: Bash, input: {command: "rm -r docs/private"}}
      - {id: readmoved, name: Read, input: {path: docs2/private/secret}}
      - {id: readopen, name: Read, input: {path: docs/open/secret}}
      - {id: mvnorma, name: Bash, input: {command: "mv .norma x && mkdir .norma && printf 'widening' > .norma/policy.yaml"}}
      - {id: mvnorma1, name: Bash, input: {command: "mv .norma x"}}
      - {id: mvnormasc, name: Bash, input: {command: "printf 'mv .norma x && mkdir .norma && printf widening > .norma/policy.yaml' | sh"}}
      - {id: writesc, name: Bash, input: {command: "printf 'printf widening > .norma/policy.yaml; printf widening > .norma/settings.yaml' | sh"}}
      - {id: rmnorma, name: Bash, input: {command: "rm -rf .norma/policy.yaml .norma/settings.yaml"}}
      - {id: lnsettings, name: Bash, input: {command: "ln .norma/settings.yaml s.yaml && printf 'widening' >> s.yaml"}}
      - {id: cpal, name: Bash, input: {command: "cp -al .norma n2 && printf 'widening' >> n2/policy.yaml"}}
      - {id: mvsettings, name: Bash, input: {command: "mv .norma/settings.yaml .norma/old.yaml"}}
      - {id: writepolicy, name: Bash, input: {command: "printf 'widening' > .norma/policy.yaml"}}
      - {id: lsstate, name: Bash, input: {command: "ls -la .local/state/norma"}}
      - {id: catkey, name: Bash, input: {command: "cat .local/state/norma/secrets/vault.key"}}
      - {id: mvstate, name: Bash, input: {command: "mv .local/state x && cat x/norma/secrets/vault.key"}}
      - {id: mvlocal, name: Bash, input: {command: "mv .local y && cat y/state/norma/secrets/vault.key"}}
      - {id: findkey, name: Bash, input: {command: "grep -r CANARY . ; find . -name vault.key"}}
      - {id: readkey, name: Read, input: {path: .local/state/norma/secrets/vault.key}}
      - {id: globstate, name: Glob, input: {pattern: ".local/**"}}
      - {id: grepstate, name: Grep, input: {pattern: CANARY, path: .local}}
      - {id: grepall, name: Grep, input: {pattern: CANARY}}
  - text: done
`

// TestProtectionByIdentity performs the attacks of identityScript through
// a run of the workspace runtime (the gate, the built-in tools, the shell
// in the real sandbox) with Norma's state directory inside the workspace
// (--home WS/.local/state/norma). Every Bash attack fails, every file tool
// is refused or finds nothing, the canaries never reach the model, and the
// workspace — the policy and settings files byte for byte, the state
// directory, the denied tree — is exactly what it was.
func TestProtectionByIdentity(t *testing.T) {
	sandboxtest.Require(t)
	dir := t.TempDir()
	home := filepath.Join(dir, ".local/state/norma")
	files := map[string]string{
		"docs/intro.md":                                    "# intro\n",
		"docs/private/secret":                              identityCanary + " private\n",
		".norma/policy.yaml":                               "schema_version: 2\nkind: workspace\n",
		".norma/settings.yaml":                             "permissions: {}\n",
		".norma/memory/notes.md":                           "notes\n",
		filepath.Join(home, "secrets", secret.KeyFileName): identityCanary + " key\n",
		filepath.Join(home, "runs/old/state.json"):         `{"canary": "` + identityCanary + `"}`,
	}
	for name, body := range files {
		p := name
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, name)
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rules := policy.Rules{Allow: []string{"Bash", "Read", "Glob", "Grep"}, Deny: []string{"Read(workspace://docs/private/**)"}}
	rt, err := runtime.Open(t.Context(), runtime.Options{Dir: dir, Home: home, Rules: rules, Audit: nopSink{}})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	// The sandbox makes the agent-file floor's missing directories at the
	// first command (sandboxpolicy.Derive); made here, so that the
	// comparison sees what the attacks change.
	for _, d := range []string{".claude", ".codex", ".gemini", ".cursor", ".vscode"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// After Open, which records the workspace files it accepted (their
	// first sight) in the state directory: from here on, nothing changes.
	before := treetest.Snapshot(t, dir)
	s := scriptedSession(t, rt, identityScript)
	out, err := s.Run(t.Context(), "break the names")
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Calls) != 23 {
		t.Fatalf("calls = %d, want 23", len(out.Calls))
	}
	for _, c := range out.Calls {
		if strings.Contains(c.Result+c.Message, identityCanary) {
			t.Errorf("call %s showed the model a canary: %q %q", c.ID, c.Result, c.Message)
		}
		switch {
		case c.Tool == "Bash" && c.ID == "findkey":
			// It runs; it must find nothing (checked by the canary scan).
		case c.Tool == "Bash":
			if !c.IsError && c.Decision == capability.Allow.String() && strings.HasSuffix(c.Result, "[exit code 0]") {
				t.Errorf("Bash %s succeeded: %q", c.ID, c.Result)
			}
		case c.ID == "globstate" || c.ID == "grepstate" || c.ID == "grepall":
			if !c.IsError && strings.Contains(c.Result, "vault.key") {
				t.Errorf("%s listed the state directory: %q", c.ID, c.Result)
			}
		default:
			if !c.IsError {
				t.Errorf("%s %s was not refused: %q", c.Tool, c.ID, c.Result)
			}
		}
		t.Logf("%s %s: %s %s %q %q", c.ID, c.Tool, c.Decision, c.Reason, c.Result, c.Message)
	}
	// mv across a pinned directory falls back to copying, and cp -al to
	// copying what it cannot link: the attacker's partial copies hold no
	// canary (the hidden trees came out empty). They are removed before
	// the comparison, which then shows that nothing that was there
	// changed.
	for _, extra := range []string{"x", "n2"} {
		for _, line := range treetest.Snapshot(t, filepath.Join(dir, extra)) {
			if strings.Contains(line, "nlink=1 sha256=") {
				t.Errorf("the copy %s holds a file: %s", extra, line)
			}
		}
		os.RemoveAll(filepath.Join(dir, extra))
	}
	treetest.Equal(t, dir, before)
}

// TestStateDirByIdentity: the file tools refuse Norma's state directory by
// identity. The state directory is named through a symbolic link (the
// floor resolves it, so the deny rule names the real directory), and is
// then renamed on the host after the session started, which no sandboxed
// process can do: under its new name no deny rule matches, and Read,
// Glob and Grep still refuse it or find nothing in it, and Bash finds it
// hidden (the sandbox hides it by identity too).
func TestStateDirByIdentity(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, ".local/state/norma")
	if err := os.MkdirAll(filepath.Join(state, "secrets"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(state, "secrets", secret.KeyFileName), []byte(identityCanary), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(".local/state/norma", filepath.Join(dir, "state-link")); err != nil {
		t.Fatal(err)
	}
	const script = `turns:
  - tool_calls:
      - {id: byname, name: Read, input: {path: .local/state/norma/secrets/vault.key}}
      - {id: moved, name: Read, input: {path: .local/state/moved/secrets/vault.key}}
      - {id: glob, name: Glob, input: {pattern: "**/vault.key"}}
      - {id: grep, name: Grep, input: {pattern: CANARY}}
      - {id: bash, name: Bash, input: {command: "cat .local/state/moved/secrets/vault.key; ls -la .local/state/moved; grep -r CANARY ."}}
  - text: done
`
	sandboxtest.Require(t)
	rt, err := runtime.Open(t.Context(), runtime.Options{Dir: dir, Home: filepath.Join(dir, "state-link"),
		Rules: policy.Rules{Allow: []string{"Read", "Glob", "Grep", "Bash"}}, Audit: nopSink{}})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	s := scriptedSession(t, rt, script)
	if err := os.Rename(state, filepath.Join(dir, ".local/state/moved")); err != nil {
		t.Fatal(err)
	}
	out, err := s.Run(t.Context(), "read the state")
	if err != nil {
		t.Fatal(err)
	}
	// byname: the floor's deny names the real directory, though the state
	// directory was given through state-link.
	want := map[string]string{"byname": string(capability.ReasonFilesystemReadDenied), "moved": string(capability.ReasonProtectedPath), "glob": "ALLOWED", "grep": "ALLOWED", "bash": "ALLOWED"}
	for _, c := range out.Calls {
		if strings.Contains(c.Result+c.Message, identityCanary) || (c.Tool != "Bash" && strings.Contains(c.Result, "moved/")) ||
			(c.Tool == "Bash" && !strings.Contains(c.Result, "ls: cannot open directory '.local/state/moved': Permission denied")) {
			t.Errorf("call %s reached the state directory: %q %q", c.ID, c.Result, c.Message)
		}
		if c.Reason != want[c.ID] {
			t.Errorf("call %s = %s %q, want %s", c.ID, c.Reason, c.Message, want[c.ID])
		}
	}
}

// TestWorkspaceInsideStateDir: a workspace inside Norma's state directory
// is refused (its tools would reach the state below it under names no
// deny rule matches); the state directory as the workspace itself is
// allowed, and the floor then denies every path of it.
func TestWorkspaceInsideStateDir(t *testing.T) {
	home := t.TempDir()
	inside := filepath.Join(home, "runs")
	if err := os.MkdirAll(inside, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := runtime.Open(t.Context(), runtime.Options{Dir: inside, Home: home, Audit: nopSink{}, NoSandbox: true}); err == nil ||
		!strings.Contains(err.Error(), "inside Norma's state directory") {
		t.Fatalf("Open(workspace inside the state directory) = %v, want a refusal", err)
	}
	rt, err := runtime.Open(t.Context(), runtime.Options{Dir: home, Home: home, Audit: nopSink{}, NoSandbox: true})
	if err != nil {
		t.Fatalf("Open(workspace = state directory) = %v", err)
	}
	rt.Close()
}
