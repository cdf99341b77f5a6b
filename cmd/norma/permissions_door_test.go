package main

import (
	"encoding/json"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/norma-run/norma/internal/syncbuf"

	"github.com/creack/pty"

	"github.com/norma-run/norma/agent"
	"github.com/norma-run/norma/provider"
	"github.com/norma-run/norma/settings"
)

// The approval door tests run the built binary with its standard input on
// a pseudo-terminal, so that `norma run` asks at the prompt (its output is
// a pipe, so the prompt is the line-oriented one), and answer it the way a
// person types: one line after the question shows.

// terminalRun is `norma run` with stdin on a pseudo-terminal.
type terminalRun struct {
	t    *testing.T
	cmd  *exec.Cmd
	tty  *os.File
	out  syncbuf.Buffer
	errb syncbuf.Buffer
	done chan error
}

func startOnTerminal(t *testing.T, env []string, args ...string) *terminalRun {
	t.Helper()
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	r := &terminalRun{t: t, tty: ptmx, done: make(chan error, 1)}
	r.cmd = exec.Command(normaBin(t), args...)
	r.cmd.Env = append(os.Environ(), env...)
	r.cmd.Stdin, r.cmd.Stdout, r.cmd.Stderr = tty, &r.out, &r.errb
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close()
	go io.Copy(io.Discard, ptmx) // the terminal's echo
	go func() { r.done <- r.cmd.Wait() }()
	t.Cleanup(func() {
		r.cmd.Process.Kill()
		ptmx.Close()
	})
	return r
}

// waitFor waits until the output holds s n times.
func (r *terminalRun) waitFor(s string, n int) {
	r.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for strings.Count(r.out.String(), s) < n {
		if time.Now().After(deadline) {
			r.t.Fatalf("no %q (×%d) in the output:\n%s\nstderr:\n%s", s, n, r.out.String(), r.errb.String())
		}
		select {
		case err := <-r.done:
			r.done <- err
			if strings.Count(r.out.String(), s) >= n {
				return
			}
			r.t.Fatalf("norma exited (%v) before %q (×%d):\n%s\nstderr:\n%s", err, s, n, r.out.String(), r.errb.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// answer types line on the terminal.
func (r *terminalRun) answer(line string) {
	r.t.Helper()
	if _, err := r.tty.Write([]byte(line + "\n")); err != nil {
		r.t.Fatal(err)
	}
}

// wait waits for norma to exit and returns its exit code.
func (r *terminalRun) wait() int {
	r.t.Helper()
	select {
	case err := <-r.done:
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		} else if err != nil {
			r.t.Fatal(err)
		}
		return 0
	case <-time.After(60 * time.Second):
		r.t.Fatalf("norma did not exit; output:\n%s", r.out.String())
	}
	return -1
}

// isolated keeps the user's own settings files out of a run.
func isolated(t *testing.T) []string {
	return []string{"XDG_CONFIG_HOME=" + t.TempDir(), "NORMA_MANAGED_SETTINGS=" + filepath.Join(t.TempDir(), "none.yaml")}
}

// runState is the saved state of the one run in home.
func runState(t *testing.T, home string) *agent.State {
	t.Helper()
	var paths []string
	filepath.WalkDir(filepath.Join(home, "runs"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Name() == "state.json" {
			paths = append(paths, p)
		}
		return nil
	})
	if len(paths) != 1 {
		t.Fatalf("run states in %s: %v, want one", home, paths)
	}
	b, err := os.ReadFile(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	var st agent.State
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	return &st
}

// toolResult is the content the model received for tool_use id.
func toolResult(st *agent.State, id string) (string, bool) {
	for _, m := range st.Messages {
		for _, b := range m.Blocks {
			if b.Type == provider.BlockToolResult && b.ToolUseID == id {
				return b.Content, true
			}
		}
	}
	return "", false
}

const twoWrites = `turns:
  - tool_calls:
      - {id: w1, name: Write, input: {path: out/a.md, content: one}}
  - tool_calls:
      - {id: w2, name: Write, input: {path: out/a.md, content: two}}
  - text: done
`

// TestDoorApproveForSession: "s" at the first prompt lets the second,
// identical Write run without a prompt.
func TestDoorApproveForSession(t *testing.T) {
	e := newRunEnv(t)
	r := startOnTerminal(t, isolated(t), "--home", e.home, "run", "--workspace", e.ws, "--script", e.script(t, twoWrites), "write twice")
	r.waitFor("Choose [y/s/a/N]: ", 1)
	if out := r.out.String(); !strings.Contains(out, "yes for this session: allow Write(out/a.md)") {
		t.Fatalf("the prompt does not name the session rule:\n%s", out)
	}
	r.answer("s")
	if code := r.wait(); code != 0 {
		t.Fatalf("run: exit %d\n%s", code, r.out.String())
	}
	out := r.out.String()
	if n := strings.Count(out, "Approval required"); n != 1 {
		t.Errorf("%d prompts, want 1 (the second Write runs by the session rule):\n%s", n, out)
	}
	if b, _ := os.ReadFile(filepath.Join(e.ws, "out", "a.md")); string(b) != "two" {
		t.Errorf("out/a.md = %q, want the second write's %q", b, "two")
	}
	if _, err := os.Stat(filepath.Join(e.ws, settings.LocalFile)); err == nil {
		t.Error("a session grant was written to the settings file")
	}
}

// TestDoorApproveAlways: "a" writes the rule to settings.local.yaml; a new
// run allows the call without asking; `permissions list` shows it and
// `permissions revoke` takes it away (and a second revoke exits 1).
func TestDoorApproveAlways(t *testing.T) {
	e := newRunEnv(t)
	env := isolated(t)
	one := e.script(t, "turns:\n  - tool_calls:\n      - {id: w1, name: Write, input: {path: out/a.md, content: one}}\n  - text: done\n")
	r := startOnTerminal(t, env, "--home", e.home, "run", "--workspace", e.ws, "--script", one, "write")
	r.waitFor("Choose [y/s/a/N]: ", 1)
	r.answer("a")
	if code := r.wait(); code != 0 {
		t.Fatalf("run: exit %d\n%s", code, r.out.String())
	}
	if !strings.Contains(r.out.String(), "Adding Write(out/a.md) to .norma/settings.local.yaml.") {
		t.Errorf("the rule was not shown before it was written:\n%s", r.out.String())
	}
	f, err := settings.ReadFile(filepath.Join(e.ws, settings.LocalFile), settings.ScopeLocal, e.ws)
	if err != nil || len(f.Rules) != 1 || f.Rules[0].List != "allow" || f.Rules[0].Text != "Write(out/a.md)" {
		t.Fatalf("settings.local.yaml rules = %+v, %v; want allow Write(out/a.md)", f, err)
	}

	// A new run, not on a terminal: no one to ask, and no need.
	runJSON := func() map[string]any {
		t.Helper()
		code, out, errs := doorEnv(t, env, "--home", e.home, "run", "--workspace", e.ws, "--script", one, "--json", "--approval-wait", "0s", "write")
		if code != 0 {
			t.Fatalf("run: exit %d\n%s%s", code, out, errs)
		}
		for _, ev := range jsonLines(t, out) {
			if ev["event"] == "approval_requested" {
				ev["asked"] = true
				return ev
			}
		}
		return toolCalls(jsonLines(t, out))["w1"]
	}
	if c := runJSON(); c["asked"] == true || c["reason"] != "ALLOWED" {
		t.Errorf("the remembered call: %v, want ALLOWED without approval", c)
	}

	code, out, errs := doorEnv(t, env, "permissions", "list", "--workspace", e.ws, "--json")
	var list struct {
		Grants []struct {
			Rule   string `json:"rule"`
			Source struct {
				Line  int    `json:"line"`
				Scope string `json:"scope"`
			} `json:"source"`
		} `json:"grants"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &list) != nil || len(list.Grants) != 1 || list.Grants[0].Rule != "Write(out/a.md)" ||
		list.Grants[0].Source.Line == 0 || list.Grants[0].Source.Scope != "local" {
		t.Fatalf("permissions list: exit %d %s%s", code, out, errs)
	}
	code, out, _ = doorEnv(t, env, "permissions", "list", "--workspace", e.ws)
	if code != 0 || !strings.Contains(out, `"Write(out/a.md)"`) || !strings.Contains(out, settings.LocalFile+":") || !strings.Contains(out, "yes for this session") {
		t.Errorf("permissions list: exit %d\n%s", code, out)
	}
	if code, out, errs := doorEnv(t, env, "permissions", "revoke", "Write(out/a.md)", "--workspace", e.ws); code != 0 {
		t.Fatalf("revoke: exit %d %s%s", code, out, errs)
	}
	if code, _, errs := doorEnv(t, env, "permissions", "revoke", "Write(out/a.md)", "--workspace", e.ws); code != exitFailed || !strings.Contains(errs, "does not allow") {
		t.Errorf("a second revoke: exit %d %s, want 1", code, errs)
	}
	if c := runJSON(); c["asked"] != true {
		t.Errorf("after revoke the call was not asked about: %v", c)
	}
}

// TestDoorDenyWithReason: "n" and a reason; the model receives the reason
// with the refusal, and nothing is written.
func TestDoorDenyWithReason(t *testing.T) {
	e := newRunEnv(t)
	one := e.script(t, "turns:\n  - tool_calls:\n      - {id: w1, name: Write, input: {path: out/a.md, content: one}}\n  - text: done\n")
	r := startOnTerminal(t, isolated(t), "--home", e.home, "run", "--workspace", e.ws, "--script", one, "write")
	r.waitFor("Choose [y/s/a/N]: ", 1)
	r.answer("n")
	r.waitFor("Why not?", 1)
	r.answer("write to docs/ instead")
	if code := r.wait(); code != 0 {
		t.Fatalf("run: exit %d\n%s", code, r.out.String())
	}
	got, ok := toolResult(runState(t, e.home), "w1")
	if !ok || !strings.Contains(got, "APPROVAL_DENIED") || !strings.Contains(got, `reason: "write to docs/ instead"`) {
		t.Errorf("the model received %q, want the denial with its reason", got)
	}
	if _, err := os.Stat(filepath.Join(e.ws, "out", "a.md")); err == nil {
		t.Error("the refused Write wrote the file")
	}
}

// TestDoorPendingWaitShared: a headless run with three calls that need
// approval waits --approval-wait once for all of them, then stops
// awaiting approval for the three.
func TestDoorPendingWaitShared(t *testing.T) {
	e := newRunEnv(t)
	script := e.script(t, `turns:
  - tool_calls:
      - {id: w1, name: Write, input: {path: a.md, content: a}}
      - {id: w2, name: Write, input: {path: b.md, content: b}}
      - {id: w3, name: Write, input: {path: c.md, content: c}}
  - text: never
`)
	start := time.Now()
	code, out, errs := doorEnv(t, isolated(t), "--home", e.home, "run", "--workspace", e.ws, "--script", script, "--json", "--approval-wait", "1s", "write")
	took := time.Since(start)
	if code != 0 {
		t.Fatalf("run: exit %d\n%s%s", code, out, errs)
	}
	evs := jsonLines(t, out)
	end := last(evs)
	if end["status"] != string(agent.StatusAwaitingApproval) {
		t.Fatalf("run ended %v, want awaiting_approval", end)
	}
	pending, _ := end["pending"].([]any)
	var ids []string
	for _, p := range pending {
		if m, ok := p.(map[string]any); ok {
			id, _ := m["tool_use_id"].(string)
			if id == "" {
				id, _ = m["toolUseId"].(string)
			}
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	if !slices.Equal(ids, []string{"w1", "w2", "w3"}) {
		t.Errorf("pending = %v, want w1 w2 w3", pending)
	}
	if took > 2500*time.Millisecond {
		t.Errorf("the run took %v; three requests must share one wait of 1s", took)
	}
}
