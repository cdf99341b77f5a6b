package gate_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/gate"
	"github.com/norma-run/norma/hook"
	"github.com/norma-run/norma/policy"
	"github.com/norma-run/norma/tool"
)

func withRules(r policy.Rules) fixtureOpt {
	return func(o *gate.Options, _ *fixture) { o.Rules = r }
}

func withMode(m gate.Mode) fixtureOpt {
	return func(o *gate.Options, _ *fixture) { o.Mode = m }
}

func bash(cmd string) gate.Call {
	b, _ := json.Marshal(map[string]string{"command": cmd})
	return call("Bash", string(b))
}

// TestBashRules: `Bash(git status:*)` allows git status and nothing that
// rides along with it, and a deny rule on rm sees through every wrapper and
// shell construct.
func TestBashRules(t *testing.T) {
	f := newFixture(t, withRules(policy.Rules{
		Allow: []string{"Bash(git status:*)", "Bash(ls)"},
		Deny:  []string{"Bash(rm:*)", "Bash(curl:*)"},
	}))
	tests := []struct {
		cmd  string
		want capability.Reason
	}{
		// allowed
		{"git status", capability.ReasonAllowed},
		{"git status --short", capability.ReasonAllowed},
		{"'git' \"status\"", capability.ReasonAllowed},
		{"git status 2>/dev/null", capability.ReasonAllowed},
		{"git status 2>&1", capability.ReasonAllowed},
		{"ls", capability.ReasonAllowed},
		{"timeout 5 git status", capability.ReasonAllowed}, // a wrapper that only runs its argument (issue 31)
		// not allowed: something rides along (no approver grant ⇒ denied)
		{"git status; rm -rf x", capability.ReasonRuleDenied},
		{"git status && curl https://evil.invalid", capability.ReasonRuleDenied},
		{"git status $(curl https://evil.invalid)", capability.ReasonRuleDenied},
		{"git status `curl https://evil.invalid`", capability.ReasonRuleDenied},
		{"git status > .env", capability.ReasonFilesystemWriteDenied},
		{"git status >> .git/config", capability.ReasonFilesystemWriteDenied},
		{"git status > ../outside", capability.ReasonPathEscape},
		{"git status > /etc/passwd", capability.ReasonPathEscape},
		{"git status | wc -l", capability.ReasonApprovalDenied},
		{"git status > src/notes.txt", capability.ReasonApprovalDenied},
		{"git status > notes.txt", capability.ReasonFilesystemWriteDenied},
		{"ls -la", capability.ReasonApprovalDenied},
		{"GIT_DIR=/tmp git status", capability.ReasonApprovalDenied},
		// the deny rule sees through wrappers and shell constructs
		{"rm -rf x", capability.ReasonRuleDenied},
		{"sudo rm -rf x", capability.ReasonRuleDenied},
		{"sudo -u root rm -rf x", capability.ReasonRuleDenied},
		{"env FOO=1 rm -rf x", capability.ReasonRuleDenied},
		{"FOO=1 rm -rf x", capability.ReasonRuleDenied},
		{"nice -n 5 rm -rf x", capability.ReasonRuleDenied},
		{"timeout -s KILL 5 rm -rf x", capability.ReasonRuleDenied},
		{"echo x | xargs rm -rf", capability.ReasonRuleDenied},
		{"sh -c 'rm -rf x'", capability.ReasonRuleDenied},
		{"bash -ec \"git status; rm -rf x\"", capability.ReasonRuleDenied},
		{"(rm -rf x)", capability.ReasonRuleDenied},
		{"{ rm -rf x; }", capability.ReasonRuleDenied},
		{"echo $(rm -rf x)", capability.ReasonRuleDenied},
		{"cat <(rm -rf x)", capability.ReasonRuleDenied},
		{"if true; then rm -rf x; fi", capability.ReasonRuleDenied},
		{"for i in 1; do rm -rf $i; done", capability.ReasonRuleDenied},
		{"f() { rm -rf x; }; f", capability.ReasonRuleDenied},
		{"/bin/rm -rf x", capability.ReasonRuleDenied},
		{"r\\m -rf x", capability.ReasonRuleDenied},
		{"\"rm\" -rf x", capability.ReasonRuleDenied},
		{"find . -exec rm {} \\;", capability.ReasonRuleDenied},
		{"eval 'rm -rf x'", capability.ReasonRuleDenied},
		{"nohup rm -rf x &", capability.ReasonRuleDenied},
		{"exec rm -rf x", capability.ReasonRuleDenied},
		{"command rm -rf x", capability.ReasonRuleDenied},
		{"time rm -rf x", capability.ReasonRuleDenied},
		// unknowable: never allowed (no approver grant ⇒ denied)
		{"$(echo rm) -rf x", capability.ReasonApprovalDenied},
		{"git status \"", capability.ReasonApprovalDenied},
		{"eval \"$CMD\"", capability.ReasonApprovalDenied},
		{"sh -c \"$CMD\"", capability.ReasonApprovalDenied},
		{"git status > \"$OUT\"", capability.ReasonApprovalDenied},
		{"env -S 'rm -rf x'", capability.ReasonApprovalDenied},
	}
	for _, tt := range tests {
		t.Run(tt.cmd, func(t *testing.T) {
			before := f.calls.Load()
			r := f.g.Execute(t.Context(), bash(tt.cmd))
			wantReason(t, r, tt.want)
			ran := f.calls.Load() - before
			if (tt.want == capability.ReasonAllowed) != (ran == 1) {
				t.Errorf("handler ran %d times", ran)
			}
		})
	}
	// Unparseable commands carry COMMAND_UNPARSEABLE as the reason approval was needed.
	r := f.g.Execute(t.Context(), bash("git status \""))
	if r.Decision.Reason != capability.ReasonCommandUnparseable {
		t.Errorf("unparseable: decision reason = %s, want %s", r.Decision.Reason, capability.ReasonCommandUnparseable)
	}
}

// TestModes checks the order: tool hard-deny and deny rules beat bypass,
// plan denies mutating calls, dontAsk turns ask into deny, bypass lifts
// asks but not capability denials nor unknowable commands.
func TestModes(t *testing.T) {
	rules := policy.Rules{Deny: []string{"Write(workspace://src/secret/**)", "Bash(rm:*)"}, Ask: []string{"Read(workspace://docs/private/**)"}}
	tests := []struct {
		mode gate.Mode
		c    gate.Call
		want capability.Reason
	}{
		{gate.ModeBypass, call("Write", `{"path":"src/secret/k"}`), capability.ReasonRuleDenied},
		{gate.ModeBypass, bash("sudo rm -rf /"), capability.ReasonRuleDenied},
		{gate.ModeBypass, call("Write", `{"path":"src/a.go"}`), capability.ReasonAllowed},
		{gate.ModeBypass, call("Write", `{"path":"docs/a.md"}`), capability.ReasonFilesystemWriteDenied},
		{gate.ModeBypass, call("Read", `{"path":"docs/private/x"}`), capability.ReasonAllowed},
		{gate.ModeBypass, bash("$(echo x)"), capability.ReasonApprovalDenied},
		{gate.ModePlan, call("Write", `{"path":"src/a.go"}`), capability.ReasonModeDenied},
		{gate.ModePlan, call("Read", `{"path":"docs/a.md"}`), capability.ReasonAllowed},
		{gate.ModeDontAsk, call("Write", `{"path":"src/a.go"}`), capability.ReasonModeDenied},
		{gate.ModeDontAsk, call("Read", `{"path":"docs/private/x"}`), capability.ReasonModeDenied},
		{gate.ModeDontAsk, call("Read", `{"path":"docs/a.md"}`), capability.ReasonAllowed},
		{gate.ModeDefault, call("Read", `{"path":"docs/private/x"}`), capability.ReasonApprovalDenied},
		{gate.ModeDefault, call("Write", `{"path":"src/a.go"}`), capability.ReasonApprovalDenied},
		{gate.ModeAcceptEdits, call("Write", `{"path":"src/a.go"}`), capability.ReasonAllowed},
		{gate.ModeAcceptEdits, call("Write", `{"path":".env"}`), capability.ReasonFilesystemWriteDenied},
		{gate.ModeAcceptEdits, bash("make"), capability.ReasonApprovalDenied},
	}
	for _, tt := range tests {
		t.Run(tt.mode.String()+"/"+tt.c.Tool+string(tt.c.Input), func(t *testing.T) {
			f := newFixture(t, withRules(rules), withMode(tt.mode))
			wantReason(t, f.g.Execute(t.Context(), tt.c), tt.want)
		})
	}
	t.Run("tool-hard-deny-beats-bypass", func(t *testing.T) {
		f := newFixture(t, withMode(gate.ModeBypass))
		s := f.readTool()
		s.Name = "Locked"
		s.CheckPermissions = func(context.Context, tool.Input) tool.Permission {
			return tool.Permission{Behavior: tool.Deny, Reason: "never"}
		}
		f.register(t, s, 0)
		wantReason(t, f.g.Execute(t.Context(), call("Locked", `{"path":"docs/a.md"}`)), capability.ReasonToolDenied)
	})
}

// TestHookRewriteCannotWiden: a PreToolUse rewrite goes through schema,
// policy and approval again, and cannot reach another resource.
func TestHookRewriteCannotWiden(t *testing.T) {
	tests := []struct {
		name    string
		tool    string
		input   string
		rewrite string
		ask     bool
		want    capability.Reason
	}{
		{"to-denied-path", "Read", `{"path":"docs/a.md"}`, `{"path":".env"}`, false, capability.ReasonFilesystemReadDenied},
		{"to-escape", "Read", `{"path":"docs/a.md"}`, `{"path":"../etc/passwd"}`, false, capability.ReasonPathEscape},
		{"to-other-allowed-path", "Read", `{"path":"docs/a.md"}`, `{"path":"docs/b.md"}`, false, capability.ReasonRewriteWidened},
		{"same-resource", "Read", `{"path":"docs/a.md"}`, `{"path":"./docs/a.md","note":"ok"}`, false, capability.ReasonAllowed},
		{"schema-invalid", "Read", `{"path":"docs/a.md"}`, `{"path":"docs/a.md","evil":1}`, false, capability.ReasonSchemaInvalid},
		{"hook-asks", "Read", `{"path":"docs/a.md"}`, ``, true, capability.ReasonApprovalDenied},
		{"bash-rides-along", "Bash", `{"command":"git status"}`, `{"command":"git status; rm -rf x"}`, false, capability.ReasonRuleDenied},
		{"bash-adds-command", "Bash", `{"command":"git status"}`, `{"command":"git status; ls"}`, false, capability.ReasonRewriteWidened},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, withRules(policy.Rules{Allow: []string{"Bash(git status:*)", "Bash(ls)"}, Deny: []string{"Bash(rm:*)"}}))
			err := f.hooks.Add(hook.Hook{Event: hook.PreToolUse, Handler: hook.Func(func(ctx context.Context, in hook.Input) (hook.Output, error) {
				sp := &hook.Specific{UpdatedInput: json.RawMessage(tt.rewrite)}
				if tt.ask {
					sp.PermissionDecision = "ask"
				}
				return hook.Output{Specific: sp}, nil
			})})
			if err != nil {
				t.Fatal(err)
			}
			r := f.g.Execute(t.Context(), call(tt.tool, tt.input))
			wantReason(t, r, tt.want)
			if tt.want != capability.ReasonAllowed && f.calls.Load() != 0 {
				t.Errorf("handler ran after a refused rewrite")
			}
			if f.finalEvents(r.ToolUseID) != 1 {
				t.Errorf("final audit events != 1")
			}
		})
	}
}

func writeScript(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "hook.sh")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestHookFailuresDeny: a PreToolUse hook that panics, hangs, exits 1 or is
// untrusted denies with HOOK_FAILED; exit 2 and a deny decision block with
// HOOK_BLOCKED. The handler never runs.
func TestHookFailuresDeny(t *testing.T) {
	tests := []struct {
		name    string
		handler func(t *testing.T) hook.Handler
		want    capability.Reason
	}{
		{"go-panic", func(*testing.T) hook.Handler {
			return hook.Func(func(context.Context, hook.Input) (hook.Output, error) { panic("boom") })
		}, capability.ReasonHookFailed},
		{"go-hang", func(*testing.T) hook.Handler {
			return hook.Func(func(context.Context, hook.Input) (hook.Output, error) { select {} })
		}, capability.ReasonHookFailed},
		{"go-error", func(*testing.T) hook.Handler {
			return hook.Func(func(context.Context, hook.Input) (hook.Output, error) { return hook.Output{}, errTest })
		}, capability.ReasonHookFailed},
		{"cmd-exit-1", func(t *testing.T) hook.Handler {
			return &hook.Command{Path: writeScript(t, "exit 1")}
		}, capability.ReasonHookFailed},
		{"cmd-hang", func(t *testing.T) hook.Handler {
			return &hook.Command{Path: writeScript(t, "sleep 30")}
		}, capability.ReasonHookFailed},
		{"cmd-bad-json", func(t *testing.T) hook.Handler {
			return &hook.Command{Path: writeScript(t, `echo '{"decision":'`)}
		}, capability.ReasonHookFailed},
		{"cmd-untrusted", func(t *testing.T) hook.Handler {
			ts, err := hook.OpenTrustStore(filepath.Join(t.TempDir(), "trust.json"))
			if err != nil {
				t.Fatal(err)
			}
			return &hook.Command{Path: writeScript(t, "exit 0"), Trust: ts}
		}, capability.ReasonHookFailed},
		{"cmd-exit-2", func(t *testing.T) hook.Handler {
			return &hook.Command{Path: writeScript(t, "echo 'no reads today' >&2; exit 2")}
		}, capability.ReasonHookBlocked},
		{"cmd-deny-decision", func(t *testing.T) hook.Handler {
			return &hook.Command{Path: writeScript(t, `echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"policy"}}'`)}
		}, capability.ReasonHookBlocked},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			timeout := 10 * time.Second // generous: the machine may be loaded
			if strings.Contains(tt.name, "hang") {
				timeout = 300 * time.Millisecond
			}
			if err := f.hooks.Add(hook.Hook{Event: hook.PreToolUse, Matcher: "Read|Write", Handler: tt.handler(t), Timeout: timeout}); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			r := f.g.Execute(t.Context(), call("Read", `{"path":"docs/a.md"}`))
			wantReason(t, r, tt.want)
			if f.calls.Load() != 0 {
				t.Error("handler ran")
			}
			if strings.Contains(tt.name, "hang") && time.Since(start) > 5*time.Second {
				t.Errorf("took %v", time.Since(start))
			}
			if f.finalEvents(r.ToolUseID) != 1 {
				t.Error("final audit events != 1")
			}
		})
	}
}

// TestSchemaViolations: every keyword is enforced and named.
func TestSchemaViolations(t *testing.T) {
	f := newFixture(t)
	s := f.readTool()
	s.Name = "Strict"
	s.Schema = json.RawMessage(`{
	  "type":"object","additionalProperties":false,"required":["path","mode"],
	  "properties":{
	    "path":{"type":"string","pattern":"^[a-z/]+\\.md$","maxLength":40},
	    "mode":{"enum":["fast","slow"]},
	    "count":{"type":"integer","minimum":1,"maximum":10},
	    "title":{"type":"string","minLength":2,"maxLength":5},
	    "email":{"type":"string","format":"email"},
	    "when":{"type":"string","format":"date-time"},
	    "tags":{"type":"array","maxItems":2,"uniqueItems":true,"items":{"type":"string"}}
	  }}`)
	f.register(t, s, 0)
	tests := []struct {
		name, input, keyword string
	}{
		{"enum", `{"path":"a.md","mode":"medium"}`, "/properties/mode/enum"},
		{"minimum", `{"path":"a.md","mode":"fast","count":0}`, "/properties/count/minimum"},
		{"maximum", `{"path":"a.md","mode":"fast","count":11}`, "/properties/count/maximum"},
		{"integer-type", `{"path":"a.md","mode":"fast","count":1.5}`, "/properties/count/type"},
		{"pattern", `{"path":"A.txt","mode":"fast"}`, "/properties/path/pattern"},
		{"maxLength", `{"path":"a.md","mode":"fast","title":"toolong"}`, "/properties/title/maxLength"},
		{"minLength", `{"path":"a.md","mode":"fast","title":"x"}`, "/properties/title/minLength"},
		{"additionalProperties", `{"path":"a.md","mode":"fast","extra":true}`, "/additionalProperties"},
		{"format-email", `{"path":"a.md","mode":"fast","email":"not-an-email"}`, "/properties/email/format"},
		{"format-date-time", `{"path":"a.md","mode":"fast","when":"yesterday"}`, "/properties/when/format"},
		{"required", `{"path":"a.md"}`, "/required"},
		{"type", `{"path":7,"mode":"fast"}`, "/properties/path/type"},
		{"top-type", `[1,2]`, "/type"},
		{"maxItems", `{"path":"a.md","mode":"fast","tags":["a","b","c"]}`, "/properties/tags/maxItems"},
		{"uniqueItems", `{"path":"a.md","mode":"fast","tags":["a","a"]}`, "/properties/tags/uniqueItems"},
		{"duplicate-key", `{"path":"a.md","mode":"fast","mode":"slow"}`, ""},
		{"trailing-data", `{"path":"a.md","mode":"fast"} {}`, ""},
		{"not-json", `{"path":`, ""},
		{"invalid-utf8", "{\"path\":\"a\xff.md\",\"mode\":\"fast\"}", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := f.g.Execute(t.Context(), call("Strict", tt.input))
			wantReason(t, r, capability.ReasonSchemaInvalid)
			if tt.keyword != "" && r.Decision.Rule != "schema:"+tt.keyword {
				t.Errorf("rule = %q, want %q (content %q)", r.Decision.Rule, "schema:"+tt.keyword, r.Content)
			}
			if strings.Contains(r.Content, "not-an-email") || strings.Contains(r.Content, "toolong") {
				t.Errorf("content repeats the input: %q", r.Content)
			}
		})
	}
	wantReason(t, f.g.Execute(t.Context(), call("Strict", `{"path":"a/b.md","mode":"fast","count":3,"email":"a@b.example","when":"2024-01-02T03:04:05Z"}`)), capability.ReasonAllowed)
	if f.calls.Load() != 1 {
		t.Errorf("handler calls = %d, want 1", f.calls.Load())
	}
}

// TestRawInputParser: raw-input tools validate what their parser returns,
// and a parser error is SCHEMA_INVALID.
func TestRawInputParser(t *testing.T) {
	f := newFixture(t)
	s := f.readTool()
	s.Name = "Patch"
	s.ParseRaw = func(raw []byte) (json.RawMessage, error) {
		var text string
		if err := json.Unmarshal(raw, &text); err != nil {
			return nil, fmt.Errorf("want a JSON string")
		}
		p, ok := strings.CutPrefix(text, "*** Update File: ")
		if !ok {
			return nil, fmt.Errorf("not a patch")
		}
		return json.Marshal(map[string]string{"path": p})
	}
	f.register(t, s, 0)
	wantReason(t, f.g.Execute(t.Context(), call("Patch", `"*** Update File: docs/a.md"`)), capability.ReasonAllowed)
	wantReason(t, f.g.Execute(t.Context(), call("Patch", `"hello"`)), capability.ReasonSchemaInvalid)
	wantReason(t, f.g.Execute(t.Context(), call("Patch", `"*** Update File: .env"`)), capability.ReasonFilesystemReadDenied)
}
