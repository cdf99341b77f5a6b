package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestDoorPluginCrashAndTimeout, through `norma run`: a plugin that dies
// during a call ends it with PLUGIN_CRASHED, and the user sees the last
// lines of its stderr, escaped (and the audit log has them); the next call
// is answered by a fresh process. A call that hangs ends at the tool's
// timeout from the settings (plugins.toolTimeouts) with TIMEOUT, its
// process tree — with the child it started — is killed, and the next call
// works again.
func TestDoorPluginCrashAndTimeout(t *testing.T) {
	w := newPluginWorld(t)
	home := w.install(t, echoManifest("1.0.0", "", "  {}\n"), "")
	ws := t.TempDir()
	set := filepath.Join(t.TempDir(), "settings.yaml")
	os.WriteFile(set, []byte("plugins:\n  callTimeout: 60\n  toolTimeouts:\n    mcp__com.example.echo__echo: 1\n"), 0o644)
	if code, out, errs := door(t, "--home", home, "settings", "show", "--workspace", ws, "--settings", set); code != 0 ||
		!strings.Contains(out, "timeout mcp__com.example.echo__echo 1s  "+set+":4:34 (flag)") {
		t.Errorf("settings show: exit %d\n%s%s", code, out, errs)
	}
	typo := filepath.Join(t.TempDir(), "typo.yaml")
	os.WriteFile(typo, []byte("plugins:\n  toolTimeout: {}\n"), 0o644)
	if code, _, errs := door(t, "settings", "lint", typo); code != 1 || !strings.Contains(errs, typo+`:2:3: plugins.toolTimeout: unknown field "toolTimeout" (did you mean "toolTimeouts"?)`) {
		t.Errorf("settings lint of a misspelt key: exit %d\n%s", code, errs)
	}
	mark := fmt.Sprintf("norma-door-hang-%d", time.Now().UnixNano())
	call := func(id, text string) string {
		in, _ := json.Marshal(map[string]string{"text": text})
		return "  - tool_calls:\n      - {id: " + id + ", name: mcp__com.example.echo__echo, input: " + string(in) + "}\n"
	}
	script := filepath.Join(t.TempDir(), "script.yaml")
	os.WriteFile(script, []byte("turns:\n"+
		call("c1", "!crashstarting\nloading graph\npanic: \x1b]0;pwned\x07 bad state\n")+
		call("c2", "after the crash")+
		call("h1", "!hangtree:"+mark)+
		call("c3", "after the hang")+
		"  - text: done\n"), 0o644)
	args := []string{"--home", home, "run", "--provider", "scripted", "--script", script, "--workspace", ws, "--settings", set}

	code, out, errs := door(t, append(args, "--json", "go")...)
	if code != 0 {
		t.Fatalf("run: exit %d\n%s%s", code, out, errs)
	}
	calls := toolCalls(jsonLines(t, out))
	c1, c2, h1, c3 := calls["c1"], calls["c2"], calls["h1"], calls["c3"]
	if c1 == nil || c1["is_error"] != true || !strings.HasPrefix(fmt.Sprint(c1["message"]), "PLUGIN_CRASHED") ||
		!strings.Contains(fmt.Sprint(c1["message"]), `panic: \x1b]0;pwned\x07 bad state`) {
		t.Errorf("the crashed call: %v", c1)
	}
	if c2 == nil || c2["is_error"] != false || c2["result"] != "after the crash" {
		t.Errorf("the call after the crash: %v", c2)
	}
	ms, _ := strconv.Atoi(fmt.Sprint(h1["duration_ms"]))
	if h1 == nil || h1["is_error"] != true || !strings.HasPrefix(fmt.Sprint(h1["message"]), "TIMEOUT (layer host)") || ms < 1000 || ms > 4000 {
		t.Errorf("the hung call (%d ms): %v", ms, h1)
	}
	if c3 == nil || c3["is_error"] != false || c3["result"] != "after the hang" {
		t.Errorf("the call after the hang: %v", c3)
	}
	if left := markedProcs(mark); len(left) > 0 {
		t.Errorf("the hung call's processes still run: %v", left)
	}

	// The audit log has the crash with its stderr tail, and the timeout.
	_, q, _ := door(t, "--home", home, "audit", "query", "--json", "--plugin", "com.example.echo")
	var recs []struct {
		Event struct {
			Reason string
			Detail map[string]string
		}
	}
	if err := json.Unmarshal([]byte(q), &recs); err != nil {
		t.Fatalf("audit query: %v\n%s", err, q)
	}
	var crash, timeout bool
	for _, r := range recs {
		crash = crash || (r.Event.Reason == "PLUGIN_CRASHED" && strings.Contains(r.Event.Detail["stderr"], `panic: \x1b]0;pwned\x07 bad state`))
		timeout = timeout || (r.Event.Reason == "TIMEOUT" && r.Event.Detail["timeout"] == "1s")
	}
	if !crash || !timeout {
		t.Errorf("audit: crash with stderr %v, timeout %v\n%s", crash, timeout, q)
	}

	// On a terminal's text output the stderr tail is shown, escaped.
	code, out, errs = door(t, append(args, "go")...)
	if c, bad := rawControl(out + errs); code != 0 || bad {
		t.Fatalf("text run: exit %d, raw %q\n%s%s", code, c, out, errs)
	}
	for _, want := range []string{"its last stderr lines:", "loading graph", `panic: \x1b]0;pwned\x07 bad state`, "after the crash", "TIMEOUT", "after the hang"} {
		if !strings.Contains(out, want) {
			t.Errorf("text output lacks %q:\n%s", want, out)
		}
	}
}

// markedProcs returns the pids of processes whose command line holds mark.
func markedProcs(mark string) []string {
	var pids []string
	ents, _ := os.ReadDir("/proc")
	for _, d := range ents {
		if _, err := strconv.Atoi(d.Name()); err != nil {
			continue
		}
		if b, err := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline")); err == nil && strings.Contains(string(b), mark) {
			pids = append(pids, d.Name())
		}
	}
	return pids
}

// TestDoorWireNames: through `norma run` against a server speaking the
// Anthropic wire format, the installed plugin's tool goes out as its
// sanitized name without a hash suffix (nothing else shares it), and the
// model's call of that wire name reaches the plugin under its own name.
func TestDoorWireNames(t *testing.T) {
	w := newPluginWorld(t)
	home := w.install(t, echoManifest("1.0.0", "", "  {}\n"), "")
	ws := t.TempDir()
	turn1 := filepath.Join(t.TempDir(), "turn1.sse")
	os.WriteFile(turn1, []byte(`event: message_start
data: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"claude-sonnet-4-5","stop_reason":null,"usage":{"input_tokens":10,"output_tokens":1}}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_wire1","name":"mcp__com_example_echo__echo","input":{}}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"text\": \"over the wire\"}"}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":9}}

event: message_stop
data: {"type":"message_stop"}

`), 0o644)
	f := &fakeServer{}
	srv := f.start(t, "/v1/messages", turn1, "../../provider/anthropic/testdata/turn2_text.sse")
	code, out, errs := doorEnv(t, []string{"ANTHROPIC_API_KEY=sk-ant-api03-wire-test-0000"},
		"--home", home, "run", "--provider", "anthropic", "--base-url", srv.URL, "--workspace", ws, "--json", "echo")
	if code != 0 {
		t.Fatalf("run: exit %d\n%s%s", code, out, errs)
	}
	c := toolCalls(jsonLines(t, out))["toolu_wire1"]
	if c == nil || c["tool"] != "mcp__com.example.echo__echo" || c["decision"] != "allow" || c["result"] != "over the wire" {
		t.Fatalf("the call of the wire name: %v\n%s", c, out)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.bodies) != 2 {
		t.Fatalf("requests = %d", len(f.bodies))
	}
	for i, b := range f.bodies {
		// (The system prompt lists tools under their own names.)
		if !strings.Contains(b, `"name":"mcp__com_example_echo__echo"`) || strings.Contains(b, "mcp__com_example_echo__echo_") {
			t.Errorf("request %d does not name the tool mcp__com_example_echo__echo alone", i+1)
		}
	}
}
