package sandbox_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/sandbox"
	"github.com/norma-run/norma/sandbox/sandboxtest"
)

func TestMain(m *testing.M) {
	if sandbox.IsInit() {
		sandbox.InitMain()
	}
	os.Exit(runTests(m))
}

func requireSandbox(t testing.TB) { t.Helper(); sandboxtest.Require(t) }

type output struct{ stdout, stderr bytes.Buffer }

func run(t *testing.T, s sandbox.Spec) (sandbox.Result, *output) {
	t.Helper()
	var o output
	if s.Stdout == nil {
		s.Stdout = &o.stdout
	}
	if s.Stderr == nil {
		s.Stderr = &o.stderr
	}
	res, err := sandbox.Run(t.Context(), s)
	if err != nil {
		t.Fatalf("Run(%q) error = %v", s.Argv, err)
	}
	return res, &o
}

func TestRunTrue(t *testing.T) {
	requireSandbox(t)
	res, o := run(t, sandbox.Spec{Argv: []string{"true"}})
	if res.ExitCode != 0 || !res.Sandboxed {
		t.Fatalf("Run(true) = %+v, stderr %q", res, o.stderr.String())
	}
}

func TestExitStatusPassesThrough(t *testing.T) {
	requireSandbox(t)
	res, o := run(t, sandbox.Spec{Argv: []string{"sh", "-c", "exit 7"}})
	if res.ExitCode != 7 {
		t.Fatalf("exit 7: ExitCode = %d, want 7 (stderr %q)", res.ExitCode, o.stderr.String())
	}
}

func TestShellSeesMinimalWorld(t *testing.T) {
	requireSandbox(t)
	ro := t.TempDir()
	rw := t.TempDir()
	if err := os.WriteFile(filepath.Join(ro, "in.txt"), []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	script := `set -e
cat ` + ro + `/in.txt > ` + rw + `/out.txt
echo "uid=$(id -u) pid=$$ host=$(hostname)"
ls /
env | sort
`
	res, o := run(t, sandbox.Spec{
		Argv:      []string{"sh", "-c", script},
		Dir:       rw,
		ReadOnly:  []string{ro},
		ReadWrite: []string{rw},
		Env:       []string{"PATH=/usr/bin:/bin", "FOO=bar"},
	})
	if res.ExitCode != 0 {
		t.Fatalf("script failed: %+v\nstdout %s\nstderr %s", res, o.stdout.String(), o.stderr.String())
	}
	got, err := os.ReadFile(filepath.Join(rw, "out.txt"))
	if err != nil || string(got) != "hello" {
		t.Fatalf("out.txt = %q, %v; want hello", got, err)
	}
	out := o.stdout.String()
	for _, want := range []string{"uid=0 pid=1 host=norma-sandbox", "FOO=bar"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "HOME=") && !strings.Contains(out, "FOO=bar") {
		t.Errorf("environment leaked")
	}
	t.Logf("inside:\n%s", out)
}

func TestTimeoutKillsTree(t *testing.T) {
	requireSandbox(t)
	start := time.Now()
	res, _ := run(t, sandbox.Spec{Argv: []string{"sh", "-c", "sleep 30 & sleep 30"}, Timeout: 300 * time.Millisecond})
	if !res.TimedOut || res.Signal == 0 {
		t.Fatalf("Run(sleep) = %+v, want TimedOut and killed", res)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Run took %v after a 300ms timeout", d)
	}
}

func TestSpecErrors(t *testing.T) {
	tests := []struct {
		name string
		spec sandbox.Spec
		code capability.Reason
	}{
		{"empty argv", sandbox.Spec{}, capability.ReasonSandboxSpecInvalid},
		{"relative grant", sandbox.Spec{Argv: []string{"true"}, ReadOnly: []string{"rel"}}, capability.ReasonSandboxSpecInvalid},
		{"grant root", sandbox.Spec{Argv: []string{"true"}, ReadOnly: []string{"/"}}, capability.ReasonSandboxSpecInvalid},
		{"grant proc", sandbox.Spec{Argv: []string{"true"}, ReadOnly: []string{"/proc/1"}}, capability.ReasonSandboxSpecInvalid},
		{"missing grant", sandbox.Spec{Argv: []string{"true"}, ReadOnly: []string{"/nonexistent/x"}}, capability.ReasonSandboxSpecInvalid},
		{"bad env", sandbox.Spec{Argv: []string{"true"}, Env: []string{"NOEQUALS"}}, capability.ReasonSandboxSpecInvalid},
		{"broker without handler", sandbox.Spec{Argv: []string{"true"}, Network: sandbox.NetBroker}, capability.ReasonSandboxSpecInvalid},
		{"dir outside grants", sandbox.Spec{Argv: []string{"true"}, Dir: "/usr"}, capability.ReasonSandboxSpecInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := sandbox.Run(t.Context(), tt.spec)
			if got := capability.ReasonOf(err); got != tt.code {
				t.Fatalf("Run() error = %v, code %q; want %q", err, got, tt.code)
			}
			if !errors.Is(err, &capability.Error{Decision: capability.Decision{Reason: tt.code}}) {
				t.Fatalf("errors.Is(%v, code %s) = false", err, tt.code)
			}
		})
	}
}

func TestCommandNotFound(t *testing.T) {
	requireSandbox(t)
	_, err := sandbox.Run(t.Context(), sandbox.Spec{Argv: []string{"no-such-command-xyz"}})
	if got := capability.ReasonOf(err); got != capability.ReasonSandboxExecFailed {
		t.Fatalf("Run(missing) error = %v, want %s", err, capability.ReasonSandboxExecFailed)
	}
}

func TestBrokerMode(t *testing.T) {
	requireSandbox(t)
	f := newFixture(t)
	var served atomic.Int64
	s := f.spec(escapee, "proxyget")
	s.Network = sandbox.NetBroker
	s.Broker = func(ctx context.Context, c net.Conn) {
		defer c.Close()
		served.Add(1)
		line, _ := bufio.NewReader(c).ReadString('\n')
		fmt.Fprintf(c, "HTTP/1.0 200 OK\r\n\r\nbrokered %s", strings.TrimSpace(line))
	}
	var out bytes.Buffer
	s.Stdout = &out
	res, err := sandbox.Run(t.Context(), s)
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 0 || !strings.Contains(out.String(), "brokered GET http://example.invalid/") || served.Load() != 1 {
		t.Fatalf("broker run = %+v, served %d, output %q", res, served.Load(), out.String())
	}
	// In broker mode the host's loopback is still out of reach.
	before := f.servers.seen.Load()
	res, o := f.attempt(t, false, escapee, "tcp", f.servers.tcp)
	_ = res
	s2 := f.spec(escapee, "tcp", f.servers.tcp)
	s2.Network, s2.Broker = sandbox.NetBroker, s.Broker
	var out2 bytes.Buffer
	s2.Stdout = &out2
	if _, err := sandbox.Run(t.Context(), s2); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out2.String(), "ESCAPED") || f.servers.seen.Load() != before {
		t.Fatalf("broker mode reached the host: %q", out2.String())
	}
	t.Logf("broker: %s; host tcp: %s / %s", strings.TrimSpace(out.String()), strings.TrimSpace(o), strings.TrimSpace(out2.String()))
}

func TestStartPipes(t *testing.T) {
	requireSandbox(t)
	p, err := sandbox.Start(t.Context(), sandbox.Spec{Argv: []string{"cat"}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stdout.Close()
	defer p.Stderr.Close()
	if _, err := io.WriteString(p.Stdin, "ping\n"); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(p.Stdout).ReadString('\n')
	if err != nil || line != "ping\n" {
		t.Fatalf("read %q, %v; want ping", line, err)
	}
	p.Stdin.Close()
	res, err := p.Wait()
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("Wait() = %+v, %v", res, err)
	}
}

func TestStartKillKillsTree(t *testing.T) {
	requireSandbox(t)
	p, err := sandbox.Start(t.Context(), sandbox.Spec{Argv: []string{"sh", "-c", "sleep 60 & sleep 60"}, Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	res, err := p.Wait()
	if err != nil || res.Signal != syscall.SIGKILL {
		t.Fatalf("Wait() after Kill = %+v, %v", res, err)
	}
}

func TestContextCancelKillsTree(t *testing.T) {
	requireSandbox(t)
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	res, err := sandbox.Run(ctx, sandbox.Spec{Argv: []string{"sleep", "60"}})
	if err != nil || res.Signal != syscall.SIGKILL || time.Since(start) > 5*time.Second {
		t.Fatalf("Run(cancelled) = %+v, %v after %v", res, err, time.Since(start))
	}
}

// TestReadyIsProbesReady: the cheap question and the full probe agree.
func TestReadyIsProbesReady(t *testing.T) {
	if got, want := sandbox.Ready(), sandbox.Probe().Ready; got != want {
		t.Errorf("Ready() = %v, Probe().Ready = %v", got, want)
	}
}
