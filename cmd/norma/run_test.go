package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// runCanary is in the workspace's .env and in the fake API keys; it must
// never reach the output.
const runCanary = "CANARY-run-5d1e"

type runEnv struct {
	home, ws string
}

func newRunEnv(t *testing.T) runEnv {
	t.Helper()
	e := runEnv{home: t.TempDir(), ws: t.TempDir()}
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(e.ws, "docs"), 0o755))
	must(os.WriteFile(filepath.Join(e.ws, "docs", "intro.md"), []byte("# Intro\nhello\n"), 0o644))
	must(os.WriteFile(filepath.Join(e.ws, ".env"), []byte("TOKEN="+runCanary+"\n"), 0o600))
	return e
}

func (e runEnv) script(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "script.yaml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func (e runEnv) run(t *testing.T, args ...string) (int, []map[string]any, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := runWith(append([]string{"--home", e.home, "run", "--workspace", e.ws}, args...), strings.NewReader(""), &out, &errb)
	if strings.Contains(out.String()+errb.String(), runCanary) {
		t.Errorf("canary leaked:\n%s\n%s", out.String(), errb.String())
	}
	var events []map[string]any
	sc := bufio.NewScanner(&out)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("not a JSON line: %q", sc.Text())
		}
		events = append(events, m)
	}
	return code, events, errb.String()
}

func toolCalls(events []map[string]any) map[string]map[string]any {
	out := map[string]map[string]any{}
	for _, e := range events {
		if e["event"] == "tool_call" {
			out[e["id"].(string)] = e
		}
	}
	return out
}

func last(events []map[string]any) map[string]any {
	if len(events) == 0 {
		return nil
	}
	return events[len(events)-1]
}

// TestRunScriptedJSON drives `norma run --provider scripted --json` through
// every gate path with the built-in tools, and relies on the scripted
// provider's pairing check: a tool_use without its tool_result fails the run.
func TestRunScriptedJSON(t *testing.T) {
	e := newRunEnv(t)
	script := e.script(t, `turns:
  - text: "Reading."
    tool_calls:
      - {id: t1, name: Read, input: {path: docs/intro.md}}
      - {id: t2, name: Read, input: {path: .env}}
      - {id: t3, name: NoSuchTool, input: {}}
      - {id: t4, name: Read, input: {path: 42}}
  - tool_calls:
      - {id: t5, name: Write, input: {path: out/summary.md, content: "summary"}}
  - text: "Done."
`)
	tests := []struct {
		name string
		yes  bool
		want map[string]string // id → reason
	}{
		{name: "with --yes", yes: true, want: map[string]string{"t1": "ALLOWED", "t2": "FILESYSTEM_READ_DENIED", "t3": "TOOL_UNKNOWN", "t4": "SCHEMA_INVALID", "t5": "ALLOWED"}},
		{name: "headless, no wait", want: map[string]string{"t1": "ALLOWED", "t2": "FILESYSTEM_READ_DENIED", "t3": "TOOL_UNKNOWN", "t4": "SCHEMA_INVALID", "t5": "APPROVAL_PENDING"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := []string{"--provider", "scripted", "--script", script, "--json"}
			if tt.yes {
				args = append(args, "--yes")
			} else {
				args = append(args, "--approval-wait", "0s")
			}
			code, events, stderr := e.run(t, append(args, "summarize the docs")...)
			if code != 0 {
				t.Fatalf("exit %d, stderr %s", code, stderr)
			}
			if events[0]["event"] != "session_started" {
				t.Errorf("first event = %v", events[0])
			}
			calls := toolCalls(events)
			for id, reason := range tt.want {
				if calls[id]["reason"] != reason {
					t.Errorf("%s: reason = %v, want %s (event %v)", id, calls[id]["reason"], reason, calls[id])
				}
			}
			if calls["t2"]["is_error"] != true || calls["t2"]["decision"] != "deny" || !strings.Contains(calls["t2"]["message"].(string), "FILESYSTEM_READ_DENIED") {
				t.Errorf("denied call event = %v", calls["t2"])
			}
			if d, _ := calls["t1"]["output_digest"].(string); !strings.HasPrefix(d, "sha256:") {
				t.Errorf("t1 output digest = %q", d)
			}
			var approvals int
			for _, ev := range events {
				if ev["event"] == "approval_requested" {
					approvals++
				}
			}
			if approvals != 1 {
				t.Errorf("approval_requested events = %d, want 1", approvals)
			}
			fin := last(events)
			if fin["event"] != "session_finished" {
				t.Fatalf("last event = %v", fin)
			}
			if tt.yes {
				if fin["status"] != "completed" {
					t.Errorf("session_finished = %v", fin)
				}
				if b, err := os.ReadFile(filepath.Join(e.ws, "out", "summary.md")); err != nil || string(b) != "summary" {
					t.Errorf("approved write: %q, %v", b, err)
				}
				return
			}
			if fin["status"] != "awaiting_approval" || fin["reason"] != "APPROVAL_PENDING" {
				t.Errorf("session_finished = %v, want awaiting_approval", fin)
			}
		})
	}
}

// TestRunResumeAfterApproval: a headless run stops on the pending write;
// `norma approvals approve` and `norma run --resume` complete it.
func TestRunResumeAfterApproval(t *testing.T) {
	e := newRunEnv(t)
	script := e.script(t, `turns:
  - tool_calls:
      - {id: w1, name: Write, input: {path: notes.md, content: "n"}}
  - text: "Written."
`)
	code, events, stderr := e.run(t, "--provider", "scripted", "--script", script, "--json", "--approval-wait", "0s", "write notes")
	fin := last(events)
	if code != 0 || fin["status"] != "awaiting_approval" {
		t.Fatalf("exit %d, last %v, stderr %s", code, fin, stderr)
	}
	pending := fin["pending"].([]any)[0].(map[string]any)
	runID, approvalID := fin["run_id"].(string), pending["approval_id"].(string)
	var out, errb bytes.Buffer
	if c := runWith([]string{"--home", e.home, "approvals", "approve", approvalID}, strings.NewReader(""), &out, &errb); c != 0 {
		t.Fatalf("approvals approve: exit %d: %s %s", c, out.String(), errb.String())
	}
	code, events, stderr = e.run(t, "--provider", "scripted", "--script", script, "--json", "--resume", runID)
	fin = last(events)
	if code != 0 || fin["status"] != "completed" {
		t.Fatalf("resume: exit %d, last %v, stderr %s", code, fin, stderr)
	}
	if c := toolCalls(events)["w1"]; c["reason"] != "ALLOWED" || c["approval_id"] != approvalID {
		t.Errorf("resumed w1 = %v", c)
	}
	if b, err := os.ReadFile(filepath.Join(e.ws, "notes.md")); err != nil || string(b) != "n" {
		t.Errorf("notes.md = %q, %v", b, err)
	}
}

func TestRunUsage(t *testing.T) {
	e := newRunEnv(t)
	tests := []struct {
		name string
		args []string
		want int
	}{
		{name: "no prompt", args: []string{"--provider", "scripted", "--script", "x.yaml"}, want: exitUsage},
		{name: "bypass refused", args: []string{"--mode", "bypassPermissions", "p"}, want: exitUsage},
		{name: "resume path injection", args: []string{"--resume", "../../etc", "p"}, want: exitUsage},
		{name: "unknown resume", args: []string{"--provider", "scripted", "--script", "x.yaml", "--resume", "run-nothere", "p"}, want: exitFailed},
		{name: "scripted without script", args: []string{"--provider", "scripted", "p"}, want: exitUsage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if code, _, stderr := e.run(t, tt.args...); code != tt.want {
				t.Errorf("exit %d, want %d (stderr %s)", code, tt.want, stderr)
			}
		})
	}
}

// fakeServer serves the recorded fixtures of a provider package, one per
// request, and records the request bodies.
type fakeServer struct {
	mu     sync.Mutex
	bodies []string
	auth   []string
}

func (f *fakeServer) start(t *testing.T, path string, fixtures ...string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		n := len(f.bodies)
		f.bodies = append(f.bodies, string(b))
		f.auth = append(f.auth, r.Header.Get("x-api-key")+r.Header.Get("Authorization"))
		f.mu.Unlock()
		if r.URL.Path != path || n >= len(fixtures) {
			http.Error(w, "unexpected", http.StatusNotFound)
			return
		}
		data, err := os.ReadFile(fixtures[n])
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write(data)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestRunRealProviders: a two-turn tool loop through each real provider
// against a local server speaking its wire format (the provider packages'
// recorded fixtures): turn 1 calls Read and a plugin tool that is not
// installed, turn 2 answers with text.
func TestRunRealProviders(t *testing.T) {
	tests := []struct {
		provider, env, path string
		fixtures            []string
		toolResultKey       string
	}{
		{provider: "anthropic", env: "ANTHROPIC_API_KEY", path: "/v1/messages",
			fixtures:      []string{"../../provider/anthropic/testdata/turn1_tool_use.sse", "../../provider/anthropic/testdata/turn2_text.sse"},
			toolResultKey: `"tool_use_id":"toolu_01T1x1fJ34qAmk2tNTrN7Up6"`},
		{provider: "openai", env: "OPENAI_API_KEY", path: "/v1/chat/completions",
			fixtures:      []string{"../../provider/openai/testdata/turn1_tool_calls.sse", "../../provider/openai/testdata/turn2_text.sse"},
			toolResultKey: `"tool_call_id":"call_DdmO9pD3xa9XTPNJ32zg2hcA"`},
	}
	for _, tt := range tests {
		t.Run(tt.provider, func(t *testing.T) {
			e := newRunEnv(t)
			t.Setenv(tt.env, "sk-"+runCanary)
			f := &fakeServer{}
			srv := f.start(t, tt.path, tt.fixtures...)
			base := srv.URL
			if tt.provider == "openai" {
				base += "/v1"
			}
			code, events, stderr := e.run(t, "--provider", tt.provider, "--base-url", base, "--json", "read the intro")
			if code != 0 {
				t.Fatalf("exit %d, stderr %s", code, stderr)
			}
			calls := toolCalls(events)
			var read map[string]any
			for _, c := range calls {
				if c["tool"] == "Read" {
					read = c
				}
			}
			if read == nil || read["reason"] != "ALLOWED" {
				t.Errorf("Read call = %v (all %v)", read, calls)
			}
			if len(calls) != 2 {
				t.Errorf("tool calls = %d, want 2", len(calls))
			}
			fin := last(events)
			if fin["status"] != "completed" {
				t.Errorf("session_finished = %v", fin)
			}
			if u, _ := fin["usage"].(map[string]any); u == nil || u["input_tokens"].(float64) == 0 {
				t.Errorf("usage = %v", fin["usage"])
			}
			f.mu.Lock()
			defer f.mu.Unlock()
			if len(f.bodies) != 2 {
				t.Fatalf("requests = %d, want 2", len(f.bodies))
			}
			second := f.bodies[1]
			if !strings.Contains(second, tt.toolResultKey) || !strings.Contains(second, "hello") {
				t.Errorf("second request lacks the paired tool result: %s", second)
			}
			if !strings.Contains(f.auth[0], runCanary) {
				t.Errorf("the key from %s was not sent", tt.env)
			}
			if strings.Contains(fmt.Sprint(f.bodies), "[REDACTED]") {
				t.Error("a redacted value was sent to the API")
			}
		})
	}
}

// TestRunResumeRemembersProvider: a run stopped by --max-turns 1 is
// resumed without --provider, --model or --base-url and talks to the same
// server with the same model (stored in its state); an explicit --model
// on resume wins.
func TestRunResumeRemembersProvider(t *testing.T) {
	for _, tt := range []struct {
		name      string
		resume    []string
		wantModel string
	}{
		{name: "stored", wantModel: "model-one"},
		{name: "flag wins", resume: []string{"--model", "model-two"}, wantModel: "model-two"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newRunEnv(t)
			t.Setenv("OPENAI_API_KEY", "sk-"+runCanary)
			f := &fakeServer{}
			srv := f.start(t, "/v1/chat/completions", "../../provider/openai/testdata/turn1_tool_calls.sse", "../../provider/openai/testdata/turn2_text.sse")
			code, events, stderr := e.run(t, "--provider", "openai", "--base-url", srv.URL+"/v1", "--model", "model-one", "--max-turns", "1", "--json", "read the intro")
			fin := last(events)
			if code != exitFailed || fin["status"] != "limit" {
				t.Fatalf("first run: exit %d, last %v, stderr %s", code, fin, stderr)
			}
			code, events, stderr = e.run(t, append([]string{"--resume", fin["run_id"].(string), "--json"}, tt.resume...)...)
			fin = last(events)
			if code != 0 || fin["status"] != "completed" {
				t.Fatalf("resume: exit %d, last %v, stderr %s", code, fin, stderr)
			}
			if events[0]["provider"] != "openai" || events[0]["model"] != tt.wantModel {
				t.Errorf("resumed session_started = %v", events[0])
			}
			f.mu.Lock()
			defer f.mu.Unlock()
			if len(f.bodies) != 2 || !strings.Contains(f.bodies[1], `"model":"`+tt.wantModel+`"`) {
				t.Errorf("the resumed run did not reach the stored server with model %s: %d requests\n%v", tt.wantModel, len(f.bodies), f.bodies)
			}
		})
	}
}
