package main

import (
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestDoorSandboxSeccompDenies: the filters norma now embeds (issue 20)
// still deny, in a real sandboxed process started by the installed
// binary, every syscall they denied: each attempt fails with the
// filter's errno (or the process is killed by SIGSYS for a foreign ABI),
// the same attempt succeeds outside the sandbox where it can, and the host
// listener sees no connection.
func TestDoorSandboxSeccompDenies(t *testing.T) {
	dir := t.TempDir()
	escapee := filepath.Join(dir, "escapee")
	build := exec.Command("go", "build", "-o", escapee, "./sandbox/testdata/escapee")
	build.Dir = "../.."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build escapee: %v\n%s", err, out)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var seen atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			seen.Add(1)
			c.Close()
		}
	}()
	const sigsys = 128 + 31
	// i386 system calls: with IA32 emulation the seccomp arch check
	// kills (SIGSYS) and unsandboxed int80 escapes; without it (a kernel
	// built or booted without) the CPU faults first, sandboxed or not, and
	// the Go runtime exits 2. Decided from the host.
	ctl, _ := exec.Command(escapee, "int80").Output()
	ia32 := strings.HasPrefix(string(ctl), "ESCAPED")
	for _, tc := range []struct {
		attempt []string
		want    string // in the blocked verdict; empty: killed by SIGSYS
		control bool   // succeeds unsandboxed
	}{
		{[]string{"ptrace-traceme"}, "operation not permitted", false},
		{[]string{"unshare"}, "operation not permitted", true},
		{[]string{"iouring"}, "operation not permitted", true},
		{[]string{"mount"}, "operation not permitted", false},
		{[]string{"newns"}, "operation not permitted", true},
		{[]string{"inet-socket"}, "address family not supported", true},
		{[]string{"mptcp"}, "address family not supported", true},
		{[]string{"tcp", ln.Addr().String()}, "address family not supported", true},
		{[]string{"x32"}, "", false},
		{[]string{"int80"}, "", ia32},
	} {
		before := seen.Load()
		for _, bin := range []string{normaBin(t)} {
			args := append([]string{"sandbox", "exec", "--net", "none", "--ro", dir, "--", escapee}, tc.attempt...)
			code, out, errs := doorCmd(t, exec.Command(bin, args...))
			if strings.Contains(out, "ESCAPED") {
				t.Fatalf("%s %v: escaped: %s", filepath.Base(bin), tc.attempt, out)
			}
			if tc.want == "" && tc.attempt[0] == "int80" && !ia32 {
				if code != 2 || !strings.Contains(errs, "unexpected fault address") {
					t.Errorf("%s %v without IA32 emulation: exit %d, want the fault (2)\n%s%s", filepath.Base(bin), tc.attempt, code, out, errs)
				}
			} else if tc.want == "" {
				if code != sigsys {
					t.Errorf("%s %v: exit %d, want killed by SIGSYS (%d)\n%s%s", filepath.Base(bin), tc.attempt, code, sigsys, out, errs)
				}
			} else if code != 0 || !strings.HasPrefix(out, "blocked") || !strings.Contains(out, tc.want) {
				t.Errorf("%s %v: exit %d %q, want blocked with %q\n%s", filepath.Base(bin), tc.attempt, code, out, tc.want, errs)
			}
		}
		if n := seen.Load() - before; n != 0 {
			t.Errorf("%v: the host listener saw %d connections from the sandbox", tc.attempt, n)
		}
		if tc.control {
			out, _ := exec.Command(escapee, tc.attempt...).Output()
			if !strings.HasPrefix(string(out), "ESCAPED") {
				t.Errorf("negative control: unsandboxed %v: %q; the case does not test the sandbox", tc.attempt, out)
			}
			// The control's connection is counted asynchronously.
			for deadline := time.Now().Add(2 * time.Second); tc.attempt[0] == "tcp" && seen.Load() == before && time.Now().Before(deadline); {
				time.Sleep(time.Millisecond)
			}
		}
	}
}
