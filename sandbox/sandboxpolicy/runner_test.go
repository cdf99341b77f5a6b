package sandboxpolicy

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/internal/treetest"
	"github.com/norma-run/norma/manifest"
	"github.com/norma-run/norma/policy"
	"github.com/norma-run/norma/sandbox"
	"github.com/norma-run/norma/sandbox/sandboxtest"
	"github.com/norma-run/norma/tool"
)

// runnerFS is the built-in tools' shape: the whole workspace, .env and
// .git hidden.
const runnerFS = "    read: [workspace://**]\n    write: [workspace://**]\n    deny: [workspace://**/.env*, workspace://**/.git/**]\n"

// newRunnerConfig returns a workspace holding tree and a valid
// configuration over it.
func newRunnerConfig(t *testing.T, fs string) RunnerConfig {
	t.Helper()
	ws := t.TempDir()
	for _, f := range tree {
		p := filepath.Join(ws, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("content of "+f+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	m, err := manifest.Parse("manifest.yaml", []byte(manifestHead+fs))
	if err != nil {
		t.Fatalf("manifest.Parse: %v", err)
	}
	set, err := policy.Compile(policy.Inputs{Manifest: m, Host: policy.Host{Sandbox: true}})
	if err != nil {
		t.Fatalf("policy.Compile: %v", err)
	}
	return RunnerConfig{Workspace: ws, Policy: set, Layers: []manifest.Permissions{m.Permissions}, Env: []string{"LANG=C.UTF-8"}}
}

func TestNewRunnerRefused(t *testing.T) {
	base := newRunnerConfig(t, runnerFS)
	tests := []struct {
		name string
		edit func(*RunnerConfig)
	}{
		{"no policy", func(c *RunnerConfig) { c.Policy = nil }},
		{"relative workspace", func(c *RunnerConfig) { c.Workspace = "ws" }},
		{"missing workspace", func(c *RunnerConfig) { c.Workspace = filepath.Join(c.Workspace, "nope") }},
		{"BASH_ENV", func(c *RunnerConfig) { c.Env = []string{"BASH_ENV=/tmp/x"} }},
		{"exported function", func(c *RunnerConfig) { c.Env = []string{"BASH_FUNC_git%%=() { rm -rf .; }"} }},
		{"LD_PRELOAD", func(c *RunnerConfig) { c.Env = []string{"LD_PRELOAD=/tmp/x.so"} }},
		{"PS1 command substitution", func(c *RunnerConfig) { c.Env = []string{"PS1=$(touch x)"} }},
		{"PS1 even literal", func(c *RunnerConfig) { c.Env = []string{"PS1=$ "} }},
		{"malformed env", func(c *RunnerConfig) { c.Env = []string{"NOVALUE"} }},
		{"duplicate env", func(c *RunnerConfig) { c.Env = []string{"A=1", "A=2"} }},
		{"broker without mode", func(c *RunnerConfig) { c.Broker = func(context.Context, net.Conn) {} }},
		{"broker mode without broker", func(c *RunnerConfig) { c.Network = sandbox.NetBroker }},
		{"unknown network mode", func(c *RunnerConfig) { c.Network = 9 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := base
			tt.edit(&c)
			r, err := NewRunner(c)
			if capability.ReasonOf(err) != capability.ReasonSandboxSpecInvalid || r != nil {
				t.Fatalf("NewRunner(%s) = %v, %v; want SANDBOX_SPEC_INVALID", tt.name, r, err)
			}
		})
	}
	if _, err := NewRunner(base); err != nil {
		t.Fatalf("NewRunner(valid) = %v", err)
	}
}

// TestRunnerSpec: what one command's sandbox is made of, without starting it.
func TestRunnerSpec(t *testing.T) {
	cfg := newRunnerConfig(t, runnerFS)
	r, err := NewRunner(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ws := r.ws
	s, err := r.spec(t.Context(), tool.Command{Argv: []string{"true"}, Env: []string{"TERM=dumb", "PS1=$ ", "LANG=C"}, Timeout: time.Second})
	if err != nil {
		t.Fatalf("spec: %v", err)
	}
	if s.Dir != ws || !slices.Equal(s.ReadWrite, []string{ws}) || s.Timeout != time.Second || s.Network != sandbox.NetNone {
		t.Errorf("spec = dir %q, rw %q, timeout %v, network %v; want the workspace, read-write, 1s, none", s.Dir, s.ReadWrite, s.Timeout, s.Network)
	}
	for _, d := range []string{".env", "docs/.env", "src/.env.local"} {
		if !slices.Contains(s.Deny, filepath.Join(ws, d)) {
			t.Errorf("spec.Deny = %q, want %s hidden", s.Deny, d)
		}
	}
	wantEnv := []string{"LANG=C", "PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/tmp", "TMPDIR=/tmp", "TERM=dumb", "PS1=$ "}
	if !slices.Equal(s.Env, wantEnv) {
		t.Errorf("spec.Env = %q, want %q", s.Env, wantEnv)
	}
	if s, err := r.spec(t.Context(), tool.Command{Argv: []string{"true"}, Dir: "docs/api"}); err != nil || s.Dir != filepath.Join(ws, "docs/api") {
		t.Errorf("spec(Dir docs/api) = %q, %v; want %s", s.Dir, err, filepath.Join(ws, "docs/api"))
	}
	refused := []struct {
		name string
		cmd  tool.Command
	}{
		{"empty argv", tool.Command{}},
		{"loader variable", tool.Command{Argv: []string{"true"}, Env: []string{"LD_PRELOAD=/tmp/x.so"}}},
		{"shell code", tool.Command{Argv: []string{"true"}, Env: []string{"BASH_ENV=/tmp/x"}}},
		{"prompt with code", tool.Command{Argv: []string{"true"}, Env: []string{"PS1=$(touch x)"}}},
		{"prompt with escape", tool.Command{Argv: []string{"true"}, Env: []string{`PS2=\$(x)`}}},
		{"prompt with a parameter", tool.Command{Argv: []string{"true"}, Env: []string{"PS1=$HOME "}}},
		{"dir outside", tool.Command{Argv: []string{"true"}, Dir: "../x"}},
		{"dir absolute", tool.Command{Argv: []string{"true"}, Dir: "/etc"}},
		{"dir denied", tool.Command{Argv: []string{"true"}, Dir: ".git"}},
		{"negative timeout", tool.Command{Argv: []string{"true"}, Timeout: -1}},
	}
	for _, tt := range refused {
		if _, err := r.spec(t.Context(), tt.cmd); capability.ReasonOf(err) != capability.ReasonSandboxSpecInvalid {
			t.Errorf("spec(%s) = %v, want SANDBOX_SPEC_INVALID", tt.name, err)
		}
	}
	// Read-only policy: the workspace is bound read-only and stays the
	// working directory; nothing outside a grant is.
	ro, err := NewRunner(newRunnerConfig(t, "    read: [workspace://docs/**]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if s, err := ro.spec(t.Context(), tool.Command{Argv: []string{"true"}}); err != nil || s.Dir != "/tmp" ||
		!slices.Equal(s.ReadOnly, []string{filepath.Join(ro.ws, "docs")}) || len(s.ReadWrite) != 0 {
		t.Errorf("spec(docs only) = dir %q, ro %q, rw %q, %v; want /tmp, docs, none", s.Dir, s.ReadOnly, s.ReadWrite, err)
	}
}

// TestRunnerProcesses runs real processes: collected and streamed output,
// the exit code, a timeout, a process that outlives the call and is
// killed, and a write that lands in the workspace while .env stays hidden.
func TestRunnerProcesses(t *testing.T) {
	sandboxtest.Require(t)
	r, err := NewRunner(newRunnerConfig(t, runnerFS))
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	res, err := r.Run(ctx, tool.Command{Argv: []string{"/bin/sh", "-c", "echo out; echo err >&2; cat .env; echo made > docs/new.txt; exit 3"}})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if string(res.Stdout) != "out\n" || !strings.Contains(string(res.Stderr), "err\n") || res.ExitCode != 3 || res.TimedOut {
		t.Errorf("Run = stdout %q, stderr %q, exit %d, timed out %v; want out, err, 3, false", res.Stdout, res.Stderr, res.ExitCode, res.TimedOut)
	}
	if strings.Contains(string(res.Stdout)+string(res.Stderr), "content of .env") {
		t.Errorf("Run leaked .env: %q %q", res.Stdout, res.Stderr)
	}
	if b, err := os.ReadFile(filepath.Join(r.ws, "docs/new.txt")); err != nil || string(b) != "made\n" {
		t.Errorf("docs/new.txt = %q, %v; want made", b, err)
	}
	var out bytes.Buffer
	res, err = r.Run(ctx, tool.Command{Argv: []string{"/bin/sh", "-c", "read x; echo got-$x"}, Stdin: strings.NewReader("in\n"), Stdout: &out})
	if err != nil || out.String() != "got-in\n" || res.Stdout != nil {
		t.Errorf("Run(streamed) = %q, collected %q, %v; want got-in streamed only", out.String(), res.Stdout, err)
	}
	start := time.Now()
	res, err = r.Run(ctx, tool.Command{Argv: []string{"/bin/sleep", "30"}, Timeout: 200 * time.Millisecond})
	if err != nil || !res.TimedOut || time.Since(start) > 10*time.Second {
		t.Errorf("Run(timeout) = %+v, %v after %v; want timed out", res, err, time.Since(start))
	}
	p, err := r.Start(context.WithoutCancel(ctx), tool.Command{Argv: []string{"/bin/sleep", "300"}})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	if p.Pid() <= 0 {
		t.Errorf("Pid() = %d", p.Pid())
	}
	if err := p.Kill(); err != nil {
		t.Fatalf("Kill: %v", err)
	}
	if res, err := p.Wait(); err != nil || res.Signal == 0 || res.ExitCode != -1 {
		t.Errorf("Wait after Kill = %+v, %v; want killed by a signal", res, err)
	}
	if _, err := r.Run(ctx, tool.Command{Argv: []string{"/nonexistent/x"}}); capability.ReasonOf(err) == "" {
		t.Errorf("Run(missing program) = %v, want a sandbox error", err)
	}
}

// TestRunnerWritesOutsideGrantFail: a shell writes where the policy grants
// no write, in a workspace under the host's /tmp (t.TempDir), where the
// sandbox's own private /tmp holds the directories leading to the grants.
// Every write fails loudly with EROFS, nothing changes on the host, and
// nothing lands in a private copy either: the same shell reads back no
// trace. A write inside the write grant is the control.
func TestRunnerWritesOutsideGrantFail(t *testing.T) {
	sandboxtest.Require(t)
	tests := []struct {
		name, fs string
	}{
		{"workspace read-only, src writable", "    read: [workspace://**]\n    write: [workspace://src/**]\n"},
		{"workspace ungranted, src writable, docs readable", "    read: [workspace://docs/**]\n    write: [workspace://src/**]\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := NewRunner(newRunnerConfig(t, tt.fs))
			if err != nil {
				t.Fatal(err)
			}
			ws := r.ws
			script := `cd ` + ws + ` || exit 9
for f in README.md docs/a.md docs/new.md newdir/x; do
  mkdir -p "$(dirname "$f")"
  if echo pwned > "$f"; then echo "WROTE $f"; fi
  if grep -q pwned "$f" 2>/dev/null; then echo "READS BACK $f"; fi
done
echo made > src/ok.txt && echo control-ok`
			res, err := r.Run(t.Context(), tool.Command{Argv: []string{"/bin/bash", "-c", script}})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			out, errOut := string(res.Stdout), string(res.Stderr)
			if strings.Contains(out, "WROTE") || strings.Contains(out, "READS BACK") {
				t.Fatalf("a write outside the grant succeeded inside the sandbox: %q (stderr %q)", out, errOut)
			}
			if n := strings.Count(errOut, "Read-only file system"); n < 4 {
				t.Errorf("stderr = %q; want the 3 writes and the mkdir refused with EROFS (got %d)", errOut, n)
			}
			if !strings.Contains(out, "control-ok") {
				t.Fatalf("the control write into src failed: %q %q", out, errOut)
			}
			if b, err := os.ReadFile(filepath.Join(ws, "src/ok.txt")); err != nil || string(b) != "made\n" {
				t.Errorf("src/ok.txt = %q, %v; want the control write on the host", b, err)
			}
			if b, err := os.ReadFile(filepath.Join(ws, "docs/a.md")); err != nil || string(b) != "content of docs/a.md\n" {
				t.Errorf("docs/a.md on the host = %q, %v; want it unchanged", b, err)
			}
			for _, p := range []string{"README.md", "docs/new.md", "newdir"} {
				if _, err := os.Lstat(filepath.Join(ws, p)); err == nil {
					t.Errorf("%s exists on the host after the attempt", p)
				}
			}
		})
	}
}

// TestRunnerStartPins: a process started with Start (what background
// tasks and PTY sessions use) gets the same pins as Run: renaming the
// parent of a hidden file or removing it fails in the sandbox, and the
// workspace is unchanged.
func TestRunnerStartPins(t *testing.T) {
	sandboxtest.Require(t)
	r, err := NewRunner(newRunnerConfig(t, runnerFS))
	if err != nil {
		t.Fatal(err)
	}
	// The first command makes the agent-file floor's directories (see
	// agentFloor); from then on nothing changes.
	if _, err := r.Run(t.Context(), tool.Command{Argv: []string{"/bin/true"}}); err != nil {
		t.Fatal(err)
	}
	before := treetest.Snapshot(t, r.ws)
	for _, script := range []string{"mv docs docs2", "mv src src2", "rmdir docs/.env", "mv docs/.env docs/env && cat docs/env"} {
		var out bytes.Buffer
		p, err := r.Start(t.Context(), tool.Command{Argv: []string{"/bin/sh", "-c", script}, Stdout: &out, Stderr: &out})
		if err != nil {
			t.Fatalf("Start(%q): %v", script, err)
		}
		res, err := p.Wait()
		if err != nil || res.ExitCode == 0 || strings.Contains(out.String(), "content of") {
			t.Errorf("Start(%q) = %+v, %v, output %q; want a failure that shows nothing", script, res, err, out.String())
		}
		treetest.Equal(t, r.ws, before)
	}
}
