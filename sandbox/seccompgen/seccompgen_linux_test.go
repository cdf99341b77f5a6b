//go:build linux

package seccompgen

import (
	"encoding/binary"
	"testing"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// seccompData encodes struct seccomp_data for the x/net/bpf VM, which
// loads 32-bit words big-endian; the kernel loads them native-endian, so
// each word is stored big-endian here to read back the same value.
func seccompData(arch, nr uint32, args ...uint64) []byte {
	b := make([]byte, 64)
	binary.BigEndian.PutUint32(b[0:], nr)
	binary.BigEndian.PutUint32(b[4:], arch)
	for i, a := range args {
		off := 16 + 8*i
		binary.BigEndian.PutUint32(b[off:], uint32(a))       // low half first (x86_64)
		binary.BigEndian.PutUint32(b[off+4:], uint32(a>>32)) // then the high half
	}
	return b
}

// Persona flags of personality(2) (linux/personality.h).
const (
	addrNoRandomize = 0x0040000
	readImpliesExec = 0x0400000
)

func TestSeccompFilter(t *testing.T) {
	const i386 = 0x40000003 // AUDIT_ARCH_I386
	allow := uint32(unix.SECCOMP_RET_ALLOW)
	eperm := retErrno | uint32(unix.EPERM)
	tests := []struct {
		name   string
		broker bool
		data   []byte
		want   uint32
	}{
		{"read allowed", false, seccompData(auditArchX8664, unix.SYS_READ), allow},
		{"i386 socket killed", false, seccompData(i386, 359, unix.AF_INET, unix.SOCK_STREAM), retKillProcess},
		{"i386 read killed too", false, seccompData(i386, 3), retKillProcess},
		{"x32 killed", false, seccompData(auditArchX8664, x32SyscallBit|unix.SYS_SOCKET), retKillProcess},
		{"ptrace", false, seccompData(auditArchX8664, unix.SYS_PTRACE), eperm},
		{"io_uring_setup", false, seccompData(auditArchX8664, unix.SYS_IO_URING_SETUP), eperm},
		{"bpf", false, seccompData(auditArchX8664, unix.SYS_BPF), eperm},
		{"mount", false, seccompData(auditArchX8664, unix.SYS_MOUNT), eperm},
		{"unshare", false, seccompData(auditArchX8664, unix.SYS_UNSHARE), eperm},
		{"kexec_load", false, seccompData(auditArchX8664, unix.SYS_KEXEC_LOAD), eperm},
		{"finit_module", false, seccompData(auditArchX8664, unix.SYS_FINIT_MODULE), eperm},
		{"keyctl", false, seccompData(auditArchX8664, unix.SYS_KEYCTL), eperm},
		{"open_by_handle_at", false, seccompData(auditArchX8664, unix.SYS_OPEN_BY_HANDLE_AT), eperm},
		{"modify_ldt", false, seccompData(auditArchX8664, unix.SYS_MODIFY_LDT, 0), eperm},
		{"ustat", false, seccompData(auditArchX8664, unix.SYS_USTAT), eperm},
		{"sysfs", false, seccompData(auditArchX8664, unix.SYS_SYSFS, 3), eperm},
		{"_sysctl", false, seccompData(auditArchX8664, unix.SYS__SYSCTL), eperm},
		{"uselib", false, seccompData(auditArchX8664, unix.SYS_USELIB), eperm},
		{"iopl", false, seccompData(auditArchX8664, unix.SYS_IOPL, 3), eperm},
		{"ioperm", false, seccompData(auditArchX8664, unix.SYS_IOPERM), eperm},
		{"remap_file_pages", false, seccompData(auditArchX8664, unix.SYS_REMAP_FILE_PAGES), eperm},
		{"create_module", false, seccompData(auditArchX8664, unix.SYS_CREATE_MODULE), eperm},
		{"acct", false, seccompData(auditArchX8664, unix.SYS_ACCT), eperm},
		{"lookup_dcookie", false, seccompData(auditArchX8664, unix.SYS_LOOKUP_DCOOKIE), eperm},
		{"perf_event_open", false, seccompData(auditArchX8664, unix.SYS_PERF_EVENT_OPEN), eperm},
		{"userfaultfd", false, seccompData(auditArchX8664, unix.SYS_USERFAULTFD), eperm},
		{"personality PER_LINUX allowed", false, seccompData(auditArchX8664, unix.SYS_PERSONALITY, 0), allow},
		{"personality query allowed", false, seccompData(auditArchX8664, unix.SYS_PERSONALITY, 0xffffffff), allow},
		{"personality query in 64 bits allowed", false, seccompData(auditArchX8664, unix.SYS_PERSONALITY, 0xffffffffffffffff), allow},
		{"personality ADDR_NO_RANDOMIZE", false, seccompData(auditArchX8664, unix.SYS_PERSONALITY, addrNoRandomize), eperm},
		{"personality READ_IMPLIES_EXEC", false, seccompData(auditArchX8664, unix.SYS_PERSONALITY, readImpliesExec), eperm},
		{"personality PER_LINUX32", false, seccompData(auditArchX8664, unix.SYS_PERSONALITY, 0x0008), eperm},
		{"personality high bits over a denied persona", false, seccompData(auditArchX8664, unix.SYS_PERSONALITY, 1<<40|addrNoRandomize), eperm},
		{"clone3 ENOSYS", false, seccompData(auditArchX8664, unix.SYS_CLONE3), retErrno | uint32(unix.ENOSYS)},
		{"clone thread allowed", false, seccompData(auditArchX8664, unix.SYS_CLONE, unix.CLONE_VM|unix.CLONE_THREAD), allow},
		{"clone newuser", false, seccompData(auditArchX8664, unix.SYS_CLONE, unix.CLONE_NEWUSER), eperm},
		{"clone newnet", false, seccompData(auditArchX8664, unix.SYS_CLONE, unix.CLONE_NEWNET|uint64(unix.SIGCHLD)), eperm},
		{"ioctl TIOCSTI", false, seccompData(auditArchX8664, unix.SYS_IOCTL, 0, tiocsti), eperm},
		{"ioctl TIOCSTI high bits", false, seccompData(auditArchX8664, unix.SYS_IOCTL, 0, 0xdead00000000|tiocsti), eperm},
		{"ioctl TIOCLINUX", false, seccompData(auditArchX8664, unix.SYS_IOCTL, 0, tioclinux), eperm},
		{"ioctl TCGETS allowed", false, seccompData(auditArchX8664, unix.SYS_IOCTL, 0, unix.TCGETS), allow},
		{"socket unix", false, seccompData(auditArchX8664, unix.SYS_SOCKET, unix.AF_UNIX, unix.SOCK_STREAM), allow},
		{"socket inet (none)", false, seccompData(auditArchX8664, unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_STREAM), retErrno | uint32(unix.EAFNOSUPPORT)},
		{"socket inet high bits (none)", false, seccompData(auditArchX8664, unix.SYS_SOCKET, 1<<40|unix.AF_INET, unix.SOCK_STREAM), retErrno | uint32(unix.EAFNOSUPPORT)},
		{"socket netlink (none)", false, seccompData(auditArchX8664, unix.SYS_SOCKET, unix.AF_NETLINK, unix.SOCK_RAW), retErrno | uint32(unix.EAFNOSUPPORT)},
		{"socket packet (broker)", true, seccompData(auditArchX8664, unix.SYS_SOCKET, unix.AF_PACKET, unix.SOCK_RAW), retErrno | uint32(unix.EAFNOSUPPORT)},
		{"socket inet (broker)", true, seccompData(auditArchX8664, unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_STREAM), allow},
		{"socket inet6 (broker)", true, seccompData(auditArchX8664, unix.SYS_SOCKET, unix.AF_INET6, unix.SOCK_STREAM), allow},
		{"socket mptcp (broker)", true, seccompData(auditArchX8664, unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_STREAM, ipprotoMPTCP), retErrno | uint32(unix.EPROTONOSUPPORT)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prog, err := Program(tt.broker)
			if err != nil {
				t.Fatal(err)
			}
			vm, err := bpf.NewVM(prog)
			if err != nil {
				t.Fatalf("NewVM: %v", err)
			}
			got, err := vm.Run(tt.data)
			if err != nil {
				t.Fatal(err)
			}
			if uint32(got) != tt.want {
				t.Fatalf("filter(%s) = %#x, want %#x", tt.name, uint32(got), tt.want)
			}
		})
	}
}
