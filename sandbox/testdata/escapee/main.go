// Command escapee tries one escape from the Norma sandbox and reports the
// outcome on stdout: a line starting with "ESCAPED" when the attempt
// worked, "blocked" when it failed. It exits 3 on escape, 0 when blocked.
// It is built and run by the sandbox escape tests.
package main

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

func escaped(format string, args ...any) {
	fmt.Printf("ESCAPED "+format+"\n", args...)
	os.Exit(3)
}

func blocked(err error) {
	fmt.Printf("blocked: %v\n", err)
	os.Exit(0)
}

func check(err error, format string, args ...any) {
	if err != nil {
		blocked(err)
	}
	escaped(format, args...)
}

func int80Socket() int64

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: escapee ATTEMPT ARGS...")
		os.Exit(2)
	}
	arg := func(i int) string {
		if len(os.Args) <= i+1 {
			fmt.Fprintln(os.Stderr, "missing argument")
			os.Exit(2)
		}
		return os.Args[i+1]
	}
	switch os.Args[1] {
	case "read":
		b, err := os.ReadFile(arg(1))
		check(err, "read %d bytes: %q", len(b), b)
	case "readdir":
		names, err := os.ReadDir(arg(1))
		check(err, "listed %d entries", len(names))
	case "hardlink": // hardlink SRC DST: link then read through the new name
		if err := os.Link(arg(1), arg(2)); err != nil {
			blocked(err)
		}
		b, err := os.ReadFile(arg(2))
		check(err, "read through hard link: %q", b)
	case "write":
		check(os.WriteFile(arg(1), []byte("pwned"), 0o644), "wrote %s", arg(1))
	case "mkwrite": // mkwrite FILE: create FILE's directory, write FILE and read it back
		if err := os.MkdirAll(filepath.Dir(arg(1)), 0o755); err != nil {
			blocked(err)
		}
		if err := os.WriteFile(arg(1), []byte("pwned"), 0o644); err != nil {
			blocked(err)
		}
		b, err := os.ReadFile(arg(1))
		check(err, "created and wrote %s (reads back %q)", arg(1), b)
	case "alloc": // alloc MIB: map and touch MIB mebibytes of anonymous memory
		n, _ := strconv.Atoi(arg(1))
		const chunk = 16 << 20
		for done := 0; done < n<<20; done += chunk {
			b, err := unix.Mmap(-1, 0, chunk, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
			if err != nil {
				blocked(fmt.Errorf("mmap after %d MiB: %w", done>>20, err))
			}
			for i := 0; i < len(b); i += 4096 {
				b[i] = 1
			}
		}
		escaped("allocated and touched %d MiB", n)
	case "tcp", "udp":
		c, err := net.DialTimeout(os.Args[1], arg(1), 2*time.Second)
		if err != nil {
			blocked(err)
		}
		_, err = c.Write([]byte("hello from the sandbox\n"))
		check(err, "%s connect+write to %s", os.Args[1], arg(1))
	case "unix":
		c, err := net.DialTimeout("unix", arg(1), 2*time.Second)
		if err == nil {
			c.Close()
		}
		check(err, "unix connect to %s", arg(1))
	case "dns":
		addrs, err := net.LookupHost(arg(1))
		check(err, "resolved %s to %v", arg(1), addrs)
	case "mptcp":
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 262)
		check(err, "MPTCP socket fd %d", fd)
	case "int80":
		r := int80Socket()
		if r < 0 {
			blocked(syscall.Errno(-r))
		}
		escaped("i386 socket() returned fd %d", r)
	case "iouring":
		var params [120]byte
		fd, _, e := unix.Syscall(unix.SYS_IO_URING_SETUP, 4, uintptr(unsafe.Pointer(&params[0])), 0)
		if e != 0 {
			blocked(e)
		}
		escaped("io_uring fd %d", fd)
	case "unshare": // unshare(2) of the file table: harmless, needs no privilege
		check(unix.Unshare(unix.CLONE_FILES), "unshare(CLONE_FILES) succeeded")
	case "x32": // getpid through the x32 ABI (the 0x40000000 bit)
		r, _, e := unix.RawSyscall(0x40000000|unix.SYS_GETPID, 0, 0, 0)
		if e != 0 {
			blocked(e)
		}
		escaped("x32 getpid returned %d", r)
	case "inet-socket":
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)
		check(err, "inet socket fd %d", fd)
	case "ptrace-traceme":
		_, _, e := unix.RawSyscall(unix.SYS_PTRACE, unix.PTRACE_TRACEME, 0, 0)
		if e != 0 {
			blocked(e)
		}
		escaped("PTRACE_TRACEME succeeded")
	case "ptrace-parent":
		ppid := os.Getppid()
		check(unix.PtraceAttach(ppid), "attached to parent pid %d", ppid)
	case "ptrace-pid":
		pid, _ := strconv.Atoi(arg(1))
		check(unix.PtraceAttach(pid), "attached to pid %d", pid)
	case "tiocsti":
		c := byte('#')
		_, _, e := unix.Syscall(unix.SYS_IOCTL, 0, unix.TIOCSTI, uintptr(unsafe.Pointer(&c)))
		if e != 0 {
			blocked(e)
		}
		escaped("TIOCSTI injected a byte")
	case "tiocsti-hibits":
		// The same request with garbage in the upper 32 bits, which the
		// kernel ignores.
		c := byte('#')
		_, _, e := unix.Syscall(unix.SYS_IOCTL, 0, 0xdead00000000|unix.TIOCSTI, uintptr(unsafe.Pointer(&c)))
		if e != 0 {
			blocked(e)
		}
		escaped("TIOCSTI (high bits) injected a byte")
	case "environ": // environ TOKEN: look for TOKEN in every visible environ
		ents, _ := os.ReadDir("/proc")
		for _, e := range ents {
			if _, err := strconv.Atoi(e.Name()); err != nil {
				continue
			}
			b, err := os.ReadFile("/proc/" + e.Name() + "/environ")
			if err == nil && strings.Contains(string(b), arg(1)) {
				escaped("found %s in /proc/%s/environ", arg(1), e.Name())
			}
		}
		blocked(fmt.Errorf("token not visible in any environ"))
	case "sys": // sys NAME: a legacy or dangerous syscall with harmless arguments
		legacySyscall(arg(1))
	case "persona-default": // the default persona and the query must keep working
		if _, _, e := unix.Syscall(unix.SYS_PERSONALITY, 0xffffffff, 0, 0); e != 0 {
			fmt.Println("failed: personality query:", e)
			os.Exit(1)
		}
		if _, _, e := unix.Syscall(unix.SYS_PERSONALITY, 0, 0, 0); e != 0 {
			fmt.Println("failed: personality(PER_LINUX):", e)
			os.Exit(1)
		}
		fmt.Println("ok")
	case "newns": // start a child in new user+net namespaces
		cmd := exec.Command("/proc/self/exe", "noop")
		cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: unix.CLONE_NEWUSER | unix.CLONE_NEWNET}
		check(cmd.Run(), "child started in new user and network namespaces")
	case "noop":
	case "mount":
		check(unix.Mount("tmpfs", "/tmp", "tmpfs", 0, ""), "mounted tmpfs")
	case "forkbomb": // forkbomb N: start up to N sleeping children
		n, _ := strconv.Atoi(arg(1))
		started := 0
		var firstErr error
		for range n {
			cmd := exec.Command(os.Args[0], "sleep")
			if err := cmd.Start(); err != nil {
				firstErr = err
				break
			}
			started++
		}
		fmt.Printf("started %d children (stopped by: %v)\n", started, firstErr)
		if started == n {
			os.Exit(3)
		}
		os.Exit(0)
	case "sleep":
		time.Sleep(time.Hour)
	case "grandchild": // grandchild FILE: a detached grandchild appends to FILE forever
		cmd := exec.Command(os.Args[0], "ticker", arg(1))
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := cmd.Start(); err != nil {
			blocked(err)
		}
		fmt.Println("grandchild started")
		os.Exit(0)
	case "ticker":
		f, err := os.OpenFile(arg(1), os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
		if err != nil {
			os.Exit(1)
		}
		for {
			f.Write([]byte("tick\n"))
			time.Sleep(20 * time.Millisecond)
		}
	case "proxyget": // fetch through HTTP_PROXY
		p := strings.TrimPrefix(os.Getenv("HTTP_PROXY"), "http://")
		c, err := net.DialTimeout("tcp", p, 2*time.Second)
		if err != nil {
			fmt.Println("proxy dial failed:", err)
			os.Exit(1)
		}
		fmt.Fprintf(c, "GET http://example.invalid/ HTTP/1.0\r\n\r\n")
		b, _ := io.ReadAll(c)
		fmt.Printf("proxy answered: %q\n", b)
	default:
		fmt.Fprintln(os.Stderr, "unknown attempt", os.Args[1])
		os.Exit(2)
	}
}

// legacySyscall makes the named system call with arguments that change
// nothing outside this process. The call is blocked when the sandbox
// answers EPERM (its seccomp filter) or the kernel has no such call
// (ENOSYS); any other answer, success or another errno, means the kernel's
// implementation ran.
func legacySyscall(name string) {
	var buf [64]byte
	p := uintptr(unsafe.Pointer(&buf[0]))
	noSuch, _ := unix.BytePtrFromString("/nonexistent-norma-lib")
	var st unix.Stat_t
	unix.Stat("/", &st)
	calls := map[string][4]uintptr{
		"modify_ldt":       {unix.SYS_MODIFY_LDT, 0, p, uintptr(len(buf))}, // read the LDT
		"personality":      {unix.SYS_PERSONALITY, 0x0040000, 0, 0},        // ADDR_NO_RANDOMIZE
		"personality32":    {unix.SYS_PERSONALITY, 0x0008, 0, 0},           // PER_LINUX32
		"ustat":            {unix.SYS_USTAT, uintptr(st.Dev), p, 0},
		"sysfs":            {unix.SYS_SYSFS, 3, 0, 0}, // number of file system types
		"_sysctl":          {unix.SYS__SYSCTL, p, 0, 0},
		"uselib":           {unix.SYS_USELIB, uintptr(unsafe.Pointer(noSuch)), 0, 0},
		"iopl":             {unix.SYS_IOPL, 0, 0, 0},
		"ioperm":           {unix.SYS_IOPERM, 0x80, 1, 0}, // turn a port off
		"userfaultfd":      {unix.SYS_USERFAULTFD, unix.O_CLOEXEC, 0, 0},
		"remap_file_pages": {unix.SYS_REMAP_FILE_PAGES, 0, 0, 0},
	}
	c, ok := calls[name]
	if !ok {
		fmt.Fprintln(os.Stderr, "unknown syscall", name)
		os.Exit(2)
	}
	r, _, e := unix.Syscall(c[0], c[1], c[2], c[3])
	switch e {
	case unix.EPERM, unix.ENOSYS:
		blocked(fmt.Errorf("%s: %w", name, e))
	case 0:
		escaped("%s returned %d", name, r)
	}
	escaped("%s reached the kernel (errno %v)", name, e)
}
