package seccompgen

import (
	"encoding/binary"
	"fmt"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// The seccomp filter is a deny list on top of the other layers. It is
// assembled in two parts:
//
//  1. a hand-written prelude that (a) kills the process for any syscall made
//     through a non-native ABI (the i386 int 0x80 / sysenter path, and x32),
//     because a deny list keyed on x86_64 numbers says nothing about them
//     and go-seccomp-bpf's own arch check falls through to the default
//     action (allow); (b) checks 32-bit arguments on their low 32 bits only,
//     as the kernel does (ioctl request, socket domain and protocol), so
//     that garbage in the upper half cannot slip past an equality test;
//     It also allows personality(2) only for the default persona and the
//     query;
//  2. the named deny list, assembled by go-seccomp-bpf.

const (
	auditArchX8664 = 0xc000003e // AUDIT_ARCH_X86_64
	x32SyscallBit  = 0x40000000

	retKillProcess = uint32(unix.SECCOMP_RET_KILL_PROCESS)
	retErrno       = uint32(unix.SECCOMP_RET_ERRNO)

	offNr   = 0
	offArch = 4
	offArg0 = 16 // low half on little-endian x86_64
	offArg1 = 24
	offArg2 = 32

	ipprotoMPTCP = 262
	tiocsti      = 0x5412
	tioclinux    = 0x541c

	// personality(2) arguments that are allowed: PER_LINUX (the default
	// persona) and the query 0xffffffff, which changes nothing. Every
	// other persona (READ_IMPLIES_EXEC, ADDR_NO_RANDOMIZE, PER_LINUX32, …)
	// weakens the process or reaches legacy kernel paths.
	perLinux         = 0
	personalityQuery = 0xffffffff

	// Namespace flags that clone(2) must not be given.
	cloneNSFlags = unix.CLONE_NEWNS | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC | unix.CLONE_NEWUSER |
		unix.CLONE_NEWPID | unix.CLONE_NEWNET | unix.CLONE_NEWCGROUP
)

// deniedSyscalls fail with EPERM.
var deniedSyscalls = []string{
	"ptrace", "process_vm_readv", "process_vm_writev",
	"io_uring_setup", "io_uring_enter", "io_uring_register",
	"bpf", "perf_event_open", "userfaultfd",
	"keyctl", "add_key", "request_key",
	"mount", "umount2", "pivot_root", "chroot",
	"fsopen", "fsconfig", "fsmount", "fspick", "open_tree", "move_mount", "mount_setattr",
	"unshare", "setns",
	"kexec_load", "kexec_file_load", "reboot",
	"init_module", "finit_module", "delete_module",
	"open_by_handle_at", "name_to_handle_at",
	"acct", "swapon", "swapoff", "syslog", "quotactl", "quotactl_fd",
	"iopl", "ioperm", "uselib", "vhangup",
	"settimeofday", "clock_settime", "clock_adjtime", "adjtimex",
	"lookup_dcookie", "nfsservctl",
	// Legacy calls no plugin, shell or runtime (Go, node, python) makes:
	// modify_ldt (per-process LDT, 16-bit segments: the surface of several
	// kernel bugs), ustat, sysfs, _sysctl, remap_file_pages, and the
	// numbers that were never implemented on x86_64 (ENOSYS anyway; EPERM
	// here so that a kernel that grows them stays closed). vm86 and
	// vm86old exist only in the i386 ABI, which the prelude kills.
	"modify_ldt", "ustat", "sysfs", "_sysctl", "remap_file_pages",
	"create_module", "get_kernel_syms", "query_module",
	"afs_syscall", "tuxcall", "security", "vserver", "getpmsg", "putpmsg",
}

// Program returns the complete filter for the given network mode.
func Program(broker bool) ([]bpf.Instruction, error) {
	domains := []uint32{unix.AF_UNIX}
	if broker {
		domains = append(domains, unix.AF_INET, unix.AF_INET6)
	}
	pre := prelude(domains)

	pol := seccomp.Policy{
		DefaultAction: seccomp.ActionAllow,
		Syscalls: []seccomp.SyscallGroup{
			{Names: deniedSyscalls, Action: seccomp.ActionErrno | seccomp.Action(unix.EPERM)},
			// clone3 passes its flags in memory a filter cannot read:
			// ENOSYS makes libc fall back to clone(2), which is checked.
			{Names: []string{"clone3"}, Action: seccomp.ActionErrno | seccomp.Action(unix.ENOSYS)},
			{
				NamesWithCondtions: []seccomp.NameWithConditions{{
					Name:       "clone",
					Conditions: seccomp.ArgumentConditions{{Argument: 0, Operation: seccomp.BitsSet, Value: cloneNSFlags}},
				}},
				Action: seccomp.ActionErrno | seccomp.Action(unix.EPERM),
			},
		},
	}
	body, err := pol.Assemble()
	if err != nil {
		return nil, fmt.Errorf("assemble seccomp policy: %w", err)
	}
	return append(pre, body...), nil
}

// prelude builds the hand-written head of the filter. Jumps are forward
// only and resolved by label.
func prelude(domains []uint32) []bpf.Instruction {
	type jmp struct {
		cond     bpf.JumpTest
		val      uint32
		tru, fal string // labels; "" means the next instruction
	}
	type item struct {
		ins   bpf.Instruction
		j     *jmp
		label string
	}
	var prog []item
	emit := func(in bpf.Instruction) { prog = append(prog, item{ins: in}) }
	jump := func(cond bpf.JumpTest, val uint32, tru, fal string) {
		prog = append(prog, item{j: &jmp{cond, val, tru, fal}})
	}
	label := func(l string) { prog = append(prog, item{label: l}) }
	ld := func(off uint32) { emit(bpf.LoadAbsolute{Off: off, Size: 4}) }
	ret := func(v uint32) { emit(bpf.RetConstant{Val: v}) }

	ld(offArch)
	jump(bpf.JumpEqual, auditArchX8664, "native", "")
	ret(retKillProcess)
	label("native")
	ld(offNr)
	jump(bpf.JumpGreaterOrEqual, x32SyscallBit, "", "not_x32")
	ret(retKillProcess)
	label("not_x32")

	jump(bpf.JumpEqual, unix.SYS_IOCTL, "", "not_ioctl")
	ld(offArg1)
	jump(bpf.JumpEqual, tiocsti, "eperm", "")
	jump(bpf.JumpEqual, tioclinux, "eperm", "end")
	label("not_ioctl")

	// personality takes an unsigned int: compare the low 32 bits.
	jump(bpf.JumpEqual, unix.SYS_PERSONALITY, "", "not_personality")
	ld(offArg0)
	jump(bpf.JumpEqual, perLinux, "end", "")
	jump(bpf.JumpEqual, personalityQuery, "end", "eperm")
	label("not_personality")

	jump(bpf.JumpEqual, unix.SYS_SOCKET, "", "end")
	ld(offArg0)
	for _, d := range domains {
		jump(bpf.JumpEqual, d, "family_ok", "")
	}
	ret(retErrno | uint32(unix.EAFNOSUPPORT))
	label("family_ok")
	ld(offArg2)
	jump(bpf.JumpEqual, ipprotoMPTCP, "", "end")
	ret(retErrno | uint32(unix.EPROTONOSUPPORT))
	label("eperm")
	ret(retErrno | uint32(unix.EPERM))
	label("end")

	// Resolve labels to instruction indexes.
	pos := map[string]int{}
	n := 0
	for _, it := range prog {
		if it.label != "" {
			pos[it.label] = n
			continue
		}
		n++
	}
	out := make([]bpf.Instruction, 0, n)
	for _, it := range prog {
		switch {
		case it.label != "":
		case it.j != nil:
			here := len(out)
			skip := func(l string) uint8 {
				if l == "" {
					return 0
				}
				return uint8(pos[l] - here - 1)
			}
			out = append(out, bpf.JumpIf{Cond: it.j.cond, Val: it.j.val, SkipTrue: skip(it.j.tru), SkipFalse: skip(it.j.fal)})
		default:
			out = append(out, it.ins)
		}
	}
	return out
}

// sockFilterSize is the size of one struct sock_filter.
const sockFilterSize = 8

// Filter is the filter for the given network mode (broker: the plugin may
// open inet sockets to reach the egress broker) in the kernel's
// sock_filter layout, native byte order.
func Filter(broker bool) ([]byte, error) {
	insts, err := Program(broker)
	if err != nil {
		return nil, err
	}
	raw, err := bpf.Assemble(insts)
	if err != nil {
		return nil, fmt.Errorf("assemble seccomp filter: %w", err)
	}
	out := make([]byte, 0, len(raw)*sockFilterSize)
	for _, r := range raw {
		out = binary.NativeEndian.AppendUint16(out, r.Op)
		out = append(out, r.Jt, r.Jf)
		out = binary.NativeEndian.AppendUint32(out, r.K)
	}
	return out, nil
}
