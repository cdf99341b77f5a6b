package agenthook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/gate"
	"github.com/norma-run/norma/gate/gatetest"
	"github.com/norma-run/norma/sandbox/sandboxtest"
	"github.com/norma-run/norma/settings"
)

const holeSettings = `permissions:
  allow: ["Bash(cat:*)", "Bash(cd:*)", "Bash(echo:*)", "Bash(ls:*)", "Bash(git status)", "WebFetch"]
network:
  requests:
    - {origin: "http://localhost:8080", methods: [GET], paths: ["/admin"]}
    - {origin: "http://gone.invalid", methods: [GET], paths: ["/admin"]}
`

// TestEngineUnconfinedHoles: the calls Claude Code and Gemini CLI run
// themselves, outside Norma's sandbox, are decided with what the sandbox
// would have prevented, allow rules notwithstanding: a file named after a
// cd (1), a host path the sandbox would not show (2), a fetch of a name
// that resolves to a loopback address or does not resolve (3), a
// redirect target outside the workspace or denied (4). Allowed variants
// stay allowed. Each denial is audited with the session and tool_use id.
func TestEngineUnconfinedHoles(t *testing.T) {
	sandboxtest.Require(t)
	root := t.TempDir()
	root, _ = filepath.EvalSymlinks(root)
	ws, ws2, home, userDir := filepath.Join(root, "ws"), filepath.Join(root, "ws2"), filepath.Join(root, "home"), filepath.Join(root, "user")
	for _, d := range []string{filepath.Join(ws, "sub"), filepath.Join(ws, ".norma"), ws2, filepath.Join(home, ".ssh"), userDir, filepath.Join(root, "state")} {
		must(t, os.MkdirAll(d, 0o755))
	}
	must(t, os.WriteFile(filepath.Join(ws, ".env"), []byte("TOKEN="+canary), 0o600))
	must(t, os.WriteFile(filepath.Join(ws, "ok.txt"), []byte("ok"), 0o644))
	must(t, os.WriteFile(filepath.Join(ws2, ".env"), []byte("TOKEN="+canary), 0o600))
	must(t, os.WriteFile(filepath.Join(home, ".ssh", "id_rsa"), []byte(canary), 0o600))
	must(t, os.WriteFile(filepath.Join(userDir, "settings.yaml"), []byte(holeSettings), 0o644))
	t.Setenv("HOME", home)
	t.Setenv("CDPATH", "")
	sink := &gatetest.MemorySink{}
	eng, err := NewEngine(EngineOptions{Home: filepath.Join(root, "state"), Settings: settings.Options{UserDir: userDir}, Audit: sink, Shell: gate.AgentShell{Home: home}})
	must(t, err)
	defer eng.Close()

	claude := func(tool string, input any) (Codec, []byte) {
		w := &hookWorld{ws: ws}
		return Claude{}, w.pre(tool, "", input)
	}
	gemini := func(tool string, input any) (Codec, []byte) {
		b, _ := json.Marshal(map[string]any{"session_id": "sess-g", "cwd": ws, "hook_event_name": "BeforeTool", "tool_name": tool, "tool_input": input})
		return GeminiCLI{}, b
	}
	bash := func(cmd string) (Codec, []byte) { return claude("Bash", map[string]any{"command": cmd}) }
	for i, tt := range []struct {
		name     string
		in       func() (Codec, []byte)
		decision string
		reason   capability.Reason
	}{
		{"cd then ..", func() (Codec, []byte) { return bash("cd sub && cat ../.env") }, "deny", capability.ReasonFilesystemReadDenied},
		{"Gemini dir_path", func() (Codec, []byte) {
			return gemini("run_shell_command", map[string]any{"command": "cat ../.env", "dir_path": "sub"})
		}, "deny", capability.ReasonFilesystemReadDenied},
		{"the shell in a subdirectory", func() (Codec, []byte) {
			// Claude Code's shell stays where an earlier command cd'd to.
			b, _ := json.Marshal(map[string]any{"session_id": "sess-1", "cwd": filepath.Join(ws, "sub"), "hook_event_name": "PreToolUse",
				"tool_name": "Bash", "tool_input": map[string]any{"command": "cat ../.env"}, "tool_use_id": "x"})
			return Claude{ProjectDir: ws}, b
		}, "deny", capability.ReasonFilesystemReadDenied},
		{"cd to a variable", func() (Codec, []byte) { return bash("cd $D && cat ok.txt") }, "ask", capability.ReasonCommandUnparseable},
		{"a sibling workspace", func() (Codec, []byte) { return bash("cat ../ws2/.env") }, "deny", capability.ReasonPathEscape},
		{"the home directory", func() (Codec, []byte) { return bash("cat ~/.ssh/id_rsa") }, "deny", capability.ReasonPathEscape},
		{"a name resolving to loopback", func() (Codec, []byte) {
			return claude("WebFetch", map[string]any{"url": "http://localhost:8080/admin", "prompt": "p"})
		}, "deny", capability.ReasonNetworkPrivateAddress},
		{"Gemini web_fetch of it", func() (Codec, []byte) {
			return gemini("web_fetch", map[string]any{"prompt": "summarize http://localhost:8080/admin please"})
		}, "deny", capability.ReasonNetworkPrivateAddress},
		{"a name that does not resolve", func() (Codec, []byte) {
			return claude("WebFetch", map[string]any{"url": "http://gone.invalid/admin", "prompt": "p"})
		}, "deny", capability.ReasonNetworkResolveFailed},
		{"a write outside", func() (Codec, []byte) { return bash("echo x > ../ws2/f") }, "deny", capability.ReasonPathEscape},
		{"a denied write after cd", func() (Codec, []byte) { return bash("cd sub && echo x > ../.norma/settings.yaml") }, "deny", capability.ReasonFilesystemWriteDenied},
		{"allowed: cd and a workspace file", func() (Codec, []byte) { return bash("cd sub && cat ../ok.txt") }, "allow", capability.ReasonAllowed},
		{"allowed: a workspace file", func() (Codec, []byte) { return bash("cat ok.txt") }, "allow", capability.ReasonAllowed},
		{"allowed: a system directory", func() (Codec, []byte) { return bash("ls /usr") }, "allow", capability.ReasonAllowed},
		{"allowed: git status", func() (Codec, []byte) { return bash("git status") }, "allow", capability.ReasonAllowed},
	} {
		t.Run(tt.name, func(t *testing.T) {
			codec, in := tt.in()
			if isClaude(codec) {
				var m map[string]any
				must(t, json.Unmarshal(in, &m))
				m["tool_use_id"] = fmt.Sprintf("toolu_h%02d", i)
				in, _ = json.Marshal(m)
			}
			out, exit := Handle(context.Background(), codec, eng, in)
			if strings.Contains(string(out), canary) {
				t.Fatalf("the answer holds the canary: %s", out)
			}
			var d, reason string
			if isClaude(codec) {
				d, reason, exit = answer(t, out, exit)
			} else {
				var g geminiDecision
				must(t, json.Unmarshal(out, &g))
				d, reason = g.Decision, g.Reason
				if tt.decision == "ask" {
					tt.decision = "deny" // Gemini CLI cannot ask
				}
			}
			if exit != 0 || d != tt.decision || !strings.HasPrefix(reason, "NORMA "+string(tt.reason)) {
				t.Fatalf("exit %d, %s %q; want %s %s", exit, d, reason, tt.decision, tt.reason)
			}
			ev := sink.Events()
			last := ev[len(ev)-1]
			if last.Type != "capability_decision" || last.Reason != string(tt.reason) {
				t.Fatalf("audit event %+v, want %s", last, tt.reason)
			}
			if isClaude(codec) && last.Detail["tool_use_id"] != fmt.Sprintf("toolu_h%02d", i) {
				t.Fatalf("audit event %+v, want tool_use_id toolu_h%02d", last, i)
			}
		})
	}
	if _, err := os.Lstat(filepath.Join(ws2, "f")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("deciding wrote %s (%v)", filepath.Join(ws2, "f"), err)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, ".norma", "settings.yaml")); len(b) != 0 {
		t.Errorf("deciding wrote .norma/settings.yaml: %q", b)
	}
}

func isClaude(c Codec) bool { _, ok := c.(Claude); return ok }
