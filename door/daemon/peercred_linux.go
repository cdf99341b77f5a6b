package daemon

import (
	"net"

	"golang.org/x/sys/unix"
)

// peerUID returns the uid of the process at the other end of c, as the
// kernel recorded it at connect (SO_PEERCRED): the peer cannot forge it.
func peerUID(c *net.UnixConn) (int, error) {
	return peerUIDOf(c, func(fd int) (uint32, error) {
		cred, err := unix.GetsockoptUcred(fd, unix.SOL_SOCKET, unix.SO_PEERCRED)
		if err != nil {
			return 0, err
		}
		return cred.Uid, nil
	})
}
