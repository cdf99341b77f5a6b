// Package sandbox runs a process confined to its effective capabilities:
// the OS layer that bounds the damage when a guard, a tool or a plugin
// misbehaves ("enforce twice").
//
// # How a run is built
//
// [Runner.Start] executes the sandbox init — the slim static program
// embedded in this package (command sandbox/initexe, written once per
// process to a sealed memfd), else the current binary, or
// [Runner.Executable] — in new user, mount, pid, network, IPC, UTS and cgroup
// namespaces, with uid/gid maps of the caller to uid/gid 0 inside. The
// configuration travels over an inherited pipe as JSON (never argv or the
// environment); setup errors come back over an inherited SOCK_SEQPACKET
// socket that is close-on-exec, so EOF means the target was executed.
// The host also assembles the seccomp filter (once per process) and sends
// it with the configuration, so the init only installs it. Programs that
// can serve as the init call, before anything else:
//
//	if sandbox.IsInit() { sandbox.InitMain() }
//
// The init, pid 1 of the new pid namespace:
//
//  1. captures every host path it needs as a detached, recursively
//     read-only (or nosuid/nodev read-write) mount clone (open_tree +
//     mount_setattr): /usr, /lib*, /bin, /sbin (symlinks of a merged /usr
//     are recreated as symlinks), a few non-secret /etc files (TLS roots in
//     broker mode only; never resolv.conf), /dev/{null,zero,full,random,
//     urandom,tty}, and the granted paths;
//  2. builds a minimal root on a tmpfs: a fresh /proc (with /proc/sys
//     read-only), a read-only tmpfs /dev with the bound nodes, a private
//     tmpfs /tmp and /dev/shm, a synthetic /etc/passwd and /etc/group, the
//     grants at their absolute host paths, the pinned paths ([Spec.Pin])
//     bound onto themselves, so that they cannot be renamed, removed or
//     replaced, the frozen paths ([Spec.Freeze]) bound read-only onto
//     themselves (symbolic links on the way pinned as themselves), and
//     the denied paths covered by empty mode-000 objects (mount points
//     too, on top of a frozen directory that holds them); the directories the private /tmp holds for
//     grants under the host's /tmp are made read-only too (a write beside
//     a grant fails with EROFS rather than landing in the private tmpfs);
//     then remounts that root read-only and pivot_roots into it,
//     detaching the host tree. "/" is never bound;
//  3. in broker mode brings lo up, listens on 127.0.0.1:0 and passes the
//     listening socket to the host (SCM_RIGHTS): the host accepts
//     connections from inside the sandbox and hands them to
//     [Spec.Broker], while nothing inside can reach any host address;
//     HTTP_PROXY and HTTPS_PROXY name the endpoint;
//  4. applies rlimits, setsid (no controlling terminal, so no TIOCSTI into
//     the caller's), drops every capability (locked securebits, empty
//     bounding, ambient and inheritable sets), PR_SET_NO_NEW_PRIVS, a
//     Landlock ruleset (read/execute on the system and read-only paths,
//     read-write on the read-write grants and /tmp, TCP bind/connect denied
//     except the broker port on ABI >= 4, signals and abstract unix sockets
//     scoped on ABI >= 6), and a seccomp filter (see below);
//  5. execs the target directly. The target is pid 1: when it exits, or is
//     killed on timeout, cancellation or [Process.Kill], the kernel kills
//     everything else in the pid namespace. PR_SET_PDEATHSIG (SIGKILL)
//     survives the exec, so the tree also dies with the host process. A
//     pid-1 target ignores signals it has no handler for from inside its
//     namespace and inherits orphans; nothing reaps them but the namespace
//     teardown (the price of one exec less per launch).
//
// The seccomp filter kills any syscall made through a non-native ABI (the
// i386 int $0x80 path and x32) before anything else, then denies ptrace,
// process_vm_*, io_uring_*, bpf, perf_event_open, userfaultfd, the keyring,
// mount and the new mount API, pivot_root, chroot, unshare, setns, clone
// with namespace flags, kexec, module loading, open_by_handle_at, ioctl
// TIOCSTI/TIOCLINUX, the legacy calls nothing needs (modify_ldt, ustat,
// sysfs, _sysctl, uselib, remap_file_pages, iopl, ioperm, acct, quotactl,
// nfsservctl, lookup_dcookie and the never-implemented numbers),
// personality(2) with any persona but PER_LINUX (the query 0xffffffff is
// allowed), and every socket family but AF_UNIX (plus AF_INET and
// AF_INET6 in broker mode; MPTCP never, since Landlock does not cover it).
// clone3 fails with ENOSYS so that libc falls back to clone(2), whose flags
// a filter can read.
//
// # Limits
//
// RLIMIT_NPROC, RLIMIT_NOFILE, RLIMIT_AS, RLIMIT_CPU and RLIMIT_FSIZE come
// from [Limits]. The kernel exempts uid 0 from RLIMIT_NPROC, so when the
// caller is host root and NProc is set, a per-run pids cgroup (cgroup v2
// when delegated, else the v1 pids hierarchy) enforces it, and the run is
// refused when none is writable. A pids cgroup counts threads.
// Limits.Memory is the resident memory of the whole tree, enforced by a
// per-run memory cgroup (memory.max of a delegated cgroup v2, else
// memory.limit_in_bytes of a writable v1 memory hierarchy) whose OOM kill
// [Result.MemoryExceeded] reports; where neither is writable it becomes
// RLIMIT_AS of every process, and an allocation past it fails with ENOMEM.
// [Result.Memory] and [Probe] say which applies.
//
// # Failing closed
//
// Every layer is required: no user namespaces, no Landlock, no seccomp, a
// failed mount or rule all make Start return a *[capability.Error] (layer
// sandbox, see [NewError]) with code SANDBOX_UNAVAILABLE or
// SANDBOX_SETUP_FAILED, and the command never runs.
// The only way around is [Spec.Unsafe], which runs without any sandbox and
// which callers must record in the audit log. [Probe] reports what a host
// supports and which guarantees follow, for `norma sandbox doctor`.
//
// # What it does not protect against
//
// Kernel bugs reachable through the allowed syscalls; reading what the
// grants expose (including other hard links to a denied file that were
// created before the run — a denied file with more than one link is
// refused, but a denied directory's contents may have links elsewhere in a
// grant); CPU exhaustion within the rlimits, and memory use up to
// RLIMIT_AS per process (not per tree) when no memory cgroup is writable;
// covert channels. Deny paths that do not exist when the run starts are
// not hidden if the process creates them. For the files agents and tools
// load as code on the host, Norma's sandboxes over a workspace
// (sandboxpolicy.Derive, used by the shell of `norma run`, `norma hook
// exec` and the plugin host) close that gap with [Spec.Freeze]: the
// directories .claude, .codex, .gemini, .cursor, .vscode, .git/hooks and
// .git/info are read-only, made empty first when missing (never .git
// itself), and so are .git/config, .mcp.json and .envrc where they exist,
// and a .git file (the lists are package agentfiles'); each through its
// symbolic links, which cannot be swapped. A missing .mcp.json or .envrc
// can still be created: freezing it would mean creating it. The gate
// refuses its creation by name, and each is loaded only after a consent
// of its own program (Claude Code's prompt for a project MCP server,
// `direnv allow`). .gitattributes and .gitmodules stay writable: they
// select what .git/config defines. Likewise a workspace that is not a
// git repository can become one (git init writes a new .git/config), and
// a repository made in a subdirectory (git clone, git init sub) is not
// frozen. A pin, a freeze or a mask made for one process does not bind
// processes started before it (each sandbox is built from the paths of
// its own start).
//
// Runner, Start and Run are safe for concurrent use. The filter is written
// for linux/amd64; other platforms fail closed.
package sandbox
