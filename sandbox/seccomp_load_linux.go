package sandbox

import (
	"encoding/binary"
	"errors"
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// sockFilterSize is the size of one struct sock_filter.
const sockFilterSize = 8

// bpfMaxInsns is the kernel's limit on a classic BPF program (BPF_MAXINSNS).
const bpfMaxInsns = 4096

// loadSeccomp installs the filter the host assembled (see seccompFilter) on
// the calling thread. no_new_privs must already be set. An empty or
// malformed filter is refused: the init never runs the target without one.
func loadSeccomp(raw []byte) error {
	if len(raw) == 0 {
		return errors.New("no seccomp filter in the configuration")
	}
	if len(raw)%sockFilterSize != 0 || len(raw)/sockFilterSize > bpfMaxInsns {
		return fmt.Errorf("malformed seccomp filter (%d bytes)", len(raw))
	}
	filter := make([]unix.SockFilter, len(raw)/sockFilterSize)
	for i := range filter {
		b := raw[i*sockFilterSize:]
		filter[i] = unix.SockFilter{Code: binary.NativeEndian.Uint16(b), Jt: b[2], Jf: b[3], K: binary.NativeEndian.Uint32(b[4:])}
	}
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	if _, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(&prog))); e != 0 {
		return fmt.Errorf("seccomp(SET_MODE_FILTER): %w", e)
	}
	return nil
}
