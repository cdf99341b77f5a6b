package sandbox

import (
	"errors"
	"fmt"
	"sync"

	"golang.org/x/sys/unix"
)

// embeddedInit returns the path under which this process executes the
// embedded slim init, or "" when there is none (the slim init itself, or a
// kernel without sealable memfds), in which case the caller re-executes
// its own binary as before.
//
// The bytes are written once per process into a memfd that is then sealed
// against every change (F_SEAL_WRITE, _SHRINK, _GROW, and F_SEAL_SEAL so
// the seals cannot be lifted): what runs as the init is exactly what this
// binary embeds, and no file on disk can be swapped for it. The fd is
// close-on-exec; execve of /proc/self/fd/N resolves the path before the
// close, in the child that inherited the descriptor.
var embeddedInit = sync.OnceValue(func() string {
	if len(initExe) == 0 {
		return ""
	}
	fd, err := sealedMemfd("norma-sandbox-init", initExe)
	if err != nil {
		return ""
	}
	return fmt.Sprintf("/proc/self/fd/%d", fd)
})

// sealedMemfd returns a close-on-exec memfd holding body, sealed read-only
// for good.
func sealedMemfd(name string, body []byte) (int, error) {
	// MFD_EXEC asks for an executable memfd where vm.memfd_noexec would
	// otherwise make it non-executable (Linux 6.3+); older kernels reject
	// the flag with EINVAL. Where the sysctl forbids executable memfds
	// (EACCES), the caller falls back to re-executing its own binary.
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING|unix.MFD_EXEC)
	if errors.Is(err, unix.EINVAL) {
		fd, err = unix.MemfdCreate(name, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	}
	if err != nil {
		return -1, err
	}
	for b := body; len(b) > 0; {
		n, err := unix.Write(fd, b)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			unix.Close(fd)
			return -1, err
		}
		b = b[n:]
	}
	const seals = unix.F_SEAL_SEAL | unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_WRITE
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, seals); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}
