package agenthook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/gate/gatetest"
	"github.com/norma-run/norma/sandbox/sandboxtest"
	"github.com/norma-run/norma/settings"
)

func TestMain(m *testing.M) { sandboxtest.Main(m) }

const canary = "CANARY-agenthook-93b1"

// hookWorld is a real workspace, a state directory and user settings, and
// an engine over them recording in memory.
type hookWorld struct {
	ws, home, userDir, outside string
	sink                       *gatetest.MemorySink
	eng                        *Engine
}

const userSettings = `permissions:
  allow: ["Bash(git status:*)", "mcp__ok__tool"]
  ask: ["Task"]
network:
  requests:
    - {origin: "http://10.0.0.1", methods: [GET], paths: ["/", "/{a}", "/{a}/{b}"]}
`

func newHookWorld(t *testing.T) *hookWorld {
	t.Helper()
	w := &hookWorld{ws: t.TempDir(), home: t.TempDir(), userDir: t.TempDir(), outside: filepath.Join(t.TempDir(), "secret.txt"),
		sink: &gatetest.MemorySink{}}
	// The workspace path as Claude Code sends it: absolute, symlinks resolved.
	w.ws, _ = filepath.EvalSymlinks(w.ws)
	must(t, os.WriteFile(filepath.Join(w.ws, ".env"), []byte("TOKEN="+canary), 0o600))
	must(t, os.WriteFile(filepath.Join(w.ws, "a.txt"), []byte("hello"), 0o644))
	must(t, os.WriteFile(w.outside, []byte(canary), 0o600))
	must(t, os.Symlink(w.outside, filepath.Join(w.ws, "link")))
	must(t, os.WriteFile(filepath.Join(w.userDir, "settings.yaml"), []byte(userSettings), 0o644))
	var err error
	w.eng, err = NewEngine(EngineOptions{Home: w.home, Settings: settings.Options{UserDir: w.userDir}, Audit: w.sink})
	must(t, err)
	t.Cleanup(func() { w.eng.Close() })
	return w
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// pre is a Claude Code PreToolUse input for the world's workspace.
func (w *hookWorld) pre(tool, id string, input any) []byte {
	return w.input("PreToolUse", tool, id, "default", input)
}

func (w *hookWorld) input(event, tool, id, mode string, input any) []byte {
	m := map[string]any{"session_id": "sess-1", "transcript_path": "/tmp/t.jsonl", "cwd": w.ws, "prompt_id": "p1",
		"permission_mode": mode, "effort": "medium", "hook_event_name": event, "tool_name": tool, "tool_input": input, "tool_use_id": id}
	if id == "" {
		delete(m, "tool_use_id")
	}
	b, _ := json.Marshal(m)
	return b
}

// answer is a PreToolUse answer: the decision and its reason.
func answer(t *testing.T, out []byte, exit int) (decision, reason string, code int) {
	t.Helper()
	var m struct {
		HookSpecificOutput struct {
			PermissionDecision       string `json:"permissionDecision"`
			PermissionDecisionReason string `json:"permissionDecisionReason"`
		} `json:"hookSpecificOutput"`
	}
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatalf("answer %q: %v", out, err)
	}
	return m.HookSpecificOutput.PermissionDecision, m.HookSpecificOutput.PermissionDecisionReason, exit
}

// decide handles in with eng and returns the PreToolUse answer.
func decide(t *testing.T, eng Decider, in []byte) (decision, reason string, code int) {
	t.Helper()
	out, exit := Handle(context.Background(), Claude{}, eng, in)
	return answer(t, out, exit)
}

// TestEngineAttacks decides the five attacks, and more, with the
// gate of a real workspace, and checks the audit events.
func TestEngineAttacks(t *testing.T) {
	sandboxtest.Require(t)
	w := newHookWorld(t)
	ctx := context.Background()
	tests := []struct {
		tool     string
		input    any
		decision string
		reason   capability.Reason
	}{
		{"Bash", map[string]any{"command": "cat .env"}, "deny", capability.ReasonFilesystemReadDenied},
		{"Bash", map[string]any{"command": "cat " + filepath.Join(w.ws, ".env")}, "deny", capability.ReasonFilesystemReadDenied},
		{"Read", map[string]any{"file_path": filepath.Join(w.ws, "link")}, "deny", capability.ReasonPathEscape},
		{"Read", map[string]any{"file_path": filepath.Join(w.ws, ".env")}, "deny", capability.ReasonFilesystemReadDenied},
		{"Read", map[string]any{"file_path": w.outside}, "deny", capability.ReasonPathEscape},
		{"Write", map[string]any{"file_path": filepath.Join(w.ws, ".env"), "content": "x"}, "deny", capability.ReasonFilesystemWriteDenied},
		{"Write", map[string]any{"file_path": filepath.Join(w.ws, ".norma", "policy.yaml"), "content": "x"}, "deny", capability.ReasonFilesystemWriteDenied},
		{"Bash", map[string]any{"command": "git status"}, "allow", capability.ReasonAllowed},
		{"WebFetch", map[string]any{"url": "http://10.0.0.1/admin", "prompt": "p"}, "deny", capability.ReasonNetworkPrivateAddress},
		// Not among the allowed destinations: the policy refuses first.
		{"WebFetch", map[string]any{"url": "http://169.254.169.254/latest/meta-data/", "prompt": "p"}, "deny", capability.ReasonNetworkDestinationDenied},
		{"Read", map[string]any{"file_path": filepath.Join(w.ws, "a.txt")}, "allow", capability.ReasonAllowed},
		{"Write", map[string]any{"file_path": filepath.Join(w.ws, "out.md"), "content": "x"}, "ask", capability.ReasonApprovalRequired},
		{"Bash", map[string]any{"command": "touch x"}, "ask", capability.ReasonApprovalRequired},
		// An inert tool: no decision (Claude Code's own flow runs), the
		// allow audited.
		{"TodoWrite", map[string]any{"todos": []any{}}, "", capability.ReasonAllowed},
		// A command no definition names (definitions.go).
		{"SlashCommand", map[string]any{"command": "/x"}, "deny", capability.ReasonDefinitionUnknown},
		// An MCP server that is no installed plugin: like an unmapped tool.
		{"mcp__nope__tool", map[string]any{}, "deny", capability.ReasonHookToolUnmapped},
		{"mcp__ok__tool", map[string]any{}, "allow", capability.ReasonAllowed},
		// A built-in subagent, which an ask rule names.
		{"Task", map[string]any{"prompt": "p"}, "ask", capability.ReasonApprovalRequired},
	}
	for i, tt := range tests {
		id := fmt.Sprintf("toolu_%02d", i)
		t.Run(fmt.Sprintf("%s %v", tt.tool, tt.input), func(t *testing.T) {
			out, exit := Handle(ctx, Claude{}, w.eng, w.pre(tt.tool, id, tt.input))
			d, reason, code := answer(t, out, exit)
			if code != 0 || d != tt.decision || (tt.decision != "" && !strings.HasPrefix(reason, "NORMA "+string(tt.reason))) {
				t.Fatalf("exit %d, %s %q; want %s %s", code, d, reason, tt.decision, tt.reason)
			}
			if strings.Contains(string(out), canary) {
				t.Fatalf("the answer holds the canary: %s", out)
			}
			ev := w.sink.Events()
			last := ev[len(ev)-1]
			if last.Type != "capability_decision" || last.Reason != string(tt.reason) || last.Detail["session"] != "sess-1" ||
				last.Detail["tool_use_id"] != id || last.Detail["agent"] != "claude-code" || last.Detail["agent_tool"] != tt.tool {
				t.Fatalf("audit event %+v", last)
			}
		})
	}
	if b, _ := os.ReadFile(filepath.Join(w.ws, ".env")); string(b) != "TOKEN="+canary {
		t.Fatalf(".env changed: %q", b)
	}
	if _, err := os.Stat(filepath.Join(w.ws, "out.md")); err == nil {
		t.Fatal("deciding wrote a file")
	}
}

// TestEngineRevalidates: a changed policy applies at the next call, and an
// unchanged one reuses the runtime.
func TestEngineRevalidates(t *testing.T) {
	sandboxtest.Require(t)
	w := newHookWorld(t)
	read := func(id string) string {
		d, reason, _ := decide(t, w.eng, w.pre("Read", id, map[string]any{"file_path": filepath.Join(w.ws, "a.txt")}))
		return d + " " + reason
	}
	if got := read("t1"); !strings.HasPrefix(got, "allow ") {
		t.Fatalf("before: %s", got)
	}
	first := w.eng.cached(w.ws, "default")
	if got := read("t2"); !strings.HasPrefix(got, "allow ") || w.eng.cached(w.ws, "default") != first {
		t.Fatalf("unchanged: %s, runtime reused %v", got, w.eng.cached(w.ws, "default") == first)
	}
	// The user's settings now deny it.
	must(t, os.WriteFile(filepath.Join(w.userDir, "settings.yaml"), []byte(userSettings+"  deny: [\"Read(a.txt)\"]\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(w.userDir, "settings.yaml"), []byte(strings.Replace(userSettings, "permissions:\n", "permissions:\n  deny: [\"Read(a.txt)\"]\n", 1)), 0o644))
	if got := read("t3"); !strings.HasPrefix(got, "deny NORMA RULE_DENIED") {
		t.Fatalf("after the user's deny rule: %s", got)
	}
	// The workspace's own settings narrow too: a new deny applies (a
	// narrowing change needs no acceptance).
	must(t, os.WriteFile(filepath.Join(w.userDir, "settings.yaml"), []byte(userSettings), 0o644))
	if got := read("t4"); !strings.HasPrefix(got, "allow ") {
		t.Fatalf("after the rule was removed: %s", got)
	}
	must(t, os.MkdirAll(filepath.Join(w.ws, ".norma"), 0o755))
	must(t, os.WriteFile(filepath.Join(w.ws, ".norma", "settings.yaml"), []byte("permissions:\n  deny: [\"Read(a.txt)\"]\n"), 0o644))
	if got := read("t5"); !strings.HasPrefix(got, "deny NORMA RULE_DENIED") {
		t.Fatalf("after the workspace's deny rule: %s", got)
	}
}

// TestEngineConcurrent decides from many goroutines while the settings
// change (run with -race).
func TestEngineConcurrent(t *testing.T) {
	sandboxtest.Require(t)
	w := newHookWorld(t)
	var wg sync.WaitGroup
	errs := make(chan error, 1000)
	for g := range 8 {
		wg.Go(func() {
			for i := range 10 {
				in := w.pre("Read", fmt.Sprintf("g%d-%d", g, i), map[string]any{"file_path": filepath.Join(w.ws, ".env")})
				d, reason, code := decide(t, w.eng, in)
				if d != "deny" || code != 0 || !strings.Contains(reason, "FILESYSTEM_READ_DENIED") {
					errs <- fmt.Errorf("Read .env = %s %q exit %d", d, reason, code)
				}
			}
		})
	}
	wg.Go(func() {
		for i := range 5 {
			os.WriteFile(filepath.Join(w.userDir, "settings.yaml"), []byte(userSettings+fmt.Sprintf("# %d\n", i)), 0o644)
			time.Sleep(5 * time.Millisecond)
		}
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := w.sink.Count(); n != 80 {
		t.Fatalf("%d audit events, want 80", n)
	}
}

// TestEngineModes: the agent's mode narrows Norma's, never widens it.
func TestEngineModes(t *testing.T) {
	sandboxtest.Require(t)
	w := newHookWorld(t)
	write := map[string]any{"file_path": filepath.Join(w.ws, "out.md"), "content": "x"}
	for _, tt := range []struct{ mode, decision, reason string }{
		{"plan", "deny", "NORMA MODE_DENIED"},
		{"dontAsk", "deny", "NORMA MODE_DENIED"},
		{"acceptEdits", "ask", "NORMA APPROVAL_REQUIRED"},
		{"bypassPermissions", "ask", "NORMA APPROVAL_REQUIRED"},
		{"default", "ask", "NORMA APPROVAL_REQUIRED"},
		{"", "ask", "NORMA APPROVAL_REQUIRED"},
	} {
		d, reason, _ := decide(t, w.eng, w.input("PreToolUse", "Write", "t-"+tt.mode, tt.mode, write))
		if d != tt.decision || !strings.HasPrefix(reason, tt.reason) {
			t.Errorf("mode %q: %s %q, want %s %s", tt.mode, d, reason, tt.decision, tt.reason)
		}
	}
}

// TestEngineOtherEvents: PermissionRequest, PostToolUse (audited with a
// digest, never the content) and the session events.
func TestEngineOtherEvents(t *testing.T) {
	sandboxtest.Require(t)
	w := newHookWorld(t)
	ctx := context.Background()
	out, exit := Handle(ctx, Claude{}, w.eng, w.input("PermissionRequest", "Read", "", "default", map[string]any{"file_path": filepath.Join(w.ws, ".env")}))
	if exit != 0 || !strings.Contains(string(out), `"behavior":"deny"`) {
		t.Fatalf("PermissionRequest .env: %d %s", exit, out)
	}
	m := map[string]any{"session_id": "sess-1", "cwd": w.ws, "hook_event_name": "PostToolUse", "tool_name": "Read",
		"tool_input": map[string]any{"file_path": filepath.Join(w.ws, "a.txt")}, "tool_use_id": "toolu_post",
		"tool_response": map[string]any{"type": "text", "file": map[string]any{"content": canary}}}
	in, _ := json.Marshal(m)
	out, exit = Handle(ctx, Claude{}, w.eng, in)
	if exit != 0 || string(out) != "{}\n" {
		t.Fatalf("PostToolUse: %d %s", exit, out)
	}
	ev := w.sink.Events()
	last := ev[len(ev)-1]
	if last.Type != "agent_tool_result" || !strings.HasPrefix(last.OutputDigest, "sha256:") || last.Detail["tool_use_id"] != "toolu_post" {
		t.Fatalf("PostToolUse audit %+v", last)
	}
	for _, e := range ev {
		b, _ := json.Marshal(e)
		if strings.Contains(string(b), canary) {
			t.Fatalf("the audit log holds the canary: %s", b)
		}
	}
	// A result of a call Norma denies is flagged to the model.
	m["tool_input"] = map[string]any{"file_path": filepath.Join(w.ws, ".env")}
	in, _ = json.Marshal(m)
	if out, exit = Handle(ctx, Claude{}, w.eng, in); exit != 0 || !strings.Contains(string(out), `"decision":"block"`) {
		t.Fatalf("PostToolUse of a denied call: %d %s", exit, out)
	}
	for _, ev := range []string{"SessionStart", "SessionEnd"} {
		in, _ := json.Marshal(map[string]any{"session_id": "sess-1", "cwd": w.ws, "hook_event_name": ev, "source": "startup"})
		if _, exit := Handle(ctx, Claude{}, w.eng, in); exit != 0 {
			t.Fatalf("%s: exit %d", ev, exit)
		}
		all := w.sink.Events()
		if l := all[len(all)-1]; l.Type != "agent_session" || l.Detail["event"] != ev {
			t.Fatalf("%s audit %+v", ev, l)
		}
	}
}

// TestEngineFailsClosed: a broken settings file, a workspace that does not
// exist, and an audit log that refuses the event all deny with exit 2.
func TestEngineFailsClosed(t *testing.T) {
	sandboxtest.Require(t)
	ctx := context.Background()
	t.Run("broken settings", func(t *testing.T) {
		w := newHookWorld(t)
		must(t, os.WriteFile(filepath.Join(w.userDir, "settings.yaml"), []byte("permissions: [: nope"), 0o644))
		out, exit := Handle(ctx, Claude{}, w.eng, w.pre("Read", "t1", map[string]any{"file_path": filepath.Join(w.ws, "a.txt")}))
		if d, _, code := answer(t, out, exit); d != "deny" || code != 2 {
			t.Fatalf("%s exit %d, want deny and exit 2", out, code)
		}
	})
	t.Run("no workspace", func(t *testing.T) {
		w := newHookWorld(t)
		w.ws = filepath.Join(w.ws, "gone")
		out, exit := Handle(ctx, Claude{}, w.eng, w.pre("Read", "t1", map[string]any{"file_path": filepath.Join(w.ws, "a.txt")}))
		if d, _, code := answer(t, out, exit); d != "deny" || code != 2 {
			t.Fatalf("%s exit %d, want deny and exit 2", out, code)
		}
	})
	t.Run("audit refuses", func(t *testing.T) {
		w := newHookWorld(t)
		w.sink.Fail(errors.New("disk full"))
		out, exit := Handle(ctx, Claude{}, w.eng, w.pre("Read", "t1", map[string]any{"file_path": filepath.Join(w.ws, "a.txt")}))
		if d, reason, code := answer(t, out, exit); d != "deny" || code != 2 || !strings.Contains(reason, "AUDIT_UNAVAILABLE") {
			t.Fatalf("%s exit %d, want AUDIT_UNAVAILABLE and exit 2", out, code)
		}
	})
}
