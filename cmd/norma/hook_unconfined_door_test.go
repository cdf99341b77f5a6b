package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/norma-run/norma/sandbox/sandboxtest"
)

// TestDoorHookClaudeUnconfinedHoles drives the built binary as Claude
// Code's PreToolUse hook with the calls that Claude Code runs itself,
// outside Norma's sandbox, each allowed by a user rule: a file named after
// a cd (1), a sibling workspace's and the home directory's secrets (2), a
// fetch of a host name that resolves to the loopback server (3), and
// redirect writes outside the workspace or into .norma after a cd (4).
// Each is denied with its code and audited; nothing was read, written or
// fetched. The allowed variants are then run in a real bash, which prints
// what the analysis assumed they read.
func TestDoorHookClaudeUnconfinedHoles(t *testing.T) {
	sandboxtest.Require(t)
	h := newHookEnv(t)
	root, _ := filepath.EvalSymlinks(t.TempDir())
	ws2, home := filepath.Join(root, "ws2"), filepath.Join(root, "home")
	for _, d := range []string{filepath.Join(h.ws, "sub"), filepath.Join(h.ws, ".norma"), ws2, filepath.Join(home, ".ssh")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, body := range map[string]string{
		filepath.Join(h.ws, "ok.txt"): "the ok file\n", filepath.Join(h.ws, "sub", "s.txt"): "the sub file\n",
		filepath.Join(ws2, ".env"): "TOKEN=" + runCanary, filepath.Join(home, ".ssh", "id_rsa"): runCanary,
	} {
		if err := os.WriteFile(name, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// The sibling workspace, as the model names it from this one.
	rel, err := filepath.Rel(h.ws, ws2)
	if err != nil {
		t.Fatal(err)
	}
	port := h.web.origin[strings.LastIndexByte(h.web.origin, ':')+1:]
	st := fmt.Sprintf(`permissions:
  allow: ["Bash(cat:*)", "Bash(cd:*)", "Bash(echo:*)", "Bash(ls:*)", "Bash(git status:*)", "WebFetch"]
network:
  requests:
    - {origin: "http://localhost:%s", methods: [GET], paths: ["/page"]}
`, port)
	if err := os.WriteFile(filepath.Join(h.cfg, "norma", "settings.yaml"), []byte(st), 0o644); err != nil {
		t.Fatal(err)
	}
	h.env = append(h.env, "HOME="+home, "CDPATH=")
	cases := []struct {
		name, tool, id string
		input          map[string]any
		decision       string
		reason         string
	}{
		{"cd then ..", "Bash", "toolu_cd", map[string]any{"command": "cd sub && cat ../.env"}, "deny", "FILESYSTEM_READ_DENIED"},
		{"cd to a variable", "Bash", "toolu_cdvar", map[string]any{"command": "cd $D && cat ok.txt"}, "ask", "COMMAND_UNPARSEABLE"},
		{"a sibling workspace", "Bash", "toolu_ws2", map[string]any{"command": "cat " + rel + "/.env"}, "deny", "PATH_ESCAPE"},
		{"the home directory", "Bash", "toolu_home", map[string]any{"command": "cat ~/.ssh/id_rsa"}, "deny", "PATH_ESCAPE"},
		{"a name resolving to loopback", "WebFetch", "toolu_name", map[string]any{"url": "http://localhost:" + port + "/page", "prompt": "p"}, "deny", "NETWORK_PRIVATE_ADDRESS"},
		{"a write outside", "Bash", "toolu_wout", map[string]any{"command": "echo x > " + rel + "/f"}, "deny", "PATH_ESCAPE"},
		{"a write into .norma after cd", "Bash", "toolu_wnorma", map[string]any{"command": "cd sub && echo x > ../.norma/settings.yaml"}, "deny", "FILESYSTEM_WRITE_DENIED"},
		{"allowed: cd and a workspace file", "Bash", "toolu_ok1", map[string]any{"command": "cd sub && cat ../ok.txt"}, "allow", "ALLOWED"},
		{"allowed: cd may fail", "Bash", "toolu_ok2", map[string]any{"command": "cd sub; cat s.txt"}, "allow", "ALLOWED"},
		{"allowed: a system directory", "Bash", "toolu_ok3", map[string]any{"command": "ls /usr"}, "allow", "ALLOWED"},
		{"allowed: git status", "Bash", "toolu_ok4", map[string]any{"command": "git status"}, "allow", "ALLOWED"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errs := h.hook(t, h.pre(c.tool, c.id, c.input))
			ans := parsePre(t, out)
			if code != 0 || ans.HookSpecificOutput.PermissionDecision != c.decision ||
				!strings.HasPrefix(ans.HookSpecificOutput.PermissionDecisionReason, "NORMA "+c.reason) {
				t.Fatalf("exit %d, answer %s, stderr %s; want %s %s", code, out, errs, c.decision, c.reason)
			}
		})
	}
	found := map[string]bool{}
	for _, e := range h.auditEvents(t) {
		d, _ := e["detail"].(map[string]any)
		if e["type"] == "capability_decision" && d["session"] == "sess-door" {
			id, _ := d["tool_use_id"].(string)
			for _, c := range cases {
				want := c.decision
				if want == "ask" {
					want = "approval_required"
				}
				if c.id == id && e["reason"] == c.reason && e["decision"] == want {
					found[id] = true
				}
			}
		}
	}
	for _, c := range cases {
		if !found[c.id] {
			t.Errorf("no audit event %s %s for %s", c.decision, c.reason, c.id)
		}
	}
	// Nothing happened.
	for _, f := range []string{filepath.Join(ws2, "f"), filepath.Join(h.ws, ".norma", "settings.yaml")} {
		if _, err := os.Lstat(f); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s exists after the decisions (%v)", f, err)
		}
	}
	if h.web.asked("/page") {
		t.Error("the loopback server was asked")
	}
	// The allowed variants do what the analysis assumed: a real bash in
	// the workspace prints the workspace files they were judged by.
	for cmd, want := range map[string]string{
		"cd sub && cat ../ok.txt": "the ok file\n",
		"cd sub; cat s.txt":       "the sub file\n",
	} {
		b := exec.Command("/bin/bash", "--norc", "--noprofile", "-c", cmd)
		b.Dir, b.Env = h.ws, []string{"HOME=" + home, "PATH=/usr/bin:/bin"}
		out, err := b.Output()
		if err != nil || string(out) != want {
			t.Errorf("bash -c %q = %q, %v; want %q", cmd, out, err, want)
		}
	}
	if code, out, errs := doorEnv(t, h.env, "audit", "verify"); code != 0 {
		t.Fatalf("audit verify: %d %s %s", code, out, errs)
	}
}
