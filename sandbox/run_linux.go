package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/norma-run/norma/capability"
)

// initEnv marks a process as the sandbox init. The init reads its
// configuration from fd specFD, never from argv or the environment.
const (
	initEnv      = "NORMA_SANDBOX_INIT"
	specFD       = 3
	statusFD     = 4
	initFailExit = 125
	// waitDelay bounds how long Wait waits for I/O copying after the tree
	// is gone; the pid namespace is dead by then, so this is a backstop.
	waitDelay = 2 * time.Second
)

const namespaces = unix.CLONE_NEWUSER | unix.CLONE_NEWNS | unix.CLONE_NEWPID |
	unix.CLONE_NEWNET | unix.CLONE_NEWIPC | unix.CLONE_NEWUTS | unix.CLONE_NEWCGROUP

// Runner starts sandboxed processes. The zero value is ready to use and
// starts the slim init embedded in this package (see [Runner.Executable]).
// A Runner is safe for concurrent use.
type Runner struct {
	// Executable is the program executed as the sandbox init. It must
	// call [InitMain] when [IsInit] reports true, before doing anything
	// else. Empty means the embedded slim init (command
	// sandbox/initexe: a small static binary, executed from a sealed
	// memfd), which starts in a fraction of the time of a large binary;
	// where it cannot be used, os.Executable().
	Executable string
}

// Run runs s to completion with the zero [Runner]. See [Runner.Run].
func Run(ctx context.Context, s Spec) (Result, error) {
	var r Runner
	return r.Run(ctx, s)
}

// Start starts s with the zero [Runner]. See [Runner.Start].
func Start(ctx context.Context, s Spec) (*Process, error) {
	var r Runner
	return r.Start(ctx, s)
}

// Run runs s to completion and reports how it ended. A non-zero exit of
// the command is not an error; an error (always a *[capability.Error], see [NewError]) means the
// sandbox could not be built or the command could not be executed, and in
// that case the command never ran. Cancelling ctx kills the whole tree.
func (r *Runner) Run(ctx context.Context, s Spec) (Result, error) {
	// Missing streams are the null device, handed to the process as a
	// file: no pipe and no copying goroutine in this process.
	if s.Stdin == nil || s.Stdout == nil || s.Stderr == nil {
		null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
		if err != nil {
			return Result{}, NewError(capability.ReasonSandboxSetupFailed, "stdio", os.DevNull, "", err)
		}
		defer null.Close()
		if s.Stdin == nil {
			s.Stdin = null
		}
		if s.Stdout == nil {
			s.Stdout = null
		}
		if s.Stderr == nil {
			s.Stderr = null
		}
	}
	p, err := r.Start(ctx, s)
	if err != nil {
		return Result{}, err
	}
	return p.Wait()
}

// Process is a sandboxed process tree started by [Runner.Start].
type Process struct {
	// Stdin, Stdout and Stderr are pipes to the process, set when the
	// matching Spec field was nil. The caller reads Stdout and Stderr until
	// EOF (which comes when the whole tree is gone) and closes them; Wait
	// closes Stdin.
	Stdin  io.WriteCloser
	Stdout io.ReadCloser
	Stderr io.ReadCloser

	cmd       *exec.Cmd
	start     time.Time
	sandboxed bool
	timedOut  atomic.Bool
	timer     *time.Timer
	stop      context.CancelFunc // ends the broker loop and its handlers
	ln        net.Listener
	cg        *cgroup
	mem       MemoryLimit
	killTree  func() error

	once sync.Once
	res  Result
	err  error
}

// Pid returns the host pid of the process (the init of its pid namespace).
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Kill kills the whole process tree. It does not wait; call Wait.
func (p *Process) Kill() error { return p.killTree() }

// Wait waits until the whole tree has exited and releases its resources.
// It may be called more than once and returns the same answer.
func (p *Process) Wait() (Result, error) {
	p.once.Do(func() {
		err := p.cmd.Wait()
		end := time.Now()
		if !p.sandboxed {
			// Unsafe runs have no pid namespace: kill what is left of the
			// process group once the leader is gone.
			p.killTree()
		}
		if p.timer != nil {
			p.timer.Stop()
		}
		if p.Stdin != nil {
			p.Stdin.Close()
		}
		if p.ln != nil {
			p.ln.Close()
		}
		if p.stop != nil {
			p.stop()
		}
		oom := p.cg.oomKills() > 0
		if p.cg != nil {
			p.cg.remove()
		}
		p.res = Result{ExitCode: -1, Duration: end.Sub(p.start), TimedOut: p.timedOut.Load(), Sandboxed: p.sandboxed,
			Memory: p.mem, MemoryExceeded: oom}
		if p.cmd.ProcessState == nil {
			p.err = NewError(capability.ReasonSandboxSetupFailed, "wait", "", "", err)
			return
		}
		if st, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus); ok {
			switch {
			case st.Exited():
				p.res.ExitCode = st.ExitStatus()
			case st.Signaled():
				p.res.Signal = st.Signal()
			}
			return
		}
		p.err = NewError(capability.ReasonSandboxSetupFailed, "wait", "", "", err)
	})
	return p.res, p.err
}

// Start starts s and returns without waiting for it to finish. The tree is
// killed when ctx is done, when Spec.Timeout expires, and when this process
// dies (PR_SET_PDEATHSIG on the pid namespace init). The caller must call
// Wait. Errors are *[capability.Error]; on error nothing is left running.
func (r *Runner) Start(ctx context.Context, s Spec) (*Process, error) {
	if s.Unsafe {
		return startUnsafe(ctx, &s)
	}
	cfg, err := buildConfig(&s)
	if err != nil {
		return nil, err
	}
	if runtime.GOARCH != "amd64" {
		return nil, NewError(capability.ReasonSandboxUnavailable, "seccomp", "",
			fmt.Sprintf("the seccomp filter is written for x86_64, not %s", runtime.GOARCH), nil)
	}
	if abi := landlockABI(); abi < 1 {
		return nil, NewError(capability.ReasonSandboxUnavailable, "landlock", "",
			"Landlock is not available on this kernel (need ABI >= 1); refusing to run without it", nil)
	}
	if cfg.Seccomp, err = seccompFilter(cfg.Network == NetBroker.String()); err != nil {
		return nil, NewError(capability.ReasonSandboxUnavailable, "seccomp", "", "", err)
	}
	exe := r.Executable
	if exe == "" {
		exe = embeddedInit()
	}
	if exe == "" {
		if exe, err = os.Executable(); err != nil {
			return nil, NewError(capability.ReasonSandboxSetupFailed, "executable", "", "", err)
		}
	}
	cg, mem, err := limitCgroup(cfg, probeCgroups)
	if err != nil {
		return nil, err
	}
	p, err := r.startSandboxed(ctx, &s, cfg, exe, cg)
	if err != nil && cg != nil {
		cg.remove()
	}
	if p != nil {
		p.mem = mem
	}
	return p, err
}

// limitCgroup sets up the limits that need a cgroup and returns it (nil
// when none does) with the memory limit in force. uid 0 is exempt from
// RLIMIT_NPROC, so as root NProc needs a pids cgroup, and the run is
// refused without one. Memory is a memory cgroup where one is writable,
// else RLIMIT_AS (cfg.Limits.AS lowered to it), which the init applies.
func limitCgroup(cfg *initConfig, probe func() cgroupInfo) (*cgroup, MemoryLimit, error) {
	l := &cfg.Limits
	var nproc uint64
	if l.NProc > 0 && cfg.UID == 0 {
		nproc = l.NProc
	}
	var mem MemoryLimit
	if l.Memory == 0 && nproc == 0 {
		if l.AS > 0 {
			mem = MemoryLimit{Bytes: l.AS, Mechanism: MemoryRlimitAS}
		}
		return nil, mem, nil
	}
	ci := probe()
	var memCg uint64
	switch {
	case l.Memory == 0:
	case ci.memParent != "":
		memCg = l.Memory
		mem = MemoryLimit{Bytes: l.Memory, Mechanism: ci.memory()}
	default:
		if l.AS == 0 || l.Memory < l.AS {
			l.AS = l.Memory
		}
	}
	if mem.Bytes == 0 && l.AS > 0 {
		mem = MemoryLimit{Bytes: l.AS, Mechanism: MemoryRlimitAS}
	}
	if nproc == 0 && memCg == 0 {
		return nil, mem, nil
	}
	if nproc > 0 && ci.pidsParent == "" {
		return nil, mem, NewError(capability.ReasonSandboxUnavailable, "nproc", "",
			"running as root, RLIMIT_NPROC does not apply and no pids cgroup is writable", nil)
	}
	cg, err := newCgroup(ci, nproc, memCg)
	if err != nil {
		return nil, mem, NewError(capability.ReasonSandboxUnavailable, "cgroup", "", "cannot set up the per-run cgroup for the process and memory limits", err)
	}
	cfg.NProcByCgroup = nproc > 0
	return cg, mem, nil
}

func (r *Runner) startSandboxed(ctx context.Context, s *Spec, cfg *initConfig, exe string, cg *cgroup) (_ *Process, retErr error) {
	setupErr := func(op string, err error) error {
		return NewError(capability.ReasonSandboxSetupFailed, op, "", "", err)
	}
	specR, specW, err := os.Pipe()
	if err != nil {
		return nil, setupErr("pipe", err)
	}
	defer specR.Close()
	defer specW.Close()
	sp, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, setupErr("socketpair", err)
	}
	statusParent := os.NewFile(uintptr(sp[0]), "sandbox-status")
	statusChild := os.NewFile(uintptr(sp[1]), "sandbox-status-child")
	defer statusParent.Close()
	defer statusChild.Close()

	cmd := exec.CommandContext(ctx, exe)
	cmd.Args = []string{"norma-sandbox-init"}
	// GOMAXPROCS=1: the init is single-threaded work; fewer runtime threads
	// start faster. The target gets exactly Spec.Env.
	// GOGC=off and memprofilerate=0: the init allocates little and lives
	// for milliseconds, so garbage collection and allocation sampling are
	// pure start-up cost; containermaxprocs=0 and updatemaxprocs=0 spare
	// the runtime reading cgroup files for a GOMAXPROCS that is fixed.
	cmd.Env = []string{initEnv + "=1", "GOMAXPROCS=1", "GOGC=off", "GODEBUG=memprofilerate=0,containermaxprocs=0,updatemaxprocs=0"}
	cmd.Dir = "/"
	cmd.ExtraFiles = []*os.File{specR, statusChild}
	cmd.WaitDelay = waitDelay
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:                 namespaces,
		UidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: cfg.UID, Size: 1}},
		GidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: cfg.GID, Size: 1}},
		GidMappingsEnableSetgroups: false,
		Pdeathsig:                  syscall.SIGKILL,
	}
	p := &Process{cmd: cmd, sandboxed: true, cg: cg}
	closeOnErr, err := p.wireStdio(s)
	if err != nil {
		return nil, setupErr("stdio", err)
	}
	defer func() {
		for _, c := range closeOnErr {
			c.Close()
		}
		if retErr != nil {
			for _, c := range []io.Closer{p.Stdin, p.Stdout, p.Stderr} {
				if c != nil {
					c.Close()
				}
			}
		}
	}()
	p.killTree = func() error { return cmd.Process.Kill() }
	cmd.Cancel = p.killTree

	p.start = time.Now()
	if err := cmd.Start(); err != nil {
		if errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.EACCES) {
			return nil, NewError(capability.ReasonSandboxUnavailable, "namespaces", "", "cannot create user/mount/pid/net namespaces", err)
		}
		return nil, setupErr("start init", err)
	}
	specR.Close()
	statusChild.Close()
	abort := func(err error) (*Process, error) {
		cmd.Process.Kill()
		cmd.Wait()
		return nil, err
	}
	if cg != nil {
		if err := cg.add(cmd.Process.Pid); err != nil {
			return abort(NewError(capability.ReasonSandboxUnavailable, "cgroup", "", "", err))
		}
	}
	if s.Timeout > 0 {
		p.timer = time.AfterFunc(s.Timeout, func() {
			p.timedOut.Store(true)
			p.killTree()
		})
	}
	if err := json.NewEncoder(specW).Encode(cfg); err != nil {
		return abort(setupErr("send spec", err))
	}
	specW.Close()

	lnFD, err := readStatus(statusParent)
	if err != nil {
		return abort(err)
	}
	if lnFD >= 0 {
		f := os.NewFile(uintptr(lnFD), "sandbox-broker")
		ln, err := net.FileListener(f)
		f.Close()
		if err != nil {
			return abort(setupErr("broker listener", err))
		}
		p.ln = ln
		bctx, stop := context.WithCancel(ctx)
		p.stop = stop
		go serveBroker(bctx, ln, s.Broker)
	}
	return p, nil
}

// wireStdio connects the standard streams, creating pipes for nil fields.
// It returns the child-side ends, which the caller closes after Start.
func (p *Process) wireStdio(s *Spec) ([]io.Closer, error) {
	var child []io.Closer
	cmd := p.cmd
	if s.Stdin != nil {
		cmd.Stdin = s.Stdin
	} else {
		r, w, err := os.Pipe()
		if err != nil {
			return child, err
		}
		cmd.Stdin, p.Stdin = r, w
		child = append(child, r)
	}
	out := func(w io.Writer, dst *io.Writer, rd *io.ReadCloser) error {
		if w != nil {
			*dst = w
			return nil
		}
		r, pw, err := os.Pipe()
		if err != nil {
			return err
		}
		*dst, *rd = pw, r
		child = append(child, pw)
		return nil
	}
	if err := out(s.Stdout, &cmd.Stdout, &p.Stdout); err != nil {
		return child, err
	}
	if err := out(s.Stderr, &cmd.Stderr, &p.Stderr); err != nil {
		return child, err
	}
	return child, nil
}

// statusMsg is one message from the init on the status socket. The socket
// is close-on-exec in the init, so EOF without an error means the target
// was executed.
type statusMsg struct {
	Kind string            `json:"kind"` // "error" or "listener"
	Code capability.Reason `json:"code,omitempty"`
	// Detail is the public message of the init's error ("op path: msg").
	Detail string `json:"detail,omitempty"`
	// Msg is the text of its internal cause.
	Msg  string `json:"msg,omitempty"`
	Port int    `json:"port,omitempty"`
}

// readStatus reads init messages until EOF. It returns the broker listener
// fd (or -1) and the init's error, if any.
func readStatus(f *os.File) (int, error) {
	lnFD := -1
	buf := make([]byte, 64<<10)
	oob := make([]byte, unix.CmsgSpace(4))
	for {
		n, oobn, _, _, err := unix.Recvmsg(int(f.Fd()), buf, oob, unix.MSG_CMSG_CLOEXEC)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return closeFD(lnFD), NewError(capability.ReasonSandboxSetupFailed, "status", "", "", err)
		}
		if n == 0 && oobn == 0 {
			return lnFD, nil
		}
		var m statusMsg
		if err := json.Unmarshal(buf[:n], &m); err != nil {
			return closeFD(lnFD), NewError(capability.ReasonSandboxSetupFailed, "status", "", "bad message from init", err)
		}
		switch m.Kind {
		case "error":
			code := m.Code
			if code == "" {
				code = capability.ReasonSandboxSetupFailed
			}
			var cause error
			if m.Msg != "" {
				cause = errors.New(m.Msg)
			}
			return closeFD(lnFD), detailErr(code, m.Detail, cause)
		case "listener":
			cmsgs, err := unix.ParseSocketControlMessage(oob[:oobn])
			if err != nil || len(cmsgs) != 1 {
				return closeFD(lnFD), NewError(capability.ReasonSandboxSetupFailed, "status", "", "listener message without fd", err)
			}
			fds, err := unix.ParseUnixRights(&cmsgs[0])
			if err != nil || len(fds) != 1 {
				for _, fd := range fds {
					unix.Close(fd)
				}
				return closeFD(lnFD), NewError(capability.ReasonSandboxSetupFailed, "status", "", "bad listener message", err)
			}
			closeFD(lnFD)
			lnFD = fds[0]
		}
	}
}

func closeFD(fd int) int {
	if fd >= 0 {
		unix.Close(fd)
	}
	return -1
}

// serveBroker accepts connections on the listener that lives in the
// sandbox's network namespace and hands each to the broker.
func serveBroker(ctx context.Context, ln net.Listener, broker BrokerFunc) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go broker(ctx, c)
	}
}

// startUnsafe runs s without any OS sandbox (Spec.Unsafe).
func startUnsafe(ctx context.Context, s *Spec) (_ *Process, retErr error) {
	if err := s.validate(); err != nil {
		return nil, err
	}
	path, err := lookPath(s.Argv[0], s.Env, func(p string) bool {
		fi, err := os.Stat(p)
		return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
	})
	if err != nil {
		return nil, NewError(capability.ReasonSandboxExecFailed, "exec", s.Argv[0], "", err)
	}
	cmd := exec.CommandContext(ctx, path)
	cmd.Args = s.Argv
	cmd.Env = append([]string{}, s.Env...)
	cmd.Dir = s.Dir
	cmd.WaitDelay = waitDelay
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	p := &Process{cmd: cmd}
	closeChild, err := p.wireStdio(s)
	defer func() {
		for _, c := range closeChild {
			c.Close()
		}
		if retErr != nil {
			for _, c := range []io.Closer{p.Stdin, p.Stdout, p.Stderr} {
				if c != nil {
					c.Close()
				}
			}
		}
	}()
	if err != nil {
		return nil, NewError(capability.ReasonSandboxSetupFailed, "stdio", "", "", err)
	}
	p.killTree = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.Cancel = p.killTree
	p.start = time.Now()
	if err := cmd.Start(); err != nil {
		return nil, NewError(capability.ReasonSandboxExecFailed, "exec", path, "", err)
	}
	if s.Timeout > 0 {
		p.timer = time.AfterFunc(s.Timeout, func() {
			p.timedOut.Store(true)
			p.killTree()
		})
	}
	return p, nil
}
