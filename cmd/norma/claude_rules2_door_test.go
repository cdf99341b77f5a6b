package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/norma-run/norma/sandbox/sandboxtest"
)

// protectedBody is what protected/a holds in the deny-one-verb tests.
const protectedBody = "the protected original\n"

// TestDoorHookDenyOneVerb drives the built hook: under
// deny: Edit(./protected/**), Claude Code's Edit, Write, MultiEdit and
// NotebookEdit of protected/ and a Bash command writing there are denied,
// while Read, Grep, Glob and `cat protected/a` are allowed; the confined
// cat (the hook's updatedInput, run by a real bash) prints the content,
// and a confined script that writes protected/a by a name the analysis
// cannot see fails and leaves the file as it was (the same script run
// unconfined does change it: the attack is real).
func TestDoorHookDenyOneVerb(t *testing.T) {
	sandboxtest.Require(t)
	h := newHookEnv(t)
	setup := func(ws string) {
		for f, body := range map[string]string{"protected/a": protectedBody, "README.md": "readme\n",
			"w.sh": "#!/bin/sh\nd=prot; echo x > ${d}ected/a\necho y > ${d}ected/new\n"} {
			p := filepath.Join(ws, f)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	setup(h.ws)
	if err := os.WriteFile(filepath.Join(h.cfg, "norma", "settings.yaml"), []byte(`permissions:
  allow: ["Bash(cat:*)", "Bash(echo:*)", "Bash(sh ./w.sh)", "Bash(cp:*)", "Edit", "Write"]
  deny: ["Edit(./protected/**)"]
`), 0o644); err != nil {
		t.Fatal(err)
	}
	pa := filepath.Join(h.ws, "protected", "a")
	for _, c := range []struct {
		tool  string
		input map[string]any
		want  string
	}{
		{"Read", map[string]any{"file_path": pa}, "allow"},
		{"Grep", map[string]any{"pattern": "original", "path": filepath.Join(h.ws, "protected")}, "allow"},
		{"Glob", map[string]any{"pattern": "protected/*"}, "allow"},
		{"Bash", map[string]any{"command": "cat protected/a"}, "allow"},
		{"Edit", map[string]any{"file_path": pa, "old_string": "original", "new_string": "changed"}, "deny"},
		{"MultiEdit", map[string]any{"file_path": pa, "edits": []any{map[string]any{"old_string": "original", "new_string": "x"}}}, "deny"},
		{"Write", map[string]any{"file_path": filepath.Join(h.ws, "protected", "new"), "content": "x"}, "deny"},
		{"Write", map[string]any{"file_path": filepath.Join(h.ws, "PROTECTED", "a"), "content": "x"}, "deny"},
		{"NotebookEdit", map[string]any{"notebook_path": filepath.Join(h.ws, "protected", "n.ipynb"), "new_source": "x"}, "deny"},
		{"Bash", map[string]any{"command": "echo x > protected/a"}, "deny"},
		{"Bash", map[string]any{"command": "cp README.md protected/c.txt"}, "deny"},
		{"Write", map[string]any{"file_path": filepath.Join(h.ws, "out.txt"), "content": "x"}, "allow"},
	} {
		code, out, errs := h.hook(t, h.pre(c.tool, "toolu_verb", c.input))
		if got := parsePre(t, out).HookSpecificOutput.PermissionDecision; code != 0 || got != c.want {
			t.Errorf("%s %v: exit %d, answer %s, stderr %s; want %s", c.tool, c.input, code, out, errs, c.want)
		}
	}
	confined := func(command string) string {
		t.Helper()
		code, out, errs := h.hook(t, h.pre("Bash", "toolu_confined", map[string]any{"command": command}))
		var a confinedAnswer
		if err := json.Unmarshal([]byte(out), &a); err != nil || code != 0 || a.HookSpecificOutput.PermissionDecision != "allow" {
			t.Fatalf("%q: exit %d, answer %s, stderr %s; want allow", command, code, out, errs)
		}
		var in struct {
			Command string `json:"command"`
		}
		if err := json.Unmarshal(a.HookSpecificOutput.UpdatedInput, &in); err != nil || !strings.Contains(in.Command, " hook exec ") {
			t.Fatalf("%q: no confined command in %s", command, out)
		}
		return in.Command
	}
	if out, code := h.claudeBash(t, confined("cat protected/a")); code != 0 || out != protectedBody {
		t.Errorf("confined cat protected/a: exit %d, %q; want the content", code, out)
	}
	// The attack is real unconfined, on a copy.
	cp := t.TempDir()
	setup(cp)
	ctl := exec.Command("/bin/sh", "./w.sh")
	ctl.Dir = cp
	if out, err := ctl.CombinedOutput(); err != nil {
		t.Fatalf("unconfined w.sh: %v %s", err, out)
	}
	if b, _ := os.ReadFile(filepath.Join(cp, "protected", "a")); string(b) != "x\n" {
		t.Fatalf("unconfined w.sh left protected/a = %q: the attack is not real", b)
	}
	out, code := h.claudeBash(t, confined("sh ./w.sh"))
	if code == 0 || !refused(out) {
		t.Errorf("confined sh ./w.sh: exit %d, %q; want the sandbox's refusal", code, out)
	}
	if b, err := os.ReadFile(pa); err != nil || string(b) != protectedBody {
		t.Errorf("protected/a = %q, %v after the confined script", b, err)
	}
	if _, err := os.Lstat(filepath.Join(h.ws, "protected", "new")); err == nil {
		t.Error("protected/new exists on the host")
	}
}

// TestDoorRunDenyOneVerb: the same rule in `norma run` (a workspace
// settings file, approvals given with --yes so that only the rules and
// the sandbox stand): the Write and the Edit of protected/a are denied,
// the Bash commands that write there by a name the analysis sees are
// denied, those that hide it run and fail in the sandbox, and nothing on
// the host changes; the Read returns the content and Bash copies it out.
func TestDoorRunDenyOneVerb(t *testing.T) {
	sandboxtest.Require(t)
	e := newRunEnv(t)
	rtWrite(t, filepath.Join(e.ws, "protected", "a"), protectedBody, 0o644)
	rtWrite(t, filepath.Join(e.ws, ".norma", "settings.yaml"), "permissions:\n  deny: [\"Edit(./protected/**)\"]\n", 0o644)
	trustWorkspace(t, nil, e.home, e.ws)
	calls := []struct{ id, tool, input, decision string }{
		{"read", "Read", `{"path":"protected/a"}`, "allow"},
		{"write", "Write", `{"path":"protected/a","content":"x"}`, "deny"},
		{"edit", "Edit", `{"path":"protected/a","old_string":"original","new_string":"changed"}`, "deny"},
		{"redirect", "Bash", `{"command":"echo x > protected/a"}`, "deny"},
		{"hidden", "Bash", `{"command":"d=prot; echo x > ${d}ected/a"}`, "allow"},
		{"hidden-new", "Bash", `{"command":"d=prot; echo x > ${d}ected/new"}`, "allow"},
		{"hidden-rm", "Bash", `{"command":"d=prot; rm -f ${d}ected/a"}`, "allow"},
		{"copy-out", "Bash", `{"command":"cat protected/a > copy.txt"}`, "allow"},
	}
	var script strings.Builder
	script.WriteString("turns:\n  - tool_calls:\n")
	for _, c := range calls {
		fmt.Fprintf(&script, "      - {id: %s, name: %s, input: %s}\n", c.id, c.tool, c.input)
	}
	script.WriteString("  - text: done\n")
	code, out, errs := door(t, "--home", e.home, "run", "--workspace", e.ws, "--provider", "scripted",
		"--script", e.script(t, script.String()), "--yes", "--json", "go")
	if code != 0 {
		t.Fatalf("run: exit %d\n%s%s", code, out, errs)
	}
	got := toolCalls(jsonLines(t, out))
	for _, c := range calls {
		r := got[c.id]
		res, _ := r["result"].(string)
		if r == nil || r["decision"] != c.decision {
			t.Errorf("%s %s: %v %v %q; want %s", c.tool, c.input, r["decision"], r["reason"], res, c.decision)
			continue
		}
		switch c.id {
		case "read":
			if !strings.Contains(res, "the protected original") {
				t.Errorf("Read protected/a: %q; want the content", res)
			}
		case "hidden", "hidden-new", "hidden-rm":
			if strings.HasSuffix(res, "[exit code 0]") || !refused(res) {
				t.Errorf("%s ran without the sandbox's refusal: %q", c.input, res)
			}
		}
	}
	if b, err := os.ReadFile(filepath.Join(e.ws, "protected", "a")); err != nil || string(b) != protectedBody {
		t.Errorf("protected/a = %q, %v on the host", b, err)
	}
	if _, err := os.Lstat(filepath.Join(e.ws, "protected", "new")); err == nil {
		t.Error("protected/new exists on the host")
	}
	if b, err := os.ReadFile(filepath.Join(e.ws, "copy.txt")); err != nil || string(b) != protectedBody {
		t.Errorf("copy.txt = %q, %v; want the content Bash read", b, err)
	}
}

// TestDoorHookRuleSemantics drives the built hook over the rest of issue
// 31's semantics: in acceptEdits (Norma's and Claude Code's), the
// file-system commands Claude Code runs without asking are allowed inside
// the workspace and really run (the confined command made the directory
// and moved the file on the host), while any write under .git/ asks and a
// command of another kind asks; in the default mode they ask. An ask rule
// on a file a command names asks (cat notes/a.txt), and git show of a
// REV:PATH whose file a deny rule or the floor denies is denied under the
// starter settings' allow of Bash(git show:*), where the same command
// unconfined prints the committed secret.
func TestDoorHookRuleSemantics(t *testing.T) {
	sandboxtest.Require(t)
	h := newHookEnv(t)
	for f, body := range map[string]string{"notes/a.txt": "a note\n", "k.pem": runCanary + "\n", "docs/d.md": "doc\n"} {
		rtWrite(t, filepath.Join(h.ws, f), body, 0o644)
	}
	git := func(args ...string) string {
		t.Helper()
		c := exec.Command("git", append([]string{"-C", h.ws, "-c", "user.name=n", "-c", "user.email=n@example.com"}, args...)...)
		out, err := c.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
		return string(out)
	}
	git("add", "-f", "k.pem", "a.txt")
	git("commit", "-q", "-m", "with a key")
	if !strings.Contains(git("show", "HEAD:k.pem"), runCanary) {
		t.Fatal("git show HEAD:k.pem does not print the key: the attack is not real")
	}
	starter, err := os.ReadFile(filepath.Join("..", "..", "settings", "starter.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	// The starter's rules, with an ask of notes/ and the mode acceptEdits.
	st := strings.Replace(string(starter), "  ask:\n", "  ask:\n    - \"Read(./notes/**)\"\n", 1)
	st = strings.Replace(st, "defaultMode: default", "defaultMode: acceptEdits", 1)
	st = strings.Replace(st, "  ask:\n    - \"Read(./notes/**)\"\n    - Write\n    - Edit\n    - MultiEdit\n", "  ask:\n    - \"Read(./notes/**)\"\n", 1)
	rtWrite(t, filepath.Join(h.cfg, "norma", "settings.yaml"), st, 0o644)
	pre := func(mode, tool string, input map[string]any) []byte {
		b, _ := json.Marshal(map[string]any{"session_id": "sess-sem", "transcript_path": "/tmp/t.jsonl", "cwd": h.ws,
			"permission_mode": mode, "hook_event_name": "PreToolUse", "tool_name": tool, "tool_input": input, "tool_use_id": "toolu_sem"})
		return b
	}
	for _, c := range []struct {
		mode, tool string
		input      map[string]any
		want       string
	}{
		{"acceptEdits", "Bash", map[string]any{"command": "mkdir -p out/sub && touch out/sub/t && cp a.txt out/b && mv out/b out/c && rm out/sub/t"}, "allow"},
		{"acceptEdits", "Bash", map[string]any{"command": "sed -i s/doc/DOC/ docs/d.md"}, "allow"},
		{"acceptEdits", "Write", map[string]any{"file_path": filepath.Join(h.ws, "out", "w.txt"), "content": "x"}, "allow"},
		{"acceptEdits", "Write", map[string]any{"file_path": filepath.Join(h.ws, ".git", "description"), "content": "x"}, "ask"},
		{"acceptEdits", "Bash", map[string]any{"command": "mkdir -p .git/x"}, "ask"},
		{"acceptEdits", "Bash", map[string]any{"command": "touch .GIT/y"}, "ask"},
		{"acceptEdits", "Bash", map[string]any{"command": "make"}, "ask"},
		{"acceptEdits", "Bash", map[string]any{"command": "cd docs && rm d.md"}, "ask"},
		{"acceptEdits", "Bash", map[string]any{"command": "rm *.txt"}, "ask"},
		{"default", "Bash", map[string]any{"command": "mkdir -p out2"}, "ask"},
		{"default", "Bash", map[string]any{"command": "cat notes/a.txt"}, "ask"},
		{"default", "Bash", map[string]any{"command": "cat a.txt"}, "allow"},
		{"default", "Bash", map[string]any{"command": "git show HEAD:k.pem"}, "deny"},
		{"default", "Bash", map[string]any{"command": "git show HEAD:.env"}, "deny"},
		{"default", "Bash", map[string]any{"command": "git diff HEAD:a.txt HEAD:k.pem"}, "deny"},
		{"default", "Bash", map[string]any{"command": "git show HEAD:a.txt"}, "allow"},
	} {
		code, out, errs := h.hook(t, pre(c.mode, c.tool, c.input))
		if got := parsePre(t, out).HookSpecificOutput.PermissionDecision; code != 0 || got != c.want {
			t.Errorf("%s %s %v: exit %d, answer %s, stderr %s; want %s", c.mode, c.tool, c.input, code, out, errs, c.want)
		}
	}
	// The allowed file commands really run, confined, as Claude Code runs
	// the updated command.
	_, out, _ := h.hook(t, pre("acceptEdits", "Bash", map[string]any{"command": "mkdir -p out/sub && cp a.txt out/b && mv out/b out/c"}))
	var a confinedAnswer
	if err := json.Unmarshal([]byte(out), &a); err != nil {
		t.Fatal(err)
	}
	var in struct {
		Command string `json:"command"`
	}
	if err := json.Unmarshal(a.HookSpecificOutput.UpdatedInput, &in); err != nil || !strings.Contains(in.Command, " hook exec ") {
		t.Fatalf("no confined command in %s", out)
	}
	if o, code := h.claudeBash(t, in.Command); code != 0 {
		t.Fatalf("the confined file commands: exit %d, %q", code, o)
	}
	if fi, err := os.Stat(filepath.Join(h.ws, "out", "sub")); err != nil || !fi.IsDir() {
		t.Errorf("out/sub: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(h.ws, "out", "c")); err != nil || string(b) != "hello" {
		t.Errorf("out/c = %q, %v; want a copy of a.txt", b, err)
	}
}
