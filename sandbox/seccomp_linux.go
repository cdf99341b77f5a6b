//go:build linux && !norma_init

package sandbox

import (
	_ "embed"

	"golang.org/x/sys/unix"
)

// The seccomp filters, assembled by package seccompgen and embedded, so
// that no norma process links the assembler or go-seccomp-bpf, whose
// package initializer builds syscall tables for every architecture at
// each start (issue 20). TestSeccompFiltersCurrent fails when they are not
// what seccompgen assembles now; go test ./sandbox -run
// TestSeccompFiltersCurrent -update rewrites them.
var (
	//go:embed seccomp_isolated.bpf
	isolatedFilter []byte
	//go:embed seccomp_broker.bpf
	brokerFilter []byte
)

// seccompFilter returns the filter for the given network mode in the
// kernel's sock_filter layout. The host sends it in the init's
// configuration; the init only checks and installs it (loadSeccomp).
func seccompFilter(broker bool) ([]byte, error) {
	if broker {
		return brokerFilter, nil
	}
	return isolatedFilter, nil
}

// seccompAvailable reports whether the kernel supports seccomp filters:
// SECCOMP_SET_MODE_STRICT with a flag it must refuse answers EINVAL only
// when the seccomp(2) call exists and is allowed.
func seccompAvailable() bool {
	_, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_STRICT, 1, 0)
	return errno == unix.EINVAL
}
