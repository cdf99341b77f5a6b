//go:build linux

package sandbox_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/sandbox"
)

// TestStartRefusesBrokenFilter: with the embedded filter empty or
// malformed, in either network mode, the sandbox refuses to start and the
// target never runs.
func TestStartRefusesBrokenFilter(t *testing.T) {
	requireSandbox(t)
	for _, bad := range []struct {
		name string
		raw  []byte
	}{{"empty", nil}, {"truncated", []byte{6, 0, 0, 0, 0, 0, 0}}} {
		for _, m := range []sandbox.NetworkMode{sandbox.NetNone, sandbox.NetBroker} {
			ws := t.TempDir()
			marker := filepath.Join(ws, "ran")
			restore := sandbox.SwapSeccompFilters(bad.raw, bad.raw)
			s := sandbox.Spec{Argv: []string{"sh", "-c", "echo ran > " + marker}, ReadWrite: []string{ws},
				Env: []string{"PATH=/usr/bin:/bin"}, Network: m, Timeout: 20 * time.Second}
			if m == sandbox.NetBroker {
				s.Broker = func(_ context.Context, c net.Conn) { c.Close() }
			}
			res, err := sandbox.Run(t.Context(), s)
			restore()
			var ce *capability.Error
			if !errors.As(err, &ce) || ce.Decision.Reason != capability.ReasonSandboxSetupFailed {
				t.Errorf("%s filter, %v: Run = %+v, %v; want %s", bad.name, m, res, err, capability.ReasonSandboxSetupFailed)
			}
			if _, err := os.Stat(marker); err == nil {
				t.Errorf("%s filter, %v: the target ran", bad.name, m)
			}
		}
	}
}

// TestEscapesBrokerMode: the broker-mode filter, which lets a plugin open
// inet sockets to reach the egress broker, denies every other syscall the
// isolated filter denies, in a real sandboxed process.
func TestEscapesBrokerMode(t *testing.T) {
	requireSandbox(t)
	f := newFixture(t)
	for _, tc := range []struct {
		attempt []string
		want    string // in the verdict; empty: killed by SIGSYS
	}{
		{[]string{"ptrace-traceme"}, "operation not permitted"},
		{[]string{"unshare"}, "operation not permitted"},
		{[]string{"iouring"}, "operation not permitted"},
		{[]string{"mount"}, "operation not permitted"},
		{[]string{"newns"}, "operation not permitted"},
		{[]string{"mptcp"}, "protocol not supported"},
		{[]string{"sys", "modify_ldt"}, "operation not permitted"},
		{[]string{"x32"}, ""},
		{[]string{"int80"}, ""},
	} {
		s := f.spec(append([]string{escapee}, tc.attempt...)...)
		s.Network = sandbox.NetBroker
		s.Broker = func(_ context.Context, c net.Conn) { c.Close() }
		var out, errb bytes.Buffer
		s.Stdout, s.Stderr = &out, &errb
		res, err := sandbox.Run(t.Context(), s)
		if err != nil {
			t.Fatalf("%v: %v", tc.attempt, err)
		}
		if strings.Contains(out.String(), "ESCAPED") {
			t.Fatalf("broker mode %v escaped: %s", tc.attempt, out.String())
		}
		if tc.want == "" {
			if tc.attempt[0] == "int80" && !hostHasIA32(t) {
				// Without IA32 emulation the CPU faults before seccomp
				// sees the call (the Go runtime exits 2).
				if res.ExitCode != 2 || !strings.Contains(errb.String(), "unexpected fault address") {
					t.Errorf("broker mode %v without IA32 emulation: %+v %q, want the fault", tc.attempt, res, errb.String())
				}
				continue
			}
			if res.Signal != syscall.SIGSYS {
				t.Errorf("broker mode %v: %+v %q %q, want death by SIGSYS", tc.attempt, res, out.String(), errb.String())
			}
		} else if res.ExitCode != 0 || !strings.HasPrefix(out.String(), "blocked") || !strings.Contains(out.String(), tc.want) {
			t.Errorf("broker mode %v: %+v %q, want blocked with %q", tc.attempt, res, out.String(), tc.want)
		}
	}
}

// hostHasIA32 reports whether this kernel runs i386 system calls (int
// $0x80) from a 64-bit process: the escapee's int80 attempt, run without
// any sandbox, opens its socket. A kernel built without IA32 emulation,
// or booted with ia32_emulation=0, faults instead; the sandbox's arch
// check then has nothing to kill. Decided from the host, never assumed.
func hostHasIA32(t *testing.T) bool {
	t.Helper()
	out, _ := exec.Command(escapee, "int80").Output()
	return strings.HasPrefix(string(out), "ESCAPED")
}
