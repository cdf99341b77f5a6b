package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// heldSettings is what a repository ships in .norma/settings.yaml: an
// allow, which waits for `norma policy trust` on a fresh clone, and a
// deny, which narrows and applies at once.
const heldSettings = "permissions:\n  allow: [\"Bash(git status:*)\"]\n  deny: [\"Read(./secrets/**)\"]\n"

// heldSummary is the held message's line for heldSettings.
const heldSummary = "held: 1 allow rule waits for `norma policy trust`; 1 deny rule applies now"

// freshClone is a workspace as a fresh clone of a repository that ships
// heldSettings, with the canary in secrets/key.txt and a readable
// control file; nothing of it was ever accepted.
func freshClone(t *testing.T) string {
	t.Helper()
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	rtWrite(t, filepath.Join(ws, ".norma", "settings.yaml"), heldSettings, 0o644)
	rtWrite(t, filepath.Join(ws, "secrets", "key.txt"), "KEY="+runCanary+"\n", 0o600)
	rtWrite(t, filepath.Join(ws, "docs", "intro.md"), "# Intro\nhello\n", 0o644)
	return ws
}

// TestDoorHookHeldDenyApplies: `norma hook claude-code` in a fresh clone
// whose settings both allow and deny: Claude Code's Read of
// secrets/key.txt is denied by the deny rule (RULE_DENIED), the key never
// reaches the output, and stderr says that the allow waits and the deny
// applies now. The control, Read of docs/intro.md, is allowed. After
// `norma policy trust --yes` the deny still applies and nothing is held.
func TestDoorHookHeldDenyApplies(t *testing.T) {
	ws := freshClone(t)
	home := t.TempDir()
	env := append(isolated(t), "NORMA_HOME="+home, "HOME="+t.TempDir())
	h := &hookEnv{ws: ws, home: home, env: env}
	hook := func(id, path string) (int, preAnswer, string) {
		t.Helper()
		cmd := exec.Command(normaBin(t), "hook", "claude-code")
		cmd.Env = append(os.Environ(), env...)
		cmd.Dir = ws
		cmd.Stdin = strings.NewReader(string(h.pre("Read", id, map[string]any{"file_path": filepath.Join(ws, path)})))
		code, out, errs := doorCmd(t, cmd)
		if strings.Contains(out+errs, runCanary) || strings.Contains(out+errs, "KEY=") {
			t.Fatalf("the key reached the output:\n%s%s", out, errs)
		}
		return code, parsePre(t, out), errs
	}

	code, ans, errs := hook("toolu_control", "docs/intro.md")
	if code != 0 || ans.HookSpecificOutput.PermissionDecision != "allow" {
		t.Fatalf("control Read docs/intro.md: exit %d, %+v\n%s", code, ans, errs)
	}
	code, ans, errs = hook("toolu_secret", "secrets/key.txt")
	if d := ans.HookSpecificOutput; code != 0 || d.PermissionDecision != "deny" || !strings.HasPrefix(d.PermissionDecisionReason, "NORMA RULE_DENIED") {
		t.Fatalf("Read secrets/key.txt: exit %d, %+v; want deny RULE_DENIED\n%s", code, d, errs)
	}
	if !strings.Contains(errs, heldSummary) || !strings.Contains(errs, "norma policy trust --workspace") {
		t.Errorf("stderr does not say what is held and what applies:\n%s", errs)
	}

	// The listing of `norma policy trust` says the same.
	code, out, errs := doorEnv(t, env, "--home", home, "policy", "trust", "--workspace", ws)
	if code != exitConsent || !strings.Contains(out, heldSummary) {
		t.Errorf("policy trust without --yes: exit %d, want %d and %q\n%s%s", code, exitConsent, heldSummary, out, errs)
	}
	trustWorkspace(t, env, home, ws)
	code, ans, errs = hook("toolu_secret_2", "secrets/key.txt")
	if d := ans.HookSpecificOutput; code != 0 || d.PermissionDecision != "deny" || !strings.HasPrefix(d.PermissionDecisionReason, "NORMA RULE_DENIED") {
		t.Fatalf("after trust, Read secrets/key.txt: exit %d, %+v\n%s", code, d, errs)
	}
	if strings.Contains(errs, "held:") {
		t.Errorf("after trust the file is still reported held:\n%s", errs)
	}
}

// TestDoorRunHeldDenyApplies: `norma run` in a fresh clone, headless, with
// a scripted model that reads secrets/key.txt: the call is refused by the
// shipped deny although the file as a whole is held, the key is never in
// the output, and the held message on stderr names what applies now. A
// shipped workspace policy (.norma/policy.yaml) whose deny glob comes with
// a widening is held the same way: its deny glob applies.
func TestDoorRunHeldDenyApplies(t *testing.T) {
	for _, tc := range []struct {
		name, file, body, reason, summary string
	}{
		{"settings", ".norma/settings.yaml", heldSettings, "RULE_DENIED", heldSummary},
		{"policy", ".norma/policy.yaml",
			"schema_version: 2\nkind: workspace\npermissions:\n  filesystem: {deny: [\"workspace://secrets/**\"]}\n  network: {allow_private: [\"127.0.0.1/32\"]}\n",
			"FILESYSTEM_READ_DENIED", "held: 1 private address range waits for `norma policy trust`; 1 deny glob applies now"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws := freshClone(t)
			if tc.file != ".norma/settings.yaml" {
				os.Remove(filepath.Join(ws, ".norma", "settings.yaml"))
				rtWrite(t, filepath.Join(ws, tc.file), tc.body, 0o644)
			}
			e := runEnv{home: t.TempDir(), ws: ws}
			script := e.script(t, "turns:\n  - tool_calls:\n      - {id: s, name: Read, input: {path: secrets/key.txt}}\n      - {id: c, name: Read, input: {path: docs/intro.md}}\n  - text: done\n")
			code, out, errs := doorEnv(t, isolated(t), "--home", e.home, "run", "--workspace", ws, "--script", script, "--json", "read the key")
			if code != 0 {
				t.Fatalf("run: exit %d\n%s%s", code, out, errs)
			}
			if strings.Contains(out+errs, runCanary) || strings.Contains(out+errs, "KEY=") {
				t.Fatalf("the key reached the output:\n%s%s", out, errs)
			}
			calls := toolCalls(jsonLines(t, out))
			if s := calls["s"]; s == nil || s["decision"] != "deny" || s["reason"] != tc.reason {
				t.Errorf("Read secrets/key.txt = %v, want deny %s", s, tc.reason)
			}
			if c := calls["c"]; c == nil || c["decision"] != "allow" {
				t.Errorf("control Read docs/intro.md = %v, want allow", c)
			}
			if c := policyChanges(t, out)[tc.file]; c == nil || c["held"] != true {
				t.Errorf("policy_change of %s = %v, want held", tc.file, c)
			}
			if !strings.Contains(errs, tc.summary) {
				t.Errorf("stderr lacks %q:\n%s", tc.summary, errs)
			}
		})
	}
}
