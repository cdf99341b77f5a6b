package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/norma-run/norma/door/agenthook"
	"github.com/norma-run/norma/internal/fakeopenai"
)

// The Codex CLI end-to-end door: the real Codex (0.171.0, from
// $NORMA_TEST_CODEX), offline against the loopback fake of the Responses
// API, in a throwaway CODEX_HOME whose model provider is the fake. The
// scripted model asks for `cat .env`; Codex runs its PreToolUse hooks
// (those it trusts), and sends the call's output, or the hook's refusal,
// back to the fake, where the test reads it.

// testCodexBin is $NORMA_TEST_CODEX (see clientBin).
func testCodexBin(t *testing.T) string { return clientBin(t, "NORMA_TEST_CODEX", "codex") }

// codexCatEnv is the call the scripted model asks for, and its call_id.
var codexCatEnv = fakeopenai.CallID(0, 1)

// codexEnv is one Codex session's world: Norma's state directory and user
// settings, the user's home, Codex's home (its config.toml names the fake
// as the model provider), the workspace (a git repository whose .env holds
// the run canary), the fake API.
type codexEnv struct {
	runEnv
	xdg, userHome, codexHome string
	api                      *fakeopenai.Server
}

func newCodexEnv(t *testing.T) *codexEnv {
	t.Helper()
	testCodexBin(t)
	e := &codexEnv{runEnv: newRunEnv(t), xdg: t.TempDir(), userHome: t.TempDir(), codexHome: t.TempDir()}
	if b, err := exec.Command("git", "-C", e.ws, "init", "-q").CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, b)
	}
	api, err := fakeopenai.New(
		fakeopenai.Turn{{Text: "Let me look at the environment file."}, {Tool: "exec_command", Input: map[string]any{"cmd": "cat .env"}}},
		fakeopenai.Turn{{Text: "Done."}},
	)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { api.Close() })
	e.api = api
	// The provider's keys come first: the hooks.state tables Codex adds
	// go after them.
	rtWrite(t, filepath.Join(e.codexHome, "config.toml"), `model = "gpt-fake"
model_provider = "fake"

[model_providers.fake]
name = "fake"
base_url = "`+api.URL+`"
wire_api = "responses"
env_key = "NORMA_TEST_FAKE_OPENAI_KEY"
request_max_retries = 0
stream_max_retries = 0
`, 0o600)
	return e
}

// env is the environment of every codex and norma process of the session
// (the hooks Codex starts inherit it).
func (e *codexEnv) env() []string {
	return []string{"HOME=" + e.userHome, "CODEX_HOME=" + e.codexHome, "XDG_CONFIG_HOME=" + e.xdg,
		"NORMA_MANAGED_SETTINGS=" + filepath.Join(e.xdg, "none.yaml"), "NORMA_TEST_FAKE_OPENAI_KEY=not-a-key"}
}

// norma runs the built norma with the session's environment and state
// directory.
func (e *codexEnv) norma(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	return doorEnv(t, e.env(), append([]string{"--home", e.home}, args...)...)
}

// exec runs `codex exec` in the workspace, offline against the fake, and
// returns what it printed.
func (e *codexEnv) exec(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	// Codex's own sandbox is not what is tested (Norma's hook decides
	// before it), and it depends on the host: where a system bwrap is
	// installed, Codex 0.171 hands it a helper it cannot find and every
	// command fails (bwrap: execvp codex-linux-sandbox).
	cmd := exec.CommandContext(ctx, testCodexBin(t), "exec", "--sandbox", "danger-full-access", "Do the task.")
	cmd.Dir = e.ws
	cmd.Env = append(os.Environ(), e.env()...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr, cmd.Stdin = &out, &out, strings.NewReader("")
	if err := cmd.Run(); err != nil {
		t.Fatalf("codex exec: %v\n%s", err, out.String())
	}
	if !strings.Contains(e.api.Bodies(), codexCatEnv) {
		t.Fatalf("codex exec never ran the scripted call %s:\n%s", codexCatEnv, out.String())
	}
	return out.String()
}

// install runs `norma hook install codex --yes` with the real Codex.
func (e *codexEnv) install(t *testing.T) string {
	t.Helper()
	code, out, errs := e.norma(t, "hook", "install", "codex", "--yes", "--codex", testCodexBin(t))
	if code != 0 {
		t.Fatalf("hook install codex: exit %d\n%s%s", code, out, errs)
	}
	return out
}

// codexEvents are the events of the audit log that Codex's hook wrote.
func codexEvents(evs []map[string]any) []map[string]any {
	var out []map[string]any
	for _, ev := range evs {
		if ev["principal"] == "codex" {
			out = append(out, ev)
		}
	}
	return out
}

// TestDoorCodex drives the real Codex through `cat .env` with Norma's
// hook installed by `norma hook install codex --yes`. Codex 0.171 runs a
// hook only once its trust is recorded in its config.toml, and skips any
// other without a word (issue 27): the install records that trust, so
// Codex runs the hook, Norma denies the call (FILESYSTEM_READ_DENIED), the
// refusal is what the model gets back, the canary never reaches the fake
// API, and the audit log, which verifies, holds Codex's decision with its
// call id.
//
// The negative control writes the very same hooks.json without the trust:
// Codex then runs `cat .env`, the canary reaches the model, and Norma's
// audit log holds no event of Codex at all; `norma hook status` says so.
func TestDoorCodex(t *testing.T) {
	t.Run("hooks.json without trust", func(t *testing.T) {
		e := newCodexEnv(t)
		b, err := agenthook.CodexInstaller{}.Install(nil, hookCommandOf(t, e))
		if err != nil {
			t.Fatal(err)
		}
		rtWrite(t, filepath.Join(e.codexHome, "hooks.json"), string(b), 0o600)
		e.exec(t)
		if !strings.Contains(e.api.Bodies(), runCanary) {
			t.Errorf("an untrusted hook stopped cat .env: the control is broken (Codex runs untrusted hooks now?)")
		}
		if evs := codexEvents(auditEvents(t, e.home)); len(evs) != 0 {
			t.Errorf("Codex ran the untrusted hook: %v", evs)
		}
		code, out, _ := e.norma(t, "hook", "status", "--project", e.ws, "--codex", testCodexBin(t))
		if code != exitFailed || !strings.Contains(out, "NOT RUN: Codex skips 3 of Norma's 3 hooks (3 untrusted)") {
			t.Errorf("hook status: exit %d, want %d and the untrusted hooks:\n%s", code, exitFailed, out)
		}
	})

	e := newCodexEnv(t)
	out := e.install(t)
	config := filepath.Join(e.codexHome, "config.toml")
	// Shown before it was written: the file, the keys, the hashes.
	for _, want := range []string{"Codex itself (codex app-server) will add to " + config,
		`[hooks.state."` + filepath.Join(e.codexHome, "hooks.json") + `:pre_tool_use:0:0"]`, `trusted_hash = "sha256:`,
		"recorded in " + config + ": Codex runs Norma's 3 hooks"} {
		if !strings.Contains(out, want) {
			t.Errorf("hook install output lacks %q:\n%s", want, out)
		}
	}
	if b := string(mustRead(t, config)); !strings.Contains(b, `base_url = "`+e.api.URL+`"`) || strings.Count(b, "trusted_hash") != 3 {
		t.Errorf("config.toml after the install:\n%s", b)
	}
	if code, again, errs := e.norma(t, "hook", "install", "codex", "--yes", "--codex", testCodexBin(t)); code != 0 || !strings.Contains(again, "nothing to change") {
		t.Errorf("a second install: exit %d, want nothing to change:\n%s%s", code, again, errs)
	}

	raw := e.exec(t)
	res, ok := e.api.Outputs()[codexCatEnv]
	if !ok || !strings.Contains(res, "NORMA FILESYSTEM_READ_DENIED") {
		t.Errorf("the output of cat .env sent to the model = %q, want Norma's refusal with FILESYSTEM_READ_DENIED", res)
	}
	if strings.Contains(e.api.Bodies(), runCanary) || strings.Contains(raw, runCanary) {
		t.Errorf("the canary reached the model or Codex's output")
	}
	ds := auditDecisions(t, e.home)
	if !hasDecision(ds, "codex", "Bash", "deny", "FILESYSTEM_READ_DENIED", codexCatEnv) {
		t.Errorf("the audit log lacks Codex's deny of cat .env (%s): %v", codexCatEnv, ds)
	}
}

// hookCommandOf is the command `norma hook install codex` writes for e.
func hookCommandOf(t *testing.T, e *codexEnv) string {
	t.Helper()
	return shellQuote(normaBin(t)) + " --home " + shellQuote(e.home) + " hook codex"
}

// TestDoorCodexHookStatus: after `norma hook install codex` and one
// `codex exec`, `norma hook status --check` reports Codex's hook
// installed in CODEX_HOME/hooks.json with this binary's command, trusted
// by Codex (asked of Codex itself), last heard from in that session's
// decision, and drives one more decision through the installed command;
// the agents not installed are reported so, and nothing fails.
func TestDoorCodexHookStatus(t *testing.T) {
	e := newCodexEnv(t)
	e.install(t)
	e.exec(t)
	code, out, errs := e.norma(t, "hook", "status", "--project", e.ws, "--codex", testCodexBin(t), "--check")
	if code != 0 {
		t.Fatalf("hook status --check: exit %d\n%s%s", code, out, errs)
	}
	_, block, _ := strings.Cut(out, "\ncodex\n")
	block, _, _ = strings.Cut(block, "\n\n")
	for _, want := range []string{
		"user     " + filepath.Join(e.codexHome, "hooks.json") + ": installed (PreToolUse, PostToolUse, SessionStart)\n",
		"trust:   trusted: Codex runs Norma's 3 hooks (" + filepath.Join(e.codexHome, "config.toml") + ")",
		"heard:   ",
		"capability_decision PreToolUse Bash deny FILESYSTEM_READ_DENIED session ",
		`check:   user: ok: the hook denied "echo norma-hook-check >> .claude/settings.local.json" (NORMA `,
		"recorded it in the audit log",
	} {
		if !strings.Contains(block, want) {
			t.Errorf("hook status, codex, lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(block, "running another norma") {
		t.Errorf("hook status says the installed command is another norma's:\n%s", out)
	}
	for _, a := range []string{"claude-code", "gemini"} {
		_, b, _ := strings.Cut(out, a+"\n")
		b, _, _ = strings.Cut(b, "\n\n")
		if !strings.Contains(b, "not installed") || !strings.Contains(b, "check:   skipped (not installed)") || !strings.Contains(b, "heard:   never") {
			t.Errorf("hook status, %s:\n%s", a, b)
		}
	}
}

// TestDoorCodexProjectScope: Codex loads a project's .codex only in a
// project the user trusts, so `norma hook install codex --scope project`
// in a project Codex does not trust writes nothing and says, in Codex's
// words, what to do; once the project is trusted, the install records
// the hooks' trust and `norma hook status` reports them run by Codex.
func TestDoorCodexProjectScope(t *testing.T) {
	e := newCodexEnv(t)
	hooks := filepath.Join(e.ws, ".codex", "hooks.json")
	rtWrite(t, hooks, `{"hooks":{"Stop":[{"hooks":[{"type":"command","command":"notify"}]}]}}`+"\n", 0o644)
	args := []string{"hook", "install", "codex", "--scope", "project", "--project", e.ws, "--yes", "--codex", testCodexBin(t)}
	code, out, errs := e.norma(t, args...)
	if code != exitFailed || !strings.Contains(errs, "not written: "+hooks) || !strings.Contains(errs, "as a trusted project") ||
		!strings.Contains(errs, `then run "norma hook install codex --scope project" again`) {
		t.Errorf("install in an untrusted project: exit %d, want %d, nothing written and what to do:\n%s%s", code, exitFailed, out, errs)
	}
	if b := string(mustRead(t, hooks)); strings.Contains(b, "hook codex") {
		t.Errorf("the failed install wrote %s:\n%s", hooks, b)
	}

	config := filepath.Join(e.codexHome, "config.toml")
	rtWrite(t, config, string(mustRead(t, config))+"\n[projects."+`"`+e.ws+`"`+"]\ntrust_level = \"trusted\"\n", 0o600)
	if code, out, errs := e.norma(t, args...); code != 0 || !strings.Contains(out, "Codex runs Norma's 3 hooks") {
		t.Fatalf("install in a trusted project: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs = e.norma(t, "hook", "status", "--project", e.ws, "--codex", testCodexBin(t))
	if code != 0 || !strings.Contains(out, "project  "+hooks+": installed (PreToolUse, PostToolUse, SessionStart)") ||
		!strings.Contains(out, "trust:   trusted: Codex runs Norma's 3 hooks") {
		t.Errorf("hook status: exit %d\n%s%s", code, out, errs)
	}
}
