package shell

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/gate"
	"github.com/norma-run/norma/sandbox/sandboxpolicy"
)

func TestConfigRefused(t *testing.T) {
	base := Config{SessionID: "ok"}
	tests := []struct {
		name string
		edit func(*Config)
	}{
		{"empty session", func(c *Config) { c.SessionID = "" }},
		{"path in session", func(c *Config) { c.SessionID = "../other" }},
		{"slash in session", func(c *Config) { c.SessionID = "a/b" }},
		{"space in session", func(c *Config) { c.SessionID = "a b" }},
		{"long session", func(c *Config) { c.SessionID = strings.Repeat("a", 65) }},
		{"default above max", func(c *Config) { c.DefaultTimeout, c.MaxTimeout = time.Hour, time.Minute }},
		{"negative timeout", func(c *Config) { c.DefaultTimeout = -1 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := base
			tt.edit(&c)
			m, tools, err := Tools(c)
			if capability.ReasonOf(err) != capability.ReasonShellConfigInvalid || m != nil || tools != nil {
				t.Fatalf("Tools(%s) = %v, %d tools, %v; want SHELL_CONFIG_INVALID", tt.name, m, len(tools), err)
			}
		})
	}
	m, tools, err := Tools(base)
	if err != nil || len(tools) != 10 {
		t.Fatalf("Tools(valid) = %d tools, %v; want 10, nil", len(tools), err)
	}
	m.Close()
}

func TestBash(t *testing.T) {
	requireSandbox(t)
	t.Setenv("NORMA_HOST_ONLY", "host-secret")
	f := newFixture(t, fixtureOpts{})
	tests := []struct {
		name    string
		command string
		timeout int
		want    []string
		notWant []string
		isErr   bool
	}{
		{name: "stdout, stderr and exit code", command: "echo out; echo err >&2; exit 3", want: []string{"out", "err", "[exit code 3]"}},
		{name: "working directory is the workspace", command: "cat src/visible.txt", want: []string{visible, "[exit code 0]"}},
		{name: "nothing inherited", command: "echo host=${NORMA_HOST_ONLY:-unset} lang=$LANG", want: []string{"host=unset", "lang=C.UTF-8"}, notWant: []string{"host-secret"}},
		{name: "timeout kills the tree", command: "sleep 30 & sleep 30; echo never", timeout: 300, want: []string{"timed out"}, notWant: []string{"never"}, isErr: true},
		{name: "output bounded head and tail", command: "i=0; while [ $i -lt 4000 ]; do echo line-$i-xxxxxxxxxx; i=$((i+1)); done", want: []string{"line-0-", "line-3999-", "bytes of output omitted"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := map[string]any{"command": tt.command}
			if tt.timeout > 0 {
				in["timeout_ms"] = tt.timeout
			}
			start := time.Now()
			res, err := f.call(t, "Bash", in)
			if err != nil {
				t.Fatalf("Bash(%q) error = %v", tt.command, err)
			}
			for _, w := range tt.want {
				if !strings.Contains(res.Content, w) {
					t.Errorf("Bash(%q) = %q, want it to contain %q", tt.command, res.Content, w)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(res.Content, w) {
					t.Errorf("Bash(%q) = %q, must not contain %q", tt.command, res.Content, w)
				}
			}
			if res.IsError != tt.isErr {
				t.Errorf("Bash(%q).IsError = %v, want %v", tt.command, res.IsError, tt.isErr)
			}
			if tt.timeout > 0 && time.Since(start) > 10*time.Second {
				t.Errorf("Bash(%q) took %v despite timeout %dms", tt.command, time.Since(start), tt.timeout)
			}
			if len(res.Content) > outputHead+outputTail+200 {
				t.Errorf("Bash(%q) output %d bytes, above the bound", tt.command, len(res.Content))
			}
		})
	}
	t.Run("writes land in the workspace", func(t *testing.T) {
		if _, err := f.call(t, "Bash", map[string]any{"command": "echo made > src/new.txt"}); err != nil {
			t.Fatal(err)
		}
		if b, err := os.ReadFile(filepath.Join(f.ws, "src/new.txt")); err != nil || string(b) != "made\n" {
			t.Fatalf("src/new.txt = %q, %v; want %q", b, err, "made\n")
		}
	})
}

// TestSandboxBlocks runs each attack through the real gate with rules that
// allow its command word: the gate lets it through (decision ALLOWED by a
// rule), so whatever stops it is the sandbox. Each attack must leak no
// canary and leave the outside file untouched; the control row shows the
// same command shape works on a file the policy allows.
func TestSandboxBlocks(t *testing.T) {
	requireSandbox(t)
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Write([]byte(netCanary))
	}))
	defer srv.Close()
	f := newFixture(t, fixtureOpts{})
	netTry := "curl -sS --max-time 3 "
	if _, err := os.Stat("/usr/bin/curl"); err != nil {
		netTry = "cat < /dev/tcp/"
	}
	before := stateOf(t, f.outside)
	tests := []struct {
		name    string
		command string
		control string // for the control row: must appear
		// contained: the command may succeed, inside the sandbox's
		// private /tmp, as long as the host is untouched.
		contained bool
	}{
		{name: "control: allowed file is readable", command: "cat src/visible.txt", control: visible},
		{name: "cat .env", command: "cat .env"},
		{name: "cat nested .env", command: "cat sub/.env.local"},
		{name: "grep -r TOKEN .", command: "grep -r TOKEN ."},
		{name: "grep .git", command: "grep -r TOKEN .git"},
		{name: "symlink out of the workspace", command: "ln -s ../outside x && cat x"},
		{name: "absolute path outside", command: "cat " + f.outside},
		{name: "metadata service", command: netTry + "http://169.254.169.254/latest/meta-data/"},
		{name: "host loopback server", command: netTry + srv.URL + "/"},
		{name: "write outside through a symlink", command: "ln -sf ../outside y && echo pwned > y", contained: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := f.exec(t, "Bash", map[string]any{"command": tt.command})
			// No approver is configured: ALLOWED means an allow rule let
			// the command through, so what stops it is the sandbox.
			if r.Reason != capability.ReasonAllowed || r.Decision.Mode != capability.Allow {
				t.Fatalf("Execute(Bash %q) = %s %q; want the gate to allow it so that the sandbox is tested", tt.command, r.Reason, r.Content)
			}
			if tt.control != "" {
				if !strings.Contains(r.Content, tt.control) {
					t.Fatalf("control Bash(%q) = %q, want %q", tt.command, r.Content, tt.control)
				}
				return
			}
			noCanary(t, "Bash("+tt.command+")", r.Content)
			if !tt.contained && strings.Contains(r.Content, "[exit code 0]") {
				t.Errorf("Bash(%q) = %q, want a failure", tt.command, r.Content)
			}
			if after := stateOf(t, f.outside); after != before {
				t.Fatalf("Bash(%q) changed the outside file: %+v -> %+v", tt.command, before, after)
			}
		})
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the loopback server received %d requests from the sandbox", n)
	}
	// The denied files are untouched on the host.
	if b, _ := os.ReadFile(filepath.Join(f.ws, ".env")); !strings.Contains(string(b), envCanary) {
		t.Fatalf(".env was changed: %q", b)
	}
	// No spill or audit record carries a canary either.
	for _, e := range f.sink.Events() {
		for k, v := range e.Detail {
			noCanary(t, "audit detail "+k, v)
		}
	}
}

// TestGateRefusesCommands: commands the rules do not allow never run.
func TestGateRefusesCommands(t *testing.T) {
	requireSandbox(t)
	f := newFixture(t, fixtureOpts{})
	tests := []struct {
		name    string
		command string
		want    capability.Reason
	}{
		{"unlisted word needs approval (none configured)", "touch pwned", capability.ReasonApprovalRequired},
		{"allowed word chained with an unlisted one", "echo hi && touch pwned", capability.ReasonApprovalRequired},
		{"deny rule", "rm -rf pwned", capability.ReasonRuleDenied},
		{"deny rule hidden in sh -c", "sh -c 'rm -rf pwned'", capability.ReasonRuleDenied},
		{"computed command", "$(echo touch) pwned", capability.ReasonApprovalRequired},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := f.exec(t, "Bash", map[string]any{"command": tt.command})
			if r.Reason != tt.want {
				t.Fatalf("Execute(Bash %q) = %s %q, want %s", tt.command, r.Reason, r.Content, tt.want)
			}
			if _, err := os.Lstat(filepath.Join(f.ws, "pwned")); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("Bash(%q) created pwned (stat err %v)", tt.command, err)
			}
		})
	}
}

// TestBackgroundTaskDiesWithClose: Manager.Close kills a running task's
// whole tree; its pid is gone afterwards and nothing new can start.
func TestBackgroundTaskDiesWithClose(t *testing.T) {
	requireSandbox(t)
	f := newFixture(t, fixtureOpts{rules: compoundRules})
	out := f.mustExec(t, "Bash", map[string]any{"command": "sleep 300 & sleep 300", "run_in_background": true})
	if !strings.Contains(out, "started task t1") {
		t.Fatalf("Bash(background) = %q", out)
	}
	ts := f.m.Tasks()
	if len(ts) != 1 || ts[0].State != TaskRunning || ts[0].Session != "sess-1" {
		t.Fatalf("Tasks() = %+v, want one running task of sess-1", ts)
	}
	pid := ts[0].Pid
	if err := syscall.Kill(pid, 0); err != nil {
		t.Fatalf("task pid %d not alive before Close: %v", pid, err)
	}
	list := f.mustExec(t, "TaskList", map[string]any{})
	if !strings.Contains(list, "t1\trunning") {
		t.Fatalf("TaskList = %q", list)
	}
	if err := f.m.Close(); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("kill(%d, 0) after Close = %v, want ESRCH", pid, err)
	}
	if st := f.m.Tasks()[0].State; st != TaskKilled {
		t.Fatalf("state after Close = %s, want killed", st)
	}
	r := f.exec(t, "Bash", map[string]any{"command": "true"})
	if r.Reason != capability.ReasonShellClosed {
		t.Fatalf("Bash after Close = %s %q, want SHELL_CLOSED", r.Reason, r.Content)
	}
}

func TestDetachedTaskSurvivesClose(t *testing.T) {
	requireSandbox(t)
	f := newFixture(t, fixtureOpts{edit: func(c *Config) { c.AllowDetached = true }})
	f.mustExec(t, "Bash", map[string]any{"command": "sleep 300", "run_in_background": true})
	pid := f.m.Tasks()[0].Pid
	f.m.Close()
	if err := syscall.Kill(pid, 0); err != nil {
		t.Fatalf("detached task pid %d gone after Close: %v", pid, err)
	}
	f.m.tasks["t1"].stop()
}

func TestTaskOutputAndStop(t *testing.T) {
	requireSandbox(t)
	f := newFixture(t, fixtureOpts{})
	f.mustExec(t, "Bash", map[string]any{"command": "echo one; sleep 0.5; echo two; sleep 0.5; exit 4", "run_in_background": true})
	got := f.mustExec(t, "TaskOutput", map[string]any{"task_id": "t1", "block": true, "timeout_ms": 5000})
	if !strings.Contains(got, "one") || strings.Contains(got, "two") {
		t.Fatalf("TaskOutput #1 = %q, want one and not two", got)
	}
	got = f.mustExec(t, "TaskOutput", map[string]any{"task_id": "t1", "block": true, "timeout_ms": 5000})
	if !strings.Contains(got, "two") || strings.Contains(got, "one") {
		t.Fatalf("TaskOutput #2 = %q, want only the new output", got)
	}
	got = f.mustExec(t, "TaskOutput", map[string]any{"task_id": "t1", "block": true, "timeout_ms": 5000})
	if !strings.Contains(got, "exited, exit code 4") {
		t.Fatalf("TaskOutput #3 = %q, want the exit", got)
	}
	f.mustExec(t, "Bash", map[string]any{"command": "sleep 300", "run_in_background": true})
	got = f.mustExec(t, "TaskStop", map[string]any{"task_id": "t2"})
	if !strings.Contains(got, "killed") {
		t.Fatalf("TaskStop = %q", got)
	}
	for _, id := range []string{"t9", "t0"} {
		if r := f.exec(t, "TaskOutput", map[string]any{"task_id": id}); r.Reason != capability.ReasonTaskUnknown {
			t.Fatalf("TaskOutput(%s) = %s, want TASK_UNKNOWN", id, r.Reason)
		}
	}
	if r := f.exec(t, "TaskOutput", map[string]any{"task_id": "../sess-2/t1"}); r.Reason != capability.ReasonSchemaInvalid {
		t.Fatalf("TaskOutput(path) = %s, want SCHEMA_INVALID", r.Reason)
	}
	// Another session's manager does not see these tasks.
	other := newFixture(t, fixtureOpts{session: "sess-2"})
	if r := other.exec(t, "TaskStop", map[string]any{"task_id": "t1"}); r.Reason != capability.ReasonTaskUnknown {
		t.Fatalf("TaskStop(t1) in another session = %s, want TASK_UNKNOWN", r.Reason)
	}
}

func TestMonitor(t *testing.T) {
	requireSandbox(t)
	f := newFixture(t, fixtureOpts{rules: compoundRules})
	tests := []struct {
		name    string
		command string
		pattern string
		timeout int
		want    string
		isErr   bool
		maxWait time.Duration
	}{
		{"pattern appears", "for i in 1 2 3; do echo step$i; sleep 0.1; done; echo 'server READY on :80'; sleep 300", `READY on :\d+`, 10000, "matched: server READY on :80", false, 8 * time.Second},
		{"timeout", "echo nothing; sleep 300", "NEVER", 400, "timed out", true, 5 * time.Second},
		{"exit without match", "echo bye", "NEVER", 10000, "exited without a match", false, 8 * time.Second},
		{"match in last partial line at exit", "printf 'done-no-newline'", "done-no", 10000, "matched: done-no-newline", false, 8 * time.Second},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f.mustExec(t, "Bash", map[string]any{"command": tt.command, "run_in_background": true})
			start := time.Now()
			r := f.exec(t, "Monitor", map[string]any{"task_id": "t" + strconv.Itoa(i+1), "pattern": tt.pattern, "timeout_ms": tt.timeout})
			if !strings.Contains(r.Content, tt.want) || r.IsError != tt.isErr {
				t.Fatalf("Monitor(%q) = %q (error %v), want %q (error %v)", tt.pattern, r.Content, r.IsError, tt.want, tt.isErr)
			}
			if d := time.Since(start); d > tt.maxWait {
				t.Fatalf("Monitor(%q) took %v", tt.pattern, d)
			}
		})
	}
	if r := f.exec(t, "Monitor", map[string]any{"task_id": "t1", "pattern": "(", "timeout_ms": 10}); r.Reason != capability.ReasonInvalidRequest {
		t.Fatalf("Monitor(bad pattern) = %s", r.Reason)
	}
}

// TestSchemas: every tool's schema compiles, is closed, and the tool has a
// description and a prompt.
func TestSchemas(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	for name, tl := range f.tools {
		if _, err := gate.CompileSchema(name, tl.InputSchema()); err != nil {
			t.Errorf("CompileSchema(%s) = %v", name, err)
		}
		if !strings.Contains(string(tl.InputSchema()), `"additionalProperties":false`) && !strings.Contains(string(tl.InputSchema()), `"additionalProperties": false`) {
			t.Errorf("%s schema is not closed", name)
		}
		if tl.Description() == "" || tl.Prompt() == "" {
			t.Errorf("%s has no description or prompt", name)
		}
	}
}

// TestNarrowPolicy: the sandbox grants what the policy allows and no more.
func TestNarrowPolicy(t *testing.T) {
	requireSandbox(t)
	narrow := strings.Replace(testManifest, "write: [workspace://**]", "write: [workspace://src/**]", 1)
	docsOnly := strings.Replace(narrow, "read: [workspace://**]", "read: [workspace://src/notes/**]", 1)
	docsOnly = strings.Replace(docsOnly, "write: [workspace://src/**]", "write: []", 1)
	tests := []struct {
		name     string
		manifest string
		noLayers bool
		command  string
		want     string
		absent   string // a host file that must not exist afterwards
	}{
		{name: "write inside the write grant", manifest: narrow, command: "echo x > src/ok.txt && echo wrote", want: "wrote"},
		{name: "write outside the write grant", manifest: narrow, command: "echo x > top.txt", want: "Read-only file system", absent: "top.txt"},
		{name: "no layers: the root alone is proposed", manifest: narrow, noLayers: true, command: "echo x > top2.txt", want: "Read-only file system", absent: "top2.txt"},
		{name: "read grant narrower than the workspace", manifest: docsOnly, command: "cat " + "WS/src/notes/a.md; cat WS/src/visible.txt; pwd", want: "notes\n"},
		{name: "outside the read grant is invisible", manifest: docsOnly, command: "cat WS/src/visible.txt", want: "No such file"},
		{name: "workspace not granted: cwd is /tmp", manifest: docsOnly, command: "pwd", want: "/tmp\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, fixtureOpts{manifest: tt.manifest, runner: func(c *sandboxpolicy.RunnerConfig) {
				if tt.noLayers {
					c.Layers = nil
				}
			}})
			cmd := strings.ReplaceAll(tt.command, "WS", f.ws)
			res, err := f.call(t, "Bash", map[string]any{"command": cmd})
			if err != nil {
				t.Fatalf("Bash(%q) error = %v", cmd, err)
			}
			if !strings.Contains(res.Content, tt.want) {
				t.Fatalf("Bash(%q) = %q, want %q", cmd, res.Content, tt.want)
			}
			noCanary(t, "Bash", res.Content)
			if strings.Contains(res.Content, visible) {
				t.Fatalf("Bash(%q) = %q: a file outside the read grant was readable", cmd, res.Content)
			}
			if tt.absent != "" {
				if _, err := os.Lstat(filepath.Join(f.ws, tt.absent)); !errors.Is(err, os.ErrNotExist) {
					t.Fatalf("%s exists after Bash(%q)", tt.absent, cmd)
				}
			}
		})
	}
}
