package agenthook

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/sandbox/sandboxtest"
	"github.com/norma-run/norma/settings"
)

// argvOf runs wrapped with a real bash, with the norma binary replaced by
// printf: the words bash hands to norma, past its own command line.
func argvOf(t *testing.T, wrapped string) []string {
	t.Helper()
	out, err := exec.Command("bash", "-c", wrapped).Output()
	if err != nil {
		t.Fatalf("bash -c %q: %v", wrapped, err)
	}
	words := strings.Split(string(out), "\x00")
	return words[:len(words)-1]
}

// printer is the command line that stands in for norma's.
var printer = []string{"printf", `%s\0`}

func wantArgv(ws, command string) []string {
	return []string{"hook", "exec", "--workspace", ws, "--", command}
}

// TestWrapQuoting: the wrapped command, run by a real bash as Claude
// Code's shell runs it, hands norma exactly the workspace and the
// original command, whatever the command holds (quotes, expansions,
// newlines, a closing quote that tries to end the word early).
func TestWrapQuoting(t *testing.T) {
	ws := "/tmp/a dir/it's $HOME"
	for _, c := range []string{
		"cat README.md", "x=.env; cat $x", "cat .e*", `echo "$(id)" '\'' "`, "it's", "'", "''", "a'\\''b",
		"echo hi\necho there", "cat `ls`; echo ${HOME}", "", "-x", "--", "'; cat .env; '",
	} {
		got := argvOf(t, Wrap(printer, ws, c))
		if want := wantArgv(ws, c); !slices.Equal(got, want) {
			t.Errorf("Wrap(%q): bash runs norma with %q, want %q", c, got, want)
		}
		if inner, ok := unwrap(printer, ws, Wrap(printer, ws, c)); !ok || inner != c {
			t.Errorf("unwrap(Wrap(%q)) = %q, %v", c, inner, ok)
		}
	}
}

// TestUnwrapRefuses: only Norma's own wrapper of the same workspace and
// binary is decided as the command it runs; anything else around it, or
// another workspace or state directory, is a command of its own.
func TestUnwrapRefuses(t *testing.T) {
	ws := "/work/ws"
	w := Wrap(printer, ws, "cat a.txt")
	for _, s := range []string{
		w + "; cat .env", w + " x", "cat .env; " + w, Wrap(printer, "/work/other", "cat a.txt"),
		Wrap([]string{"printf", `%s\0`, "--home", "/tmp/h"}, ws, "cat a.txt"),
		wrapPrefix(printer, ws) + `"cat a.txt"`, wrapPrefix(printer, ws) + "'cat' a.txt'", wrapPrefix(printer, ws) + "'a'b'",
		wrapPrefix(printer, ws) + "'",
	} {
		if inner, ok := unwrap(printer, ws, s); ok {
			t.Errorf("unwrap(%q) = %q, want none", s, inner)
		}
	}
}

// FuzzWrap: for any command (bash words cannot hold NUL), bash -c of the
// wrapped command runs norma with the command intact, and unwrap gives
// it back.
func FuzzWrap(f *testing.F) {
	for _, s := range []string{"cat README.md", "x=.env; cat $x", "'", "a'\\''b", "\n", "$(printf '%s\\0' x)"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, c string) {
		if strings.IndexByte(c, 0) >= 0 || !utf8.ValidString(c) {
			return
		}
		const ws = "/ws/it's"
		got := argvOf(t, Wrap(printer, ws, c))
		if want := wantArgv(ws, c); !slices.Equal(got, want) {
			t.Fatalf("Wrap(%q): bash runs norma with %q, want %q", c, got, want)
		}
		if inner, ok := unwrap(printer, ws, Wrap(printer, ws, c)); !ok || inner != c {
			t.Fatalf("unwrap(Wrap(%q)) = %q, %v", c, inner, ok)
		}
	})
}

// TestClaudeRenderUpdatedInput: an allowed or asked PreToolUse carries
// the updated input; a deny never does.
func TestClaudeRenderUpdatedInput(t *testing.T) {
	in := json.RawMessage(`{"command":"'norma' hook exec --workspace '/ws' -- 'ls'","timeout":5000,"description":"list"}`)
	e := Event{Agent: ClaudeCode, Kind: BeforeTool, Name: "PreToolUse"}
	for _, c := range []struct {
		mode capability.Mode
		want string
	}{{capability.Allow, "allow"}, {capability.ApprovalRequired, "ask"}, {capability.Deny, "deny"}} {
		out, code := Claude{}.Render(e, Verdict{Decision: capability.Decision{Mode: c.mode, Reason: capability.ReasonAllowed}, UpdatedInput: in})
		var got struct {
			HookSpecificOutput struct {
				PermissionDecision string          `json:"permissionDecision"`
				UpdatedInput       json.RawMessage `json:"updatedInput"`
			} `json:"hookSpecificOutput"`
		}
		if err := json.Unmarshal(out, &got); err != nil || code != 0 {
			t.Fatalf("%s: %s (exit %d): %v", c.want, out, code, err)
		}
		h := got.HookSpecificOutput
		if h.PermissionDecision != c.want {
			t.Errorf("decision %q, want %q", h.PermissionDecision, c.want)
		}
		if carried := len(h.UpdatedInput) > 0; carried != (c.mode != capability.Deny) {
			t.Errorf("%s: updatedInput = %s", c.want, h.UpdatedInput)
		} else if carried && !bytes.Equal(h.UpdatedInput, in) {
			t.Errorf("%s: updatedInput = %s, want %s", c.want, h.UpdatedInput, in)
		}
	}
}

// TestWithCommand: the updated input keeps every other field of the
// agent's input.
func TestWithCommand(t *testing.T) {
	out, err := withCommand(json.RawMessage(`{"command":"ls","timeout":5000,"description":"d","run_in_background":true}`), "wrapped <&>")
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatal(err)
	}
	if m["command"] != "wrapped <&>" || m["timeout"] != 5000.0 || m["description"] != "d" || m["run_in_background"] != true || len(m) != 4 {
		t.Fatalf("withCommand = %s", out)
	}
}

// TestEngineConfinesBash: with the engine told its command line, an
// allowed or asked Bash call comes back wrapped, a denied one does not;
// the wrapped command, sent back at PermissionRequest or PreToolUse, is
// decided as the command it runs (a deny stays a deny), while a look-alike
// of another workspace is decided as what it is; another agent's Bash is
// never wrapped.
func TestEngineConfinesBash(t *testing.T) {
	sandboxtest.Require(t)
	w := newHookWorld(t)
	self := []string{"/opt/norma", "--home", w.home}
	eng, err := NewEngine(EngineOptions{Home: w.home, Settings: settings.Options{UserDir: w.userDir}, Audit: w.sink, Exec: self})
	must(t, err)
	t.Cleanup(func() { eng.Close() })
	updated := func(in []byte) (string, json.RawMessage) {
		out, exit := Handle(context.Background(), Claude{}, eng, in)
		var m struct {
			HookSpecificOutput struct {
				PermissionDecision string          `json:"permissionDecision"`
				UpdatedInput       json.RawMessage `json:"updatedInput"`
			} `json:"hookSpecificOutput"`
		}
		if err := json.Unmarshal(out, &m); err != nil || exit != 0 {
			t.Fatalf("answer %s (exit %d): %v", out, exit, err)
		}
		return m.HookSpecificOutput.PermissionDecision, m.HookSpecificOutput.UpdatedInput
	}
	for _, c := range []struct {
		command, decision string
		wrapped           bool
	}{
		{"git status", "allow", true},
		{"ls", "allow", true}, // read-only: no approval (issue 31)
		{"touch x", "ask", true},
		{"cat .env", "deny", false},
		{Wrap(self, w.ws, "cat .env"), "deny", false},
		{Wrap(self, w.ws, "git status"), "allow", true},
	} {
		d, up := updated(w.pre("Bash", "toolu_1", map[string]any{"command": c.command, "timeout": 1000}))
		if d != c.decision || (len(up) > 0) != c.wrapped {
			t.Errorf("%q: %s, updatedInput %s; want %s, wrapped %v", c.command, d, up, c.decision, c.wrapped)
			continue
		}
		if !c.wrapped {
			continue
		}
		var in struct {
			Command string `json:"command"`
			Timeout int    `json:"timeout"`
		}
		must(t, json.Unmarshal(up, &in))
		inner, ok := unwrap(self, w.ws, in.Command)
		if !ok || in.Timeout != 1000 || (inner != c.command && Wrap(self, w.ws, inner) != c.command) {
			t.Errorf("%q: updated input %s", c.command, up)
		}
	}
	confined := 0
	for _, ev := range w.sink.Events() {
		if ev.Detail["confined"] == "sandbox" {
			confined++
		}
	}
	if confined != 4 {
		t.Errorf("%d audit events say confined, want 4 (the wrapped answers)", confined)
	}
	// A wrapper of another workspace is a command of its own: one that
	// names a path outside this workspace.
	if d, up := updated(w.pre("Bash", "toolu_2", map[string]any{"command": Wrap(self, "/", "cat .env")})); d == "allow" {
		t.Errorf("another workspace's wrapper: %s %s", d, up)
	}
	// Codex's Bash runs in its own sandbox; Norma does not rewrite it.
	in, _ := json.Marshal(map[string]any{"session_id": "s", "cwd": w.ws, "hook_event_name": "PreToolUse", "tool_name": "Bash",
		"tool_input": map[string]any{"command": "git status"}, "tool_use_id": "t", "model": "m", "turn_id": "1", "transcript_path": nil, "permission_mode": "default"})
	if out, _ := Handle(context.Background(), CodexCLI{}, eng, in); strings.Contains(string(out), "hook exec") {
		t.Errorf("codex answer %s", out)
	}
}
