package builtin_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/gate"
	"github.com/norma-run/norma/policy"
	"github.com/norma-run/norma/tool"
	"github.com/norma-run/norma/tool/builtin"
)

func TestTodoWrite(t *testing.T) {
	dir := t.TempDir()
	store := builtin.FileTodoStore{Dir: dir}
	f := newFixture(t, fixtureOpts{cfg: builtin.Config{Todos: store, SessionID: "s1"}})
	tests := []struct {
		name, input string
		reason      capability.Reason
	}{
		{name: "ok", input: `{"todos":[{"id":"1","content":"read","status":"completed"},{"id":"2","content":"fix","status":"in_progress"}]}`},
		{name: "bad status", input: `{"todos":[{"id":"1","content":"x","status":"done"}]}`, reason: capability.ReasonSchemaInvalid},
		{name: "two in progress", input: `{"todos":[{"id":"1","content":"x","status":"in_progress"},{"id":"2","content":"y","status":"in_progress"}]}`, reason: capability.ReasonInvalidRequest},
		{name: "duplicate id", input: `{"todos":[{"id":"1","content":"x","status":"pending"},{"id":"1","content":"y","status":"pending"}]}`, reason: capability.ReasonInvalidRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := f.call(t, "TodoWrite", tt.input)
			if tt.reason != "" {
				wantReason(t, r, tt.reason)
				return
			}
			wantOK(t, r)
		})
	}
	got, err := store.Load(t.Context(), "s1")
	if err != nil || len(got) != 2 || got[1].Status != "in_progress" {
		t.Fatalf("persisted list = %+v, %v; want the valid list only", got, err)
	}
	if _, err := store.Load(t.Context(), "../x"); err == nil {
		t.Fatal("FileTodoStore accepted a session id with a path")
	}
	// Denial through the gate: a deny rule; the store is untouched.
	g := newFixture(t, fixtureOpts{cfg: builtin.Config{Todos: store, SessionID: "s2"}, rules: policy.Rules{Deny: []string{"TodoWrite"}}})
	wantReason(t, g.call(t, "TodoWrite", `{"todos":[]}`), capability.ReasonRuleDenied)
	if _, err := os.Stat(filepath.Join(dir, "s2.todos.json")); err == nil {
		t.Fatal("a denied TodoWrite persisted a list")
	}
}

func TestAskUser(t *testing.T) {
	wantReason(t, newFixture(t, fixtureOpts{}).call(t, "AskUser", `{"question":"which?"}`), capability.ReasonHostUnavailable)
	var asked atomic.Int64
	ask := func(_ context.Context, q builtin.Question) (string, error) {
		asked.Add(1)
		return "the blue one (" + strings.Join(q.Options, "/") + ")", nil
	}
	f := newFixture(t, fixtureOpts{cfg: builtin.Config{Ask: ask}})
	r := f.call(t, "AskUser", `{"question":"which?","options":["red","blue"]}`)
	wantOK(t, r)
	if r.Content != "The user answered: the blue one (red/blue)" {
		t.Fatalf("AskUser = %q", r.Content)
	}
	g := newFixture(t, fixtureOpts{cfg: builtin.Config{Ask: ask}, rules: policy.Rules{Deny: []string{"AskUser"}}})
	wantReason(t, g.call(t, "AskUser", `{"question":"x"}`), capability.ReasonRuleDenied)
	if asked.Load() != 1 {
		t.Fatalf("the callback ran %d times, want 1 (never for the denied call)", asked.Load())
	}
}

func TestPlanMode(t *testing.T) {
	var consent atomic.Bool
	cf := func(context.Context, string, string) (bool, error) { return consent.Load(), nil }
	f := newFixture(t, fixtureOpts{mode: gate.ModeAcceptEdits, cfg: builtin.Config{ConsentExitPlan: cf}})
	wantOK(t, f.call(t, "EnterPlanMode", `{}`))
	if f.g.Mode() != gate.ModePlan {
		t.Fatalf("mode = %v, want plan", f.g.Mode())
	}
	r := f.call(t, "Write", `{"path":"p.txt","content":"x"}`)
	wantReason(t, r, capability.ReasonModeDenied)
	if f.exists("p.txt") {
		t.Fatal("Write ran in plan mode")
	}
	wantOK(t, f.call(t, "LS", `{}`)) // read-only tools still run
}

func TestPlanModeExit(t *testing.T) {
	var consent atomic.Bool
	cf := func(context.Context, string, string) (bool, error) { return consent.Load(), nil }
	f := newFixture(t, fixtureOpts{mode: gate.ModeAcceptEdits, cfg: builtin.Config{ConsentExitPlan: cf}})
	wantOK(t, f.call(t, "EnterPlanMode", `{}`))
	wantReason(t, f.call(t, "ExitPlanMode", `{"plan":"do it"}`), capability.ReasonPlanExitDenied)
	if f.g.Mode() != gate.ModePlan {
		t.Fatalf("mode = %v after a refused exit, want plan", f.g.Mode())
	}
	consent.Store(true)
	wantOK(t, f.call(t, "ExitPlanMode", `{"plan":"do it"}`))
	if f.g.Mode() != gate.ModeAcceptEdits {
		t.Fatalf("mode = %v after exit, want the previous acceptEdits", f.g.Mode())
	}
	wantOK(t, f.call(t, "Write", `{"path":"p.txt","content":"x"}`))

	// Headless: no consent callback, plan mode stays.
	h := newFixture(t, fixtureOpts{})
	wantOK(t, h.call(t, "EnterPlanMode", `{}`))
	wantReason(t, h.call(t, "ExitPlanMode", `{"plan":"x"}`), capability.ReasonPlanExitDenied)
	if h.g.Mode() != gate.ModePlan {
		t.Fatal("a headless ExitPlanMode left plan mode")
	}
}

func TestMemory(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	wantOK(t, f.call(t, "Memory", `{"action":"append","content":"use tabs"}`))
	wantOK(t, f.call(t, "Memory", `{"action":"append","file":"notes.md","content":"n1\n"}`))
	wantOK(t, f.call(t, "Memory", `{"action":"append","content":"no globals"}`))
	if got := f.read(t, ".norma/memory/MEMORY.md"); got != "use tabs\nno globals\n" {
		t.Fatalf("MEMORY.md = %q", got)
	}
	r := f.call(t, "Memory", `{"action":"read"}`)
	wantOK(t, r)
	if r.Content != "use tabs\nno globals\n" {
		t.Fatalf("read = %q", r.Content)
	}
	r = f.call(t, "Memory", `{"action":"list"}`)
	wantOK(t, r)
	if r.Content != "MEMORY.md\nnotes.md" {
		t.Fatalf("list = %q", r.Content)
	}
	tests := []struct {
		name, input string
		reason      capability.Reason
	}{
		{"traversal", `{"action":"read","file":"../../.env"}`, capability.ReasonSchemaInvalid},
		{"denied file", `{"action":"append","file":"secret.md","content":"x"}`, capability.ReasonFilesystemReadDenied},
		{"missing", `{"action":"read","file":"nope.md"}`, capability.ReasonFileNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { wantReason(t, f.call(t, "Memory", tt.input), tt.reason) })
	}
	if f.exists(".norma/memory/secret.md") {
		t.Fatal("a denied Memory append wrote the file")
	}
}

// extraTool is a deferred tool that counts its calls.
func extraTool(name string, calls *atomic.Int64, perm tool.Behavior) tool.CoreTool {
	return tool.MustBuild(tool.Spec{
		Name: name, Description: "Frobnicate the widget " + name,
		Schema:   json.RawMessage(`{"type":"object","additionalProperties":false,"required":["n"],"properties":{"n":{"type":"integer"}}}`),
		ReadOnly: func(tool.Input) bool { return true },
		CheckPermissions: func(context.Context, tool.Input) tool.Permission {
			return tool.Permission{Behavior: perm, Reason: "own check"}
		},
		Accesses: func(tool.Input) ([]tool.Access, error) { return []tool.Access{}, nil },
		Call: func(_ context.Context, _ tool.Env, in tool.Input) (tool.Result, error) {
			calls.Add(1)
			return tool.Result{Content: "frobbed " + string(in.Raw())}, nil
		},
	})
}

func TestSkillAndExtraTools(t *testing.T) {
	var okCalls, denyCalls, skillCalls atomic.Int64
	f := newFixture(t, fixtureOpts{register: func(f *fixture) {
		for _, x := range []struct {
			t tool.CoreTool
		}{{extraTool("Frob", &okCalls, tool.Allow)}, {extraTool("Zap", &denyCalls, tool.Deny)}, {extraTool("Skilled", &skillCalls, tool.Allow)}} {
			if err := f.cat.Register(f.reg, tool.Registration{Tool: x.t, Visibility: tool.Deferred}); err != nil {
				t.Fatal(err)
			}
		}
	}})
	// Search.
	r := f.call(t, "SearchExtraTools", `{"query":"WIDGET zap"}`)
	wantOK(t, r)
	if !strings.Contains(r.Content, "- Zap: Frobnicate the widget Zap") || !strings.Contains(r.Content, `"required":["n"]`) || strings.Contains(r.Content, "Frob:") {
		t.Fatalf("SearchExtraTools = %q", r.Content)
	}
	// A deferred tool is not callable directly before unlock.
	wantReason(t, f.call(t, "Frob", `{"n":1}`), capability.ReasonToolUnknown)
	// Execute through the gate.
	r = f.call(t, "ExecuteExtraTool", `{"tool":"Frob","input":{"n":2}}`)
	wantOK(t, r)
	if r.Content != `frobbed {"n":2}` || okCalls.Load() != 1 {
		t.Fatalf("ExecuteExtraTool = %q (calls %d)", r.Content, okCalls.Load())
	}
	tests := []struct {
		name, input string
		reason      capability.Reason
	}{
		{"inner schema", `{"tool":"Frob","input":{"n":"x"}}`, capability.ReasonSchemaInvalid},
		{"inner own deny", `{"tool":"Zap","input":{"n":1}}`, capability.ReasonToolDenied},
		{"recursion", `{"tool":"ExecuteExtraTool","input":{"tool":"Frob","input":{"n":1}}}`, capability.ReasonExtraToolRecursive},
		{"unknown", `{"tool":"Nope","input":{}}`, capability.ReasonToolUnknown},
		{"inner policy", `{"tool":"Read","input":{"path":".env"}}`, capability.ReasonFilesystemReadDenied},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { wantReason(t, f.call(t, "ExecuteExtraTool", tt.input), tt.reason) })
	}
	if denyCalls.Load() != 0 || okCalls.Load() != 1 {
		t.Fatalf("inner handlers ran: Zap %d, Frob %d; want 0 and 1", denyCalls.Load(), okCalls.Load())
	}

	// Skill: loads instructions, unlocks a deferred tool, refuses others.
	f.write(t, map[string]string{
		".norma/skills/deploy/SKILL.md": "---\nname: deploy\ndescription: ship it\ntools: [Skilled, Hidden, Read]\n---\nRun the checks first.\n",
		"private/skills.md":             "x",
	})
	wantReason(t, f.call(t, "Skilled", `{"n":1}`), capability.ReasonToolUnknown)
	r = f.call(t, "Skill", `{"name":"deploy"}`)
	wantOK(t, r)
	for _, w := range []string{"Skill deploy: ship it", "Run the checks first.", "Tools now available (still subject to policy and approval): Skilled, Read", "Not unlocked (not a deferred tool available to this run): Hidden"} {
		if !strings.Contains(r.Content, w) {
			t.Errorf("Skill = %q, want %q", r.Content, w)
		}
	}
	wantOK(t, f.call(t, "Skilled", `{"n":1}`))
	wantReason(t, f.call(t, "Skill", `{"name":"../private"}`), capability.ReasonSchemaInvalid)
	wantReason(t, f.call(t, "Skill", `{"name":"missing"}`), capability.ReasonFileNotFound)
}

// TestSkillDenied: a skill file the policy denies is never read, so its
// tools are not unlocked.
func TestSkillDenied(t *testing.T) {
	var calls atomic.Int64
	f := newFixture(t, fixtureOpts{rules: policy.Rules{Deny: []string{"Read(workspace://.norma/skills/**)"}}, register: func(f *fixture) {
		f.cat.Register(f.reg, tool.Registration{Tool: extraTool("Skilled", &calls, tool.Allow), Visibility: tool.Deferred})
	}})
	f.write(t, map[string]string{".norma/skills/x/SKILL.md": "---\ntools: [Skilled]\n---\nhi\n"})
	wantReason(t, f.call(t, "Skill", `{"name":"x"}`), capability.ReasonRuleDenied)
	wantReason(t, f.call(t, "Skilled", `{"n":1}`), capability.ReasonToolUnknown)
}
