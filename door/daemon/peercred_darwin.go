package daemon

import (
	"net"

	"golang.org/x/sys/unix"
)

// peerUID returns the effective uid of the process at the other end of c,
// as the kernel recorded it at connect (LOCAL_PEERCRED).
func peerUID(c *net.UnixConn) (int, error) {
	return peerUIDOf(c, func(fd int) (uint32, error) {
		cred, err := unix.GetsockoptXucred(fd, unix.SOL_LOCAL, unix.LOCAL_PEERCRED)
		if err != nil {
			return 0, err
		}
		return cred.Uid, nil
	})
}
