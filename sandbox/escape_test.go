package sandbox_test

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/norma-run/norma/sandbox"
	"github.com/norma-run/norma/sandbox/sandboxpolicy"
)

// hostServers are listeners on the host that the sandbox must not reach;
// each counts what it saw.
type hostServers struct {
	tcp, udp, unixPath, abstract string
	seen                         atomic.Int64
}

func startHostServers(t *testing.T, dir string) *hostServers {
	t.Helper()
	h := &hostServers{}
	serve := func(ln net.Listener) {
		t.Cleanup(func() { ln.Close() })
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				h.seen.Add(1)
				c.Close()
			}
		}()
	}
	tl, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h.tcp = tl.Addr().String()
	serve(tl)
	ul, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ul.Close() })
	h.udp = ul.LocalAddr().String()
	go func() {
		buf := make([]byte, 512)
		for {
			if _, _, err := ul.ReadFrom(buf); err != nil {
				return
			}
			h.seen.Add(1)
		}
	}()
	h.unixPath = filepath.Join(dir, "host.sock")
	xl, err := net.Listen("unix", h.unixPath)
	if err != nil {
		t.Fatal(err)
	}
	serve(xl)
	var rnd [8]byte
	rand.Read(rnd[:])
	h.abstract = "@norma-escape-" + hex.EncodeToString(rnd[:])
	al, err := net.Listen("unix", h.abstract)
	if err != nil {
		t.Fatal(err)
	}
	serve(al)
	return h
}

// fixture is the host layout an escape attempt runs against.
type fixture struct {
	ws      string // granted read-write; holds a denied .env
	ro      string // granted read-only
	outside string // not granted; holds a secret
	bin     string // directory of the helper, granted read-only
	servers *hostServers
	token   string // set in the host environment only
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{ws: t.TempDir(), ro: t.TempDir(), outside: t.TempDir(), bin: filepath.Dir(escapee)}
	mustWrite(t, filepath.Join(f.ws, ".env"), "API_KEY=hunter2-in-dotenv")
	if err := os.Symlink(".env", filepath.Join(f.ws, "env-link")); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, filepath.Join(f.ro, "readme.txt"), "read-only grant")
	mustWrite(t, filepath.Join(f.outside, "secret.txt"), "hunter2-outside")
	f.servers = startHostServers(t, f.outside)
	var rnd [8]byte
	rand.Read(rnd[:])
	f.token = "NORMA_TOKEN_" + hex.EncodeToString(rnd[:])
	// A host process whose environment holds the token.
	holder := exec.Command("sleep", "60")
	holder.Env = []string{"NORMA_ESCAPE_TOKEN=" + f.token}
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { holder.Process.Kill(); holder.Wait() })
	return f
}

func mustWrite(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) spec(argv ...string) sandbox.Spec {
	return sandbox.Spec{
		Argv:      argv,
		Dir:       f.ws,
		ReadOnly:  []string{f.ro, f.bin},
		ReadWrite: []string{f.ws},
		Deny:      []string{filepath.Join(f.ws, ".env")},
		Env:       []string{"PATH=/usr/bin:/bin"},
		Limits:    sandbox.Limits{NProc: 64, NoFile: 256},
		Timeout:   20 * time.Second,
	}
}

// attempt runs the helper with args inside the sandbox (or, for the
// negative control, without it) and returns its result and stdout.
func (f *fixture) attempt(t *testing.T, unsafe bool, argv ...string) (sandbox.Result, string) {
	t.Helper()
	s := f.spec(argv...)
	s.Unsafe = unsafe
	var out, errb bytes.Buffer
	s.Stdout, s.Stderr = &out, &errb
	res, err := sandbox.Run(t.Context(), s)
	if err != nil {
		t.Fatalf("Run(%q, unsafe=%v) error = %v", argv, unsafe, err)
	}
	if res.ExitCode == 2 {
		t.Fatalf("helper usage error: %s", errb.String())
	}
	return res, out.String()
}

func TestEscapes(t *testing.T) {
	requireSandbox(t)
	f := newFixture(t)
	host := f.servers
	erofs := unix.EROFS.Error()
	tests := []struct {
		name string
		argv []string
		// control: the attempt succeeds without the sandbox (negative
		// control proving the case tests the sandbox, not the helper).
		control bool
		// noTrace is checked on the host after the attempt.
		noTrace func(t *testing.T)
		// want, when set, is in the sandboxed verdict: the error the
		// process must get (a loud failure, not any failure).
		want string
	}{
		{name: "read /etc/shadow", argv: []string{"read", "/etc/shadow"}, control: true},
		{name: "list /root", argv: []string{"readdir", "/root"}, control: true},
		{name: "read host file outside grants", argv: []string{"read", filepath.Join(f.outside, "secret.txt")}, control: true},
		{name: "read denied .env", argv: []string{"read", filepath.Join(f.ws, ".env")}, control: true},
		{name: "read denied .env via symlink", argv: []string{"read", filepath.Join(f.ws, "env-link")}, control: true},
		{name: "read denied .env via new hard link", argv: []string{"hardlink", filepath.Join(f.ws, ".env"), filepath.Join(f.ws, "hl")}, control: true,
			noTrace: func(t *testing.T) { os.Remove(filepath.Join(f.ws, "hl")) }},
		{name: "write outside grants", argv: []string{"write", filepath.Join(f.outside, "pwned")}, control: true,
			noTrace: absent(filepath.Join(f.outside, "pwned"))},
		{name: "write into read-only grant", argv: []string{"write", filepath.Join(f.ro, "pwned")}, control: true,
			noTrace: absent(filepath.Join(f.ro, "pwned")), want: erofs},
		// The grants live under the host's /tmp (t.TempDir): the
		// directories holding them inside the sandbox's private /tmp are
		// read-only, so a write beside a grant fails with EROFS instead of
		// landing in the private tmpfs while the host file is unchanged.
		{name: "write beside a grant under /tmp", argv: []string{"write", filepath.Join(filepath.Dir(f.ws), "pwned")}, control: true,
			noTrace: absent(filepath.Join(filepath.Dir(f.ws), "pwned")), want: erofs},
		{name: "mkdir and write beside a grant under /tmp", argv: []string{"mkwrite", filepath.Join(filepath.Dir(f.ws), "newdir", "pwned")}, control: true,
			noTrace: absent(filepath.Join(filepath.Dir(f.ws), "newdir")), want: erofs},
		{name: "overwrite a file in a read-only grant", argv: []string{"write", filepath.Join(f.ro, "readme.txt")}, control: true,
			noTrace: unchanged(filepath.Join(f.ro, "readme.txt"), "read-only grant"), want: erofs},
		{name: "write into /usr", argv: []string{"write", "/usr/norma-pwned"},
			noTrace: absent("/usr/norma-pwned")},
		{name: "write into /", argv: []string{"write", "/norma-pwned"},
			noTrace: absent("/norma-pwned")},
		{name: "tcp to host loopback", argv: []string{"tcp", host.tcp}, control: true},
		{name: "udp to host loopback", argv: []string{"udp", host.udp}, control: true},
		{name: "host unix socket by path", argv: []string{"unix", host.unixPath}, control: true},
		{name: "host abstract unix socket", argv: []string{"unix", host.abstract}, control: true},
		{name: "dns lookup", argv: []string{"dns", "example.com"}},
		{name: "mptcp socket", argv: []string{"mptcp"}, control: true},
		{name: "io_uring setup", argv: []string{"iouring"}, control: true},
		{name: "ptrace the parent", argv: []string{"sh", "-c", escapee + " ptrace-parent; exit $?"}},
		{name: "ptrace the host test process", argv: []string{"ptrace-pid", strconv.Itoa(os.Getpid())}},
		{name: "clone into new namespaces", argv: []string{"newns"}, control: true},
		{name: "mount", argv: []string{"mount"}},
		{name: "host environ via /proc", argv: []string{"environ", f.token}, control: true},
		// Legacy and dangerous syscalls: the sandboxed call gets EPERM
		// from the filter; the unsandboxed control reaches the kernel.
		// (iopl, ioperm, uselib and _sysctl are not controlled: kernels
		// built without them answer ENOSYS either way.)
		{name: "modify_ldt", argv: []string{"sys", "modify_ldt"}, control: true, want: unix.EPERM.Error()},
		{name: "personality ADDR_NO_RANDOMIZE", argv: []string{"sys", "personality"}, control: true, want: unix.EPERM.Error()},
		{name: "personality PER_LINUX32", argv: []string{"sys", "personality32"}, control: true, want: unix.EPERM.Error()},
		{name: "ustat", argv: []string{"sys", "ustat"}, control: true, want: unix.EPERM.Error()},
		{name: "sysfs", argv: []string{"sys", "sysfs"}, control: true, want: unix.EPERM.Error()},
		{name: "userfaultfd", argv: []string{"sys", "userfaultfd"}, control: true, want: unix.EPERM.Error()},
		{name: "remap_file_pages", argv: []string{"sys", "remap_file_pages"}, control: true, want: unix.EPERM.Error()},
		{name: "_sysctl", argv: []string{"sys", "_sysctl"}},
		{name: "uselib", argv: []string{"sys", "uselib"}},
		{name: "iopl", argv: []string{"sys", "iopl"}},
		{name: "ioperm", argv: []string{"sys", "ioperm"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := host.seen.Load()
			argv := tt.argv
			if argv[0] != "sh" {
				argv = append([]string{escapee}, argv...)
			}
			res, out := f.attempt(t, false, argv...)
			if strings.Contains(out, "ESCAPED") || res.ExitCode == 3 {
				t.Fatalf("sandboxed %q escaped: %q (%+v)", tt.argv, out, res)
			}
			if !strings.Contains(out, "blocked") {
				t.Fatalf("sandboxed %q: no verdict, output %q (%+v)", tt.argv, out, res)
			}
			if tt.want != "" && !strings.Contains(out, tt.want) {
				t.Fatalf("sandboxed %q: %q, want the refusal %q", tt.argv, out, tt.want)
			}
			if n := host.seen.Load() - before; n != 0 {
				t.Fatalf("sandboxed %q: host servers saw %d connections/datagrams", tt.argv, n)
			}
			if tt.noTrace != nil {
				tt.noTrace(t)
			}
			t.Logf("sandboxed: %s", strings.TrimSpace(out))
			if tt.control {
				seen := host.seen.Load()
				res, out := f.attempt(t, true, argv...)
				if !strings.Contains(out, "ESCAPED") {
					t.Errorf("negative control: unsandboxed %q did not succeed (%q, %+v); the case does not test the sandbox", tt.argv, out, res)
				}
				// The host servers count the control's connection
				// asynchronously: wait for it, so that the next case does
				// not see it as its own.
				switch tt.argv[0] {
				case "tcp", "udp", "unix":
					for deadline := time.Now().Add(2 * time.Second); host.seen.Load() == seen && time.Now().Before(deadline); {
						time.Sleep(time.Millisecond)
					}
				}
				if tt.noTrace != nil {
					// Clean up what the control run left behind.
					for _, a := range tt.argv[1:] {
						if strings.HasPrefix(a, "/") && strings.HasSuffix(a, "pwned") || strings.HasSuffix(a, "/hl") {
							os.Remove(a)
						}
					}
				}
			}
		})
	}
}

// TestDefaultPersonaAllowed: the personality filter leaves the default
// persona and the query working (runtimes and libc may ask).
func TestDefaultPersonaAllowed(t *testing.T) {
	requireSandbox(t)
	f := newFixture(t)
	res, out := f.attempt(t, false, escapee, "persona-default")
	if res.ExitCode != 0 || strings.TrimSpace(out) != "ok" {
		t.Fatalf("personality(0xffffffff) and personality(PER_LINUX) in the sandbox: %q %+v", out, res)
	}
}

// unchanged checks that the host file at path still holds body.
func unchanged(path, body string) func(t *testing.T) {
	return func(t *testing.T) {
		t.Helper()
		if b, err := os.ReadFile(path); err != nil || string(b) != body {
			t.Fatalf("%s on the host after the attempt: %q, %v; want %q", path, b, err, body)
		}
	}
}

func absent(path string) func(t *testing.T) {
	return func(t *testing.T) {
		t.Helper()
		if _, err := os.Lstat(path); err == nil {
			t.Fatalf("%s exists on the host after the attempt", path)
		}
	}
}

func TestEscapeInt80(t *testing.T) {
	requireSandbox(t)
	f := newFixture(t)
	s := f.spec(escapee, "int80")
	var stdout, stderr bytes.Buffer
	s.Stdout, s.Stderr = &stdout, &stderr
	res, err := sandbox.Run(t.Context(), s)
	if err != nil {
		t.Fatal(err)
	}
	out := stdout.String()
	if strings.Contains(out, "ESCAPED") {
		t.Fatalf("i386 socket() from the sandbox succeeded: %q", out)
	}
	// With IA32 emulation the seccomp arch check kills the process
	// (SIGSYS); without it the CPU faults first (SIGSEGV). Either way
	// there is no socket.
	// (The Go runtime turns SIGSEGV into "unexpected fault address" and
	// exit status 2.)
	noIA32 := res.ExitCode == 2 && strings.Contains(stderr.String(), "unexpected fault address")
	if noIA32 == hostHasIA32(t) {
		t.Fatalf("int80 in sandbox: %+v %q; the host runs int $0x80 unsandboxed: %v", res, stderr.String(), !noIA32)
	}
	if res.Signal != syscall.SIGSYS && !noIA32 {
		t.Fatalf("int80 in sandbox: %+v %q %q, want death by SIGSYS (or a fault without IA32 emulation)", res, out, stderr.String())
	}
	if noIA32 {
		t.Logf("this kernel has no IA32 emulation: int $0x80 faults before seccomp; TestSeccompFilter covers the arch check")
	} else {
		t.Logf("int80 in sandbox: killed by %v (seccomp arch check)", res.Signal)
	}
}

func TestEscapeForkBomb(t *testing.T) {
	requireSandbox(t)
	f := newFixture(t)
	s := f.spec(escapee, "forkbomb", "500")
	s.Limits.NProc = 16
	s.Timeout = 10 * time.Second
	var out bytes.Buffer
	s.Stdout = &out
	res, err := sandbox.Run(t.Context(), s)
	if err != nil {
		t.Fatalf("Run(forkbomb) error = %v", err)
	}
	if res.ExitCode == 3 || !strings.Contains(out.String(), "started") {
		t.Fatalf("fork bomb was not bounded: %q %+v", out.String(), res)
	}
	var n int
	if _, err := fmt.Sscanf(out.String(), "started %d", &n); err != nil || n >= 16 {
		t.Fatalf("fork bomb started %d children (%q), want < 16", n, out.String())
	}
	// The host is unaffected: we can still start processes.
	if err := exec.Command("true").Run(); err != nil {
		t.Fatalf("host cannot fork after the fork bomb: %v", err)
	}
	t.Logf("%s", strings.TrimSpace(out.String()))
}

func TestEscapeTIOCSTI(t *testing.T) {
	requireSandbox(t)
	f := newFixture(t)
	master, slave := openPTY(t)
	for _, attempt := range []string{"tiocsti", "tiocsti-hibits"} {
		s := f.spec(escapee, attempt)
		var out bytes.Buffer
		s.Stdin, s.Stdout = slave, &out
		if _, err := sandbox.Run(t.Context(), s); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(out.String(), "ESCAPED") || !strings.Contains(out.String(), "blocked") {
			t.Fatalf("%s: %q", attempt, out.String())
		}
		t.Logf("%s: %s", attempt, strings.TrimSpace(out.String()))
	}
	// Nothing was pushed into the terminal's input queue: in raw mode
	// with VMIN=0 a read returns at once with whatever is queued.
	fd := int(slave.Fd())
	tio, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	tio.Lflag &^= unix.ICANON | unix.ECHO
	tio.Cc[unix.VMIN], tio.Cc[unix.VTIME] = 0, 0
	if err := unix.IoctlSetTermios(fd, unix.TCSETS, tio); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 16)
	if n, _ := unix.Read(fd, buf); n > 0 {
		t.Fatalf("terminal input received %q", buf[:n])
	}
	_ = master
}

func openPTY(t *testing.T) (*os.File, *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pty: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	var unlock int32
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, m.Fd(), unix.TIOCSPTLCK, uintptr(unsafe.Pointer(&unlock))); e != 0 {
		t.Fatal(e)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	s, err := os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return m, s
}

func TestEscapeGrandchildOutlivesTimeout(t *testing.T) {
	requireSandbox(t)
	f := newFixture(t)
	ticks := filepath.Join(f.ws, "ticks")
	s := f.spec("sh", "-c", escapee+" grandchild "+ticks+"; sleep 60")
	s.Timeout = 700 * time.Millisecond
	res, err := sandbox.Run(t.Context(), s)
	if err != nil {
		t.Fatal(err)
	}
	if !res.TimedOut {
		t.Fatalf("Run = %+v, want TimedOut", res)
	}
	st1, err := os.Stat(ticks)
	if err != nil || st1.Size() == 0 {
		t.Fatalf("the grandchild never ran (%v); the test proves nothing", err)
	}
	time.Sleep(300 * time.Millisecond)
	st2, _ := os.Stat(ticks)
	if st2.Size() != st1.Size() {
		t.Fatalf("grandchild still writing after the timeout (%d -> %d bytes)", st1.Size(), st2.Size())
	}
	if pids := hostProcessesWithArg(ticks); len(pids) > 0 {
		t.Fatalf("host still has processes %v running with %s", pids, ticks)
	}
}

func TestParentDeathKillsSandbox(t *testing.T) {
	requireSandbox(t)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "NORMA_TEST_ORPHAN_SANDBOX=1")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("orphan helper: %v %s", err, out)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatalf("orphan helper said %q", out)
	}
	deadline := time.Now().Add(3 * time.Second)
	for {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil || strings.Contains(string(b), ") Z ") {
			return // gone (or a zombie awaiting its reaper)
		}
		if time.Now().After(deadline) {
			t.Fatalf("sandbox pid %d still alive 3s after its parent died", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// hostProcessesWithArg lists host pids whose command line contains s.
func hostProcessesWithArg(s string) []int {
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && bytes.Contains(b, []byte(s)) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// TestEscapeMemory: a sandboxed process maps and touches 1.5 GiB. With a
// memory limit (a memory cgroup where this host has one, else RLIMIT_AS)
// and with an address-space limit alone, it never gets there: the cgroup's
// OOM killer kills it and the result says so, or its mmap fails with
// ENOMEM. The unsandboxed control allocates it all.
func TestEscapeMemory(t *testing.T) {
	requireSandbox(t)
	f := newFixture(t)
	mechanism := sandbox.Probe().Memory
	const allocMiB = "1536"
	// A Go program needs about 700 MiB of address space to start, so the
	// RLIMIT_AS cases leave it 1 GiB.
	memory := uint64(256 << 20)
	if mechanism == sandbox.MemoryRlimitAS {
		memory = 1 << 30
	}
	tests := []struct {
		name   string
		limits sandbox.Limits
		want   sandbox.MemoryLimit
	}{
		{"memory limit", sandbox.Limits{Memory: memory}, sandbox.MemoryLimit{Bytes: memory, Mechanism: mechanism}},
		{"address space limit", sandbox.Limits{AS: 1 << 30}, sandbox.MemoryLimit{Bytes: 1 << 30, Mechanism: sandbox.MemoryRlimitAS}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := f.spec(escapee, "alloc", allocMiB)
			s.Limits = tt.limits
			var out, errb bytes.Buffer
			s.Stdout, s.Stderr = &out, &errb
			res, err := sandbox.Run(t.Context(), s)
			if err != nil {
				t.Fatalf("Run(alloc) error = %v", err)
			}
			if strings.Contains(out.String(), "ESCAPED") || res.ExitCode == 3 {
				t.Fatalf("allocated past the limit: %q %+v", out.String(), res)
			}
			if res.Memory != tt.want {
				t.Errorf("Result.Memory = %+v, want %+v", res.Memory, tt.want)
			}
			if res.Memory.Mechanism == sandbox.MemoryRlimitAS {
				if !strings.Contains(out.String(), "blocked") || !strings.Contains(out.String(), unix.ENOMEM.Error()) || res.MemoryExceeded {
					t.Fatalf("under RLIMIT_AS: %q %+v, want mmap to fail with ENOMEM", out.String(), res)
				}
			} else if !res.MemoryExceeded || res.Signal != syscall.SIGKILL {
				t.Fatalf("under a memory cgroup: %q %q %+v, want the OOM killer's SIGKILL reported as MemoryExceeded", out.String(), errb.String(), res)
			}
			t.Logf("%s: %s; %s (exit %d, signal %v, exceeded %v)", tt.name, res.Memory, strings.TrimSpace(out.String()), res.ExitCode, res.Signal, res.MemoryExceeded)
		})
	}
	// Negative control: without the sandbox the allocation succeeds.
	res, out := f.attempt(t, true, escapee, "alloc", allocMiB)
	if !strings.Contains(out, "ESCAPED") {
		t.Errorf("negative control: unsandboxed alloc did not succeed (%q, %+v); the test proves nothing", out, res)
	}
}

// TestDefaultMemoryStartsRuntimes: the default memory limit, even as the
// weaker RLIMIT_AS (which counts reserved address space), leaves room for
// a Go program and node to start and do some work.
func TestDefaultMemoryStartsRuntimes(t *testing.T) {
	requireSandbox(t)
	f := newFixture(t)
	type run struct {
		argv []string
		want string
	}
	// The escapee reports a successful allocation as ESCAPED (exit 3).
	runs := []run{{[]string{escapee, "alloc", "64"}, "ESCAPED allocated and touched 64 MiB"}}
	if _, err := os.Stat("/usr/bin/node"); err == nil {
		runs = append(runs, run{[]string{"/usr/bin/node", "-e", `const a = new Array(1e6).fill(1); console.log("node filled", a.length)`}, "node filled 1000000"})
	} else if os.Getenv("NORMA_REQUIRE_SANDBOX") == "1" {
		t.Fatal("no /usr/bin/node")
	}
	for _, limits := range []sandbox.Limits{{Memory: sandboxpolicy.DefaultMemory}, {AS: sandboxpolicy.DefaultMemory}} {
		for _, r := range runs {
			s := f.spec(r.argv...)
			s.Limits = limits
			var out, errb bytes.Buffer
			s.Stdout, s.Stderr = &out, &errb
			res, err := sandbox.Run(t.Context(), s)
			if err != nil || res.Signal != 0 || !strings.Contains(out.String(), r.want) {
				t.Fatalf("%q under %s: %+v, %v, %q %q; want %q", r.argv[0], res.Memory, res, err, out.String(), errb.String(), r.want)
			}
		}
	}
}
