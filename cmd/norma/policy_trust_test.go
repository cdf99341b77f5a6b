package main

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// policyChanges are the policy_change events of a run's --json output, by
// file.
func policyChanges(t *testing.T, out string) map[string]map[string]any {
	t.Helper()
	got := map[string]map[string]any{}
	for _, ev := range jsonLines(t, out) {
		if ev["event"] == "policy_change" {
			got[ev["file"].(string)] = ev
		}
	}
	return got
}

// TestAttackAgentWidensWorkspaceFiles: the agent's Bash, approved with
// --yes (the analyzer cannot name a computed redirection target, and the
// files do not exist yet, so the sandbox has nothing to hide), writes a
// workspace policy that opens a loopback destination and a local settings
// file that allows WebFetch. The next run, headless, does not apply them:
// WebFetch of that destination is refused and the server sees nothing,
// the delta is on stderr (escaped) and in the JSON. A narrowing file the
// agent writes is applied at once. `norma policy trust` without --yes
// (no terminal) accepts nothing; with --yes the widening applies.
func TestAttackAgentWidensWorkspaceFiles(t *testing.T) {
	e := newRunEnv(t)
	env := rtEnv(t)
	web := newWebServer(t)
	run := func(script string, args ...string) (int, string, string) {
		t.Helper()
		a := append([]string{"--home", e.home, "run", "--workspace", e.ws, "--script", e.script(t, script), "--json"}, args...)
		return doorEnv(t, env, append(a, "go")...)
	}
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	pol := fmt.Sprintf("schema_version: 2\nkind: workspace\npermissions:\n  network:\n    requests:\n      - {origin: %q, methods: [GET], paths: [\"/page\"]}\n    allow_private: [\"127.0.0.1/32\"]\n", web.origin)
	local := "permissions:\n  allow: [WebFetch]\n"
	code, out, errs := run(fmt.Sprintf(`turns:
  - tool_calls:
      - {id: w, name: Bash, input: {command: "d=.norma; mkdir -p $d; echo %s | base64 -d > $d/policy.yaml; echo %s | base64 -d > $d/settings.local.yaml"}}
  - text: done
`, b64(pol), b64(local)), "--yes")
	if code != 0 {
		t.Fatalf("run 1: exit %d\n%s%s", code, out, errs)
	}
	for name, want := range map[string]string{".norma/policy.yaml": pol, ".norma/settings.local.yaml": local} {
		if b, err := os.ReadFile(filepath.Join(e.ws, name)); err != nil || string(b) != want {
			t.Fatalf("the agent did not write %s (%v): the attack did not happen\n%s", name, err, out)
		}
	}

	fetch := "turns:\n  - tool_calls:\n      - {id: f, name: WebFetch, input: {url: \"" + web.origin + "/page\"}}\n      - {id: r, name: Read, input: {path: docs/intro.md}}\n  - text: done\n"
	code, out, errs = run(fetch, "--yes")
	if code != 0 {
		t.Fatalf("run 2: exit %d\n%s%s", code, out, errs)
	}
	if f := toolCalls(jsonLines(t, out))["f"]; f == nil || f["decision"] != "deny" {
		t.Errorf("the held widening applied: WebFetch %v", f)
	}
	if web.asked("/page") {
		t.Fatal("the loopback server was asked for /page under a held policy")
	}
	held := policyChanges(t, out)
	for _, name := range []string{".norma/policy.yaml", ".norma/settings.local.yaml"} {
		if c := held[name]; c == nil || c["held"] != true || c["first_sight"] != true {
			t.Errorf("no held policy_change for %s in the JSON: %v", name, c)
		}
	}
	for _, want := range []string{".norma/settings.local.yaml widens the built-in defaults and has not been accepted: not applied",
		"+ added permissions.allow WebFetch", "+ added network.allow_private 127.0.0.1/32", "norma policy trust --workspace"} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}
	ex := rtExplain(t, env, e.home, e.ws, "--tool", "WebFetch", "--input", `{"url":"`+web.origin+`/page"}`)
	if ex["decision"] != "deny" {
		t.Errorf("explain applies the held widening: %v %v", ex["decision"], ex["reason"])
	}

	// A narrowing the agent writes applies at once.
	deny := "permissions:\n  deny: [\"Read(docs/**)\"]\n"
	if code, out, errs := run(fmt.Sprintf("turns:\n  - tool_calls:\n      - {id: n, name: Bash, input: {command: \"d=.norma; echo %s | base64 -d > $d/settings.yaml\"}}\n  - text: done\n", b64(deny)), "--yes"); code != 0 {
		t.Fatalf("run 3: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs = run(fetch, "--yes")
	if code != 0 {
		t.Fatalf("run 4: exit %d\n%s%s", code, out, errs)
	}
	calls := toolCalls(jsonLines(t, out))
	if r := calls["r"]; r == nil || r["decision"] != "deny" {
		t.Errorf("the narrowing did not apply: Read docs/intro.md %v", r)
	}
	if c := policyChanges(t, out)[".norma/settings.yaml"]; c == nil || c["held"] != false {
		t.Errorf("policy_change of the narrowing = %v", c)
	}
	if f := calls["f"]; f == nil || f["decision"] != "deny" || web.asked("/page") {
		t.Errorf("run 4 applied the held widening: %v", f)
	}

	// No terminal, no --yes: nothing is accepted.
	code, out, errs = doorEnv(t, env, "--home", e.home, "policy", "trust", "--workspace", e.ws)
	if code != exitConsent || !strings.Contains(out, "+ added permissions.allow WebFetch") {
		t.Fatalf("policy trust without --yes: exit %d, want %d\n%s%s", code, exitConsent, out, errs)
	}
	code, out, errs = doorEnv(t, env, "--home", e.home, "policy", "trust", "--workspace", e.ws, "--yes")
	if code != 0 || !strings.Contains(out, "accepted") {
		t.Fatalf("policy trust --yes: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs = run(fetch, "--yes")
	if code != 0 {
		t.Fatalf("run 5: exit %d\n%s%s", code, out, errs)
	}
	calls = toolCalls(jsonLines(t, out))
	if f := calls["f"]; f == nil || f["decision"] != "allow" || !web.asked("/page") {
		t.Errorf("after policy trust --yes, WebFetch %v (server asked %v)", f, web.paths)
	}
	if r := calls["r"]; r == nil || r["decision"] != "deny" {
		t.Errorf("the accepted narrowing no longer applies: %v", r)
	}
	if len(policyChanges(t, out)) != 0 || strings.Contains(errs, "not applied") {
		t.Errorf("after acceptance a change is still reported:\n%s%s", out, errs)
	}
}

// trustWorkspace accepts the workspace's policy and settings files as they
// are, the way a user does: `norma policy trust --yes`.
func trustWorkspace(t *testing.T, env []string, home, ws string) {
	t.Helper()
	if code, out, errs := doorEnv(t, env, "--home", home, "policy", "trust", "--workspace", ws, "--yes"); code != 0 {
		t.Fatalf("policy trust: exit %d\n%s%s", code, out, errs)
	}
}

// TestDoorPolicyTrustOnTerminal: on a terminal the run shows a held
// file's delta and asks; no keeps the accepted version (the write the
// file would allow is refused and nothing is written), yes applies it and
// records it, so the next headless run applies it without a word.
func TestDoorPolicyTrustOnTerminal(t *testing.T) {
	e := newRunEnv(t)
	env := isolated(t)
	rtWrite(t, filepath.Join(e.ws, ".norma", "settings.local.yaml"), "permissions:\n  allow: [\"Write(out/**)\"]\n", 0o644)
	script := e.script(t, "turns:\n  - tool_calls:\n      - {id: w, name: Write, input: {path: out/a.md, content: one}}\n  - text: done\n")
	target := filepath.Join(e.ws, "out", "a.md")
	const ask = "Accept this change of .norma/settings.local.yaml for this workspace? [y/N] "
	for _, answer := range []string{"n", "y"} {
		r := startOnTerminal(t, env, "--home", e.home, "run", "--workspace", e.ws, "--script", script, "--mode", "dontAsk", "write")
		r.waitFor(ask, 1)
		if !strings.Contains(r.out.String(), "+ added permissions.allow Write(out/**)") {
			t.Errorf("the prompt does not show the delta:\n%s", r.out.String())
		}
		r.answer(answer)
		if code := r.wait(); code != 0 {
			t.Fatalf("run (%s): exit %d\n%s%s", answer, code, r.out.String(), r.errb.String())
		}
		_, err := os.Stat(target)
		if written := err == nil; written != (answer == "y") {
			t.Errorf("answer %s: out/a.md written = %v\n%s", answer, written, r.out.String())
		}
	}
	os.Remove(target)
	code, out, errs := doorEnv(t, env, "--home", e.home, "run", "--workspace", e.ws, "--script", script, "--mode", "dontAsk", "--json", "write")
	if c := toolCalls(jsonLines(t, out))["w"]; code != 0 || c == nil || c["decision"] != "allow" || len(policyChanges(t, out)) != 0 || strings.Contains(errs, "not applied") {
		t.Errorf("after yes at the terminal: exit %d, %v\n%s%s", code, c, out, errs)
	}
}

// TestAttackAgentReplacesAcceptedPolicy: the user accepted a policy whose
// network ceiling is empty, under settings that list a loopback
// destination. The agent's Bash moves .norma aside and recreates it with a
// policy that has no network section (no ceiling) and the same settings.
// The next run keeps the accepted ceiling: WebFetch is refused and the
// server sees nothing. (Where the rename itself is refused, the policy is
// unchanged and the run is refused all the same.)
func TestAttackAgentReplacesAcceptedPolicy(t *testing.T) {
	e := newRunEnv(t)
	env := rtEnv(t)
	web := newWebServer(t)
	st := fmt.Sprintf("permissions:\n  allow: [WebFetch]\nnetwork:\n  requests:\n    - {origin: %q, methods: [GET], paths: [\"/page\"]}\n  allow_private: [\"127.0.0.1/32\"]\n", web.origin)
	rtWrite(t, filepath.Join(e.ws, ".norma", "policy.yaml"), "schema_version: 2\nkind: workspace\npermissions:\n  network: {requests: []}\n", 0o644)
	rtWrite(t, filepath.Join(e.ws, ".norma", "settings.yaml"), st, 0o644)
	trustWorkspace(t, env, e.home, e.ws)
	wide := "schema_version: 2\nkind: workspace\npermissions: {}\n"
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	run := func(script string) (int, string, string) {
		t.Helper()
		return doorEnv(t, env, "--home", e.home, "run", "--workspace", e.ws, "--script", e.script(t, script), "--json", "--yes", "go")
	}
	if code, out, errs := run(fmt.Sprintf("turns:\n  - tool_calls:\n      - {id: m, name: Bash, input: {command: \"d=.norma; mv $d .n2 && mkdir $d && echo %s | base64 -d > $d/policy.yaml && echo %s | base64 -d > $d/settings.yaml\"}}\n  - text: done\n", b64(wide), b64(st))); code != 0 {
		t.Fatalf("run 1: exit %d\n%s%s", code, out, errs)
	}
	b, _ := os.ReadFile(filepath.Join(e.ws, ".norma", "policy.yaml"))
	replaced := string(b) == wide
	code, out, errs := run("turns:\n  - tool_calls:\n      - {id: f, name: WebFetch, input: {url: \"" + web.origin + "/page\"}}\n  - text: done\n")
	if code != 0 {
		t.Fatalf("run 2: exit %d\n%s%s", code, out, errs)
	}
	if f := toolCalls(jsonLines(t, out))["f"]; f == nil || f["decision"] != "deny" || web.asked("/page") {
		t.Fatalf("WebFetch past the accepted ceiling: %v (server saw %v)", f, web.paths)
	}
	if !replaced {
		t.Log("the agent could not replace .norma: the rename was refused")
		return
	}
	if c := policyChanges(t, out)[".norma/policy.yaml"]; c == nil || c["held"] != true || !strings.Contains(errs, "+ widened network.requests the listed destinations → any destination") {
		t.Errorf("the replaced policy is not reported held: %v\n%s", c, errs)
	}
}
