package host

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/norma-run/norma/audit"
	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/plugin"
	"github.com/norma-run/norma/secret"
)

// TestLifecycle: a crash, a hang and an output flood each end the call with
// a coded error, are audited, kill the process tree, and the plugin
// restarts for the next call; Close kills the tree.
func TestLifecycle(t *testing.T) {
	e := newEnv(t)
	e.install(t, "echo", filepath.Join(repoRoot(t), "examples/plugins/echo/manifest.yaml"))
	e.host.cfg.CallTimeout = 4 * time.Second
	e.host.cfg.MaxOutput = 1 << 20
	ctx := t.Context()
	p, err := e.host.Load(ctx, "com.example.echo")
	if err != nil {
		t.Fatal(err)
	}
	echo := func(text string) (string, error) {
		in, _ := json.Marshal(map[string]string{"text": text})
		r, err := p.call(ctx, "echo", in, "")
		return r.Content, err
	}
	pid := func() int {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.proc == nil {
			return 0
		}
		return p.proc.Pid()
	}
	if out, err := echo("hi"); err != nil || out != "hi" {
		t.Fatalf("echo = %q, %v", out, err)
	}
	for _, tc := range []struct {
		input  string
		reason capability.Reason
	}{
		{"!crash", ReasonPluginCrashed},
		{"!hang", capability.ReasonTimeout},
		{"!flood", ReasonOutputTooLarge},
	} {
		before := pid()
		start := time.Now()
		_, err := echo(tc.input)
		got := capability.ReasonOf(err)
		// An 8 MiB answer on a loaded machine (race detector, CI) may not
		// even arrive before the deadline: a flood then ends as a hung call,
		// which is just as ended, audited and killed.
		if tc.input == "!flood" && got == capability.ReasonTimeout {
			got = ReasonOutputTooLarge
		}
		if got != tc.reason {
			t.Fatalf("%s: err = %v, want %s", tc.input, err, tc.reason)
		}
		if tc.input == "!hang" && time.Since(start) > 10*time.Second {
			t.Fatalf("a hung call took %v", time.Since(start))
		}
		if pid() != 0 || processAlive(before) {
			t.Fatalf("%s: the process tree %d is still running", tc.input, before)
		}
		// Restart with backoff: retry until the backoff has passed.
		deadline := time.Now().Add(10 * time.Second)
		for {
			out, err := echo("again")
			if err == nil && out == "again" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: no restart: %v", tc.input, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	recs, _ := e.audit.Query(ctx, audit.Filter{})
	crashes := 0
	for _, r := range recs {
		if r.Event.Type == audit.TypeToolCallFinished && r.Event.IsError {
			crashes++
		}
	}
	if crashes < 3 {
		t.Errorf("%d crash events audited, want one per misbehaviour", crashes)
	}
	last := pid()
	p.Close()
	if processAlive(last) {
		t.Errorf("Close left process %d running", last)
	}
}

func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	return syscall.Kill(pid, 0) == nil
}

// TestLoadFollowsUpdates: Load returns the loaded plugin while nothing
// changed, and after an update stops it and loads the new version under a
// new policy compile — an old compile is never used.
func TestLoadFollowsUpdates(t *testing.T) {
	e := newEnv(t)
	src := filepath.Join(repoRoot(t), "examples/plugins/echo/manifest.yaml")
	e.install(t, "echo", src)
	ctx := t.Context()
	p1, err := e.host.Load(ctx, "com.example.echo")
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := e.host.Load(ctx, "com.example.echo"); again != p1 {
		t.Fatal("Load recompiled an unchanged plugin")
	}
	if _, err := p1.call(ctx, "echo", json.RawMessage(`{"text":"v1"}`), ""); err != nil {
		t.Fatal(err)
	}
	before := p1.proc.Pid()
	data, _ := os.ReadFile(src)
	bin := buildExample(t, "echo")
	pkg := t.TempDir()
	os.WriteFile(filepath.Join(pkg, "manifest.yaml"), []byte(strings.Replace(string(data), "version: 1.0.0", "version: 1.0.1", 1)), 0o644)
	os.MkdirAll(filepath.Join(pkg, "bin"), 0o755)
	b, _ := os.ReadFile(bin)
	os.WriteFile(filepath.Join(pkg, "bin", "echo"), b, 0o755)
	e.signer(pkg)
	if res, err := e.mgr.Update(ctx, pkg, plugin.InstallOptions{}); err != nil || res.Held {
		t.Fatalf("update: %+v %v", res, err)
	}
	p2, err := e.host.Load(ctx, "com.example.echo")
	if err != nil {
		t.Fatal(err)
	}
	if p2 == p1 || p2.Manifest().Version != "1.0.1" || p2.Policy() == p1.Policy() {
		t.Fatalf("after the update Load returned version %s (same plugin: %v)", p2.Manifest().Version, p2 == p1)
	}
	if processAlive(before) {
		t.Error("the old version's process still runs")
	}
	if out, err := p2.call(ctx, "echo", json.RawMessage(`{"text":"v2"}`), ""); err != nil || out.Content != "v2" {
		t.Fatalf("new version: %+v %v", out, err)
	}
}

// echoCall calls the echo tool of p with text.
func echoCall(t *testing.T, p *Plugin, text string) (string, error) {
	t.Helper()
	in, _ := json.Marshal(map[string]string{"text": text})
	r, err := p.call(t.Context(), "echo", in, "")
	return r.Content, err
}

func pidOf(p *Plugin) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.proc == nil {
		return 0
	}
	return p.proc.Pid()
}

// TestCrashShowsStderrAndRestarts: a server that dies during a call ends
// it with PLUGIN_CRASHED whose message carries the last lines of its
// stderr — redacted and escaped — as does the crash's audit event; the
// next call waits out the backoff and is answered by a fresh process.
func TestCrashShowsStderrAndRestarts(t *testing.T) {
	e := newEnv(t)
	e.install(t, "echo", filepath.Join(repoRoot(t), "examples/plugins/echo/manifest.yaml"))
	red := secret.NewRedactor()
	if err := red.AddValue("issue_api_token", secret.NewValue([]byte(canaryToken))); err != nil {
		t.Fatal(err)
	}
	e.host.cfg.Redactor = red
	p, err := e.host.Load(t.Context(), "com.example.echo")
	if err != nil {
		t.Fatal(err)
	}
	if out, err := echoCall(t, p, "hi"); err != nil || out != "hi" {
		t.Fatalf("echo = %q, %v", out, err)
	}
	first := pidOf(p)
	stderr := "line 1\nline 2\nline 3\nline 4\nline 5\nline 6\npanic: \x1b]0;pwned\x07 token=" + canaryToken + "\n"
	_, err = echoCall(t, p, "!crash"+stderr)
	crashedAt := time.Now()
	if capability.ReasonOf(err) != ReasonPluginCrashed {
		t.Fatalf("crash: err = %v, want %s", err, ReasonPluginCrashed)
	}
	msg := err.Error()
	if !strings.Contains(msg, `panic: \x1b]0;pwned\x07 token=`) || !strings.Contains(msg, "line 3") || strings.Contains(msg, "line 1\n") {
		t.Errorf("the crash error lacks the stderr tail (escaped, last lines only):\n%s", msg)
	}
	if strings.ContainsAny(msg, "\x1b\x07") || strings.Contains(msg, canaryToken) {
		t.Errorf("the crash error carries raw control bytes or the secret:\n%q", msg)
	}
	if processAlive(first) {
		t.Fatalf("the crashed process %d still runs", first)
	}
	recs, _ := e.audit.Query(t.Context(), audit.Filter{})
	var ev *audit.Event
	for i := range recs {
		if recs[i].Event.Reason == string(ReasonPluginCrashed) {
			ev = &recs[i].Event
		}
	}
	if ev == nil || ev.Tool != "mcp__com.example.echo__echo" || !strings.Contains(ev.Detail["stderr"], `panic: \x1b]0;pwned\x07`) ||
		strings.Contains(ev.Detail["stderr"], canaryToken) || ev.Detail["restart_after"] == "" {
		t.Fatalf("crash audit event = %+v", ev)
	}

	// The next call, at once: it waits out the backoff, then a fresh
	// process answers.
	out, err := echoCall(t, p, "again")
	if err != nil || out != "again" {
		t.Fatalf("after the crash: %q, %v", out, err)
	}
	if since := time.Since(crashedAt); since < 150*time.Millisecond {
		t.Errorf("restarted after %v, before the backoff", since)
	}
	if now := pidOf(p); now == 0 || now == first {
		t.Errorf("pid after the restart = %d (was %d)", now, first)
	}
}

// TestToolTimeout: a call of a tool whose configured timeout passes ends
// at that timeout with TIMEOUT (layer host), its whole process tree — the
// server and the child it started — is killed, and the next call is
// answered by a fresh process at once.
func TestToolTimeout(t *testing.T) {
	e := newEnv(t)
	e.install(t, "echo", filepath.Join(repoRoot(t), "examples/plugins/echo/manifest.yaml"))
	e.host.cfg.CallTimeout = time.Minute
	e.host.cfg.ToolTimeouts = map[string]time.Duration{"mcp__com.example.echo__echo": time.Second}
	p, err := e.host.Load(t.Context(), "com.example.echo")
	if err != nil {
		t.Fatal(err)
	}
	tools, err := p.Tools()
	if err != nil || len(tools) != 1 || tools[0].(interface{ Timeout() time.Duration }).Timeout() != time.Second+gateGrace {
		t.Fatalf("the gate's deadline of the tool: %v %v", tools, err)
	}
	if out, err := echoCall(t, p, "hi"); err != nil || out != "hi" {
		t.Fatalf("echo = %q, %v", out, err)
	}
	server := pidOf(p)
	mark := fmt.Sprintf("norma-hang-%d", time.Now().UnixNano())
	seen := make(chan bool, 1)
	go func() {
		deadline := time.Now().Add(3 * time.Second)
		for time.Now().Before(deadline) {
			if len(marked(mark)) > 0 {
				seen <- true
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		seen <- false
	}()
	start := time.Now()
	_, err = echoCall(t, p, "!hangtree:"+mark)
	took := time.Since(start)
	var ce *capability.Error
	if !errors.As(err, &ce) || ce.Decision.Reason != capability.ReasonTimeout || ce.Decision.Layer != "host" {
		t.Fatalf("hung call: err = %v, want TIMEOUT (layer host)", err)
	}
	if took < time.Second || took > 4*time.Second {
		t.Errorf("the hung call ended after %v, want its 1s timeout", took)
	}
	if !<-seen {
		t.Fatal("the hung call's child process never ran: the test proves nothing")
	}
	if left := marked(mark); len(left) > 0 || processAlive(server) {
		t.Fatalf("left running: children %v, server alive %v", left, processAlive(server))
	}
	start = time.Now()
	if out, err := echoCall(t, p, "next"); err != nil || out != "next" {
		t.Fatalf("the call after the timeout: %q, %v", out, err)
	}
	if pidOf(p) == server || time.Since(start) > 3*time.Second {
		t.Errorf("the next call was not answered at once by a fresh process")
	}
	recs, _ := e.audit.Query(t.Context(), audit.Filter{})
	found := false
	for _, r := range recs {
		found = found || (r.Event.Reason == string(capability.ReasonTimeout) && r.Event.Detail["timeout"] == "1s")
	}
	if !found {
		t.Error("the timeout is not audited")
	}
}

// marked returns the pids of processes whose command line contains mark.
func marked(mark string) []int {
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, d := range ents {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		if b, err := os.ReadFile("/proc/" + d.Name() + "/cmdline"); err == nil && strings.Contains(string(b), mark) {
			pids = append(pids, pid)
		}
	}
	return pids
}
