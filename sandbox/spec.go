package sandbox

import (
	"context"
	"fmt"
	"io"
	"math"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/norma-run/norma/capability"
)

// NetworkMode says what the sandboxed process can reach on the network.
// The zero value is [NetNone].
type NetworkMode uint8

const (
	// NetNone gives the process an empty network namespace (not even a
	// loopback interface that is up) and a seccomp filter that refuses every
	// socket family but AF_UNIX.
	NetNone NetworkMode = iota
	// NetBroker gives the process an empty network namespace whose only
	// reachable endpoint is a loopback listener owned by the host-side
	// broker ([Spec.Broker]); HTTP_PROXY and HTTPS_PROXY point at it.
	NetBroker
)

// String returns "none" or "broker" (or "unknown(N)").
func (m NetworkMode) String() string {
	switch m {
	case NetNone:
		return "none"
	case NetBroker:
		return "broker"
	}
	return fmt.Sprintf("unknown(%d)", uint8(m))
}

// ParseNetworkMode parses "none" or "broker".
func ParseNetworkMode(s string) (NetworkMode, error) {
	switch s {
	case "none":
		return NetNone, nil
	case "broker":
		return NetBroker, nil
	}
	return NetNone, fmt.Errorf("sandbox: unknown network mode %q (want none or broker)", s)
}

// Limits are resource limits applied to the sandboxed process tree. A zero
// field means "no limit set by Norma" (the inherited limit stays).
type Limits struct {
	// NProc bounds the number of processes (RLIMIT_NPROC). When the caller
	// runs as host root, the kernel exempts uid 0 from RLIMIT_NPROC, so the
	// sandbox enforces NProc with a pids cgroup instead and refuses to run
	// when none is writable.
	NProc uint64 `json:"nproc,omitempty"`
	// NoFile bounds open file descriptors (RLIMIT_NOFILE).
	NoFile uint64 `json:"nofile,omitempty"`
	// Memory bounds the memory of the tree in bytes. Where a memory cgroup
	// is writable (cgroup v2 delegated with the memory controller, or a
	// writable v1 memory hierarchy) it bounds the resident memory of the
	// whole tree, page cache, tmpfs files and swap included: going over it
	// makes the kernel's OOM killer kill the tree (v2) or its largest
	// process (v1), and [Result.MemoryExceeded] says so. Elsewhere it is
	// RLIMIT_AS of every process: address space, which counts reserved
	// but untouched mappings too, so a process that maps past it gets
	// ENOMEM (and reports it in its own words). [Result.Memory] says which
	// applied.
	Memory uint64 `json:"memory,omitempty"`
	// AS bounds the address space of each process in bytes (RLIMIT_AS),
	// whatever Memory does.
	AS uint64 `json:"as,omitempty"`
	// CPU bounds CPU time in seconds (RLIMIT_CPU).
	CPU uint64 `json:"cpu,omitempty"`
	// FSize bounds the size of a file the process may write (RLIMIT_FSIZE).
	FSize uint64 `json:"fsize,omitempty"`
}

// MemoryMechanism is how a memory limit is enforced.
type MemoryMechanism string

const (
	// MemoryCgroupV2: memory.max (and memory.swap.max 0) of a per-run
	// cgroup v2; resident memory of the whole tree.
	MemoryCgroupV2 MemoryMechanism = "cgroup2 memory.max"
	// MemoryCgroupV1: memory.limit_in_bytes (and memory.memsw.limit_in_bytes)
	// of a per-run cgroup v1; resident memory of the whole tree.
	MemoryCgroupV1 MemoryMechanism = "cgroup1 memory.limit_in_bytes"
	// MemoryRlimitAS: RLIMIT_AS of each process; address space.
	MemoryRlimitAS MemoryMechanism = "RLIMIT_AS"
)

// MemoryLimit is the memory bound a run had.
type MemoryLimit struct {
	// Bytes is the limit; 0 means none was set by Norma.
	Bytes     uint64          `json:"bytes"`
	Mechanism MemoryMechanism `json:"mechanism,omitempty"`
}

// String describes the limit for people: "4 GiB of resident memory for the
// whole tree (cgroup1 memory.limit_in_bytes)", "4 GiB of address space per
// process (RLIMIT_AS)" or "none".
func (m MemoryLimit) String() string {
	switch {
	case m.Bytes == 0:
		return "none"
	case m.Mechanism == MemoryRlimitAS:
		return FormatSize(m.Bytes) + " of address space per process (" + string(m.Mechanism) + ")"
	}
	return FormatSize(m.Bytes) + " of resident memory for the whole tree (" + string(m.Mechanism) + ")"
}

// ParseSize parses a size in bytes: a decimal integer with an optional
// binary unit K, M, G or T, bare or followed by B or iB (1K, 1KB and 1KiB
// are all 1024 bytes), case-insensitive, with at most one space before
// it. It refuses signs, fractions and values that overflow.
func ParseSize(s string) (uint64, error) {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	shift, ok := sizeUnits[strings.ToUpper(strings.TrimPrefix(s[i:], " "))]
	if i == 0 || !ok {
		return 0, fmt.Errorf("size %q: want a whole number of bytes with an optional unit, such as 512M or 4GiB", s)
	}
	n, err := strconv.ParseUint(s[:i], 10, 64)
	if err != nil || n > math.MaxUint64>>shift {
		return 0, fmt.Errorf("size %q: too large", s)
	}
	return n << shift, nil
}

var sizeUnits = map[string]uint{"": 0, "B": 0,
	"K": 10, "KB": 10, "KIB": 10, "M": 20, "MB": 20, "MIB": 20,
	"G": 30, "GB": 30, "GIB": 30, "T": 40, "TB": 40, "TIB": 40}

// FormatSize formats bytes with the largest binary unit that divides them
// exactly (4294967296 → "4 GiB", 1536 → "1536 B"); ParseSize reads it
// back.
func FormatSize(n uint64) string {
	for _, u := range []struct {
		shift uint
		name  string
	}{{40, "TiB"}, {30, "GiB"}, {20, "MiB"}, {10, "KiB"}} {
		if n != 0 && n%(1<<u.shift) == 0 {
			return strconv.FormatUint(n>>u.shift, 10) + " " + u.name
		}
	}
	return strconv.FormatUint(n, 10) + " B"
}

// BrokerFunc serves one connection that the sandboxed process opened to its
// loopback proxy endpoint. It runs on the host, in its own goroutine, and
// owns c (it must close it). ctx is cancelled when the process exits.
type BrokerFunc func(ctx context.Context, c net.Conn)

// Spec describes one confined process. Callers derive it from effective
// capabilities; it is never written by hand from untrusted input.
//
// Paths are absolute host paths. Symbolic links in them are resolved on the
// host before the sandbox is built, and each granted path appears inside the
// sandbox at its resolved absolute path.
type Spec struct {
	// Argv is the command and its arguments. Argv[0] without a slash is
	// looked up in the PATH of Env (default /usr/local/bin:/usr/bin:/bin)
	// inside the sandbox.
	Argv []string
	// Dir is the working directory inside the sandbox; it must be inside a
	// granted path (or be /tmp). Empty means /tmp.
	Dir string
	// ReadOnly and ReadWrite are the granted host paths (directories or
	// files). They must exist. "/" is never accepted.
	ReadOnly  []string
	ReadWrite []string
	// Deny are paths inside granted ones that must be hidden: a denied file
	// is replaced by an empty, unreadable file, a denied directory by an
	// empty, unreadable one. A denied file with more than one hard link is
	// refused (the other names could not be hidden). A deny path that does
	// not exist is ignored. A grant inside a denied directory (a plugin's
	// package or data directory in Norma's state directory) stays visible:
	// the directory then holds only the way down to it, which cannot be
	// listed. A denied directory may lie outside every grant when it holds
	// one; it then hides the names beside that grant.
	Deny []string
	// Pin are paths inside read-write grants whose names must stay what
	// they are: each becomes a mount point of itself, with the access of
	// the grant it lies in, and the kernel refuses to rename, remove or
	// replace a mount point (EBUSY) or to link or rename anything across
	// it (EXDEV). Pinning every directory between a grant and a hidden or
	// protected path keeps a process from moving that path out from under
	// the name a deny rule matches (mv docs docs2 exposing docs/private as
	// docs2/private to the next, name-based check) or from replacing its
	// parent (mv .norma x && mkdir .norma). A Deny path is a mount point
	// already. A pin that does not exist, lies outside every read-write
	// grant, is a grant itself or lies under a Deny path is ignored.
	Pin []string
	// Freeze are paths inside read-write grants that the process may read
	// but not change: each becomes a read-only mount of itself, recursive
	// (every mount below it, a nested grant or pin included, is read-only
	// too), so writing, creating, renaming or removing anything in a
	// frozen directory fails with EROFS and the path itself cannot be
	// renamed, removed or replaced (EBUSY), nor a file linked into or out
	// of it (EXDEV). Deny paths inside a frozen one stay hidden: their
	// masks are mounted on top. Names are frozen as a process opens them:
	// every symbolic link on the way that lies inside a read-write grant
	// is pinned as itself (a mount on the link, which then cannot be
	// removed or replaced), the object the path leads to is frozen, and
	// every directory between a grant and a frozen path or pinned link is
	// pinned ([Spec.Pin]), so that moving an ancestor cannot carry the
	// mount away. A path that leads outside every read-write grant, or
	// under a Deny path, has only its links pinned. A path that leads to
	// a name that does not exist inside a read-write grant is refused
	// (SANDBOX_SPEC_INVALID: the process could create it); the caller
	// creates what it wants frozen first.
	Freeze []string
	// Env is the complete environment, as KEY=VALUE. Nothing is inherited.
	Env []string
	// Network is the network mode; NetBroker requires Broker.
	Network NetworkMode
	// Broker serves connections to the in-sandbox proxy endpoint
	// (NetBroker only).
	Broker BrokerFunc
	// Limits are resource limits for the whole tree.
	Limits Limits
	// Timeout, when positive, kills the whole tree after this long.
	Timeout time.Duration
	// Stdin, Stdout and Stderr are the standard streams. For [Run], nil
	// means empty input and discarded output. For [Start], nil makes the
	// matching pipe available on the [Process].
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// ExecOnly, when not nil, restricts execve to these host paths (files
	// or directories, inside the granted or system paths): Landlock then
	// grants the execute right nowhere else, so a process whose policy
	// denies spawning cannot start /bin/sh or a binary it wrote to /tmp.
	// Argv[0] must be listed. A dynamically linked program also needs its
	// ELF interpreter listed, and that interpreter can load any readable
	// program: static entrypoints get the strict guarantee. Nil keeps the
	// default (execute allowed on every readable path).
	ExecOnly []string
	// Unsafe runs the command WITHOUT any OS sandbox (no namespaces, no
	// Landlock, no seccomp, no limits): only Env, Dir, Timeout and the
	// kill-tree guarantee are kept. It exists for `--unsafe-no-sandbox`;
	// callers must record its use in the audit log and show it in the
	// sandbox policy layer.
	Unsafe bool
}

// Result is how a sandboxed process ended.
type Result struct {
	// ExitCode is the exit status, or -1 when the process was killed by a
	// signal.
	ExitCode int
	// Signal is the signal that killed the process (0 when it exited).
	Signal syscall.Signal
	// Duration is the wall time from start to the end of the tree.
	Duration time.Duration
	// TimedOut reports that Spec.Timeout expired and the tree was killed.
	TimedOut bool
	// Sandboxed is false only for Spec.Unsafe runs.
	Sandboxed bool
	// Memory is the memory limit the run had (see [Limits.Memory]).
	Memory MemoryLimit
	// MemoryExceeded reports that the tree went over a cgroup memory
	// limit and the kernel killed a process of it (with RLIMIT_AS the
	// process sees ENOMEM instead, and nothing is reported here).
	MemoryExceeded bool
}

// NewError returns the *capability.Error of a sandbox failure, the error
// type of every failure of this package and of the runners built on it:
// layer sandbox and the stable reason code; op (the step that failed, e.g.
// "mount", "landlock", "spec"), path (the path involved, quoted when it
// holds spaces, quotes or unusual bytes) and msg, this package's own
// explanation, folded into the public Detail as "op path: msg"; cause is
// the internal error (an errno, a lookup failure), reachable through
// errors.Is and errors.As but never part of the message.
// [capability.ReasonOf] returns the code.
func NewError(code capability.Reason, op, path, msg string, cause error) *capability.Error {
	return detailErr(code, capability.OpDetail(op, path, msg), cause)
}

// detailErr is NewError with the Detail already built (the init reports it
// so over the status socket).
func detailErr(code capability.Reason, d string, cause error) *capability.Error {
	return &capability.Error{Decision: capability.Decision{Mode: capability.Deny, Reason: code, Layer: capability.LayerSandbox},
		Detail: d, Err: cause}
}

func specErr(op, path string, format string, args ...any) *capability.Error {
	return NewError(capability.ReasonSandboxSpecInvalid, op, path, fmt.Sprintf(format, args...), nil)
}

// validate checks the portable rules of a Spec. It does not touch the file
// system.
func (s *Spec) validate() error {
	if len(s.Argv) == 0 || s.Argv[0] == "" {
		return specErr("argv", "", "empty command")
	}
	for _, group := range [][]string{s.ReadOnly, s.ReadWrite, s.Deny, s.Pin, s.Freeze} {
		for _, p := range group {
			if !filepath.IsAbs(p) {
				return specErr("path", p, "not absolute")
			}
			if strings.ContainsRune(p, 0) {
				return specErr("path", p, "contains NUL")
			}
		}
	}
	if s.Dir != "" && !filepath.IsAbs(s.Dir) {
		return specErr("dir", s.Dir, "not absolute")
	}
	for i, kv := range s.Env {
		k, _, ok := strings.Cut(kv, "=")
		if !ok || k == "" || strings.ContainsRune(kv, 0) {
			// The entry may hold a value (a secret passed as the
			// environment): the message names its index only.
			return NewError(capability.ReasonSandboxSpecInvalid, "env", "", fmt.Sprintf("malformed entry %d (want KEY=VALUE)", i),
				fmt.Errorf("malformed entry %q", kv))
		}
	}
	switch s.Network {
	case NetNone:
		if s.Broker != nil {
			return specErr("network", "", "Broker set with network mode none")
		}
	case NetBroker:
		if s.Broker == nil {
			return specErr("network", "", "network mode broker needs a Broker")
		}
	default:
		return specErr("network", "", "unknown network mode %v", s.Network)
	}
	if s.Timeout < 0 {
		return specErr("timeout", "", "negative timeout %v", s.Timeout)
	}
	return nil
}
