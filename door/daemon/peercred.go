package daemon

import "net"

// peerUIDOf runs get on c's descriptor: the platform's call that reads the
// peer's credentials as the kernel recorded them at connect.
func peerUIDOf(c *net.UnixConn, get func(fd int) (uint32, error)) (int, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return -1, err
	}
	var uid uint32
	var gerr error
	if err := raw.Control(func(fd uintptr) { uid, gerr = get(int(fd)) }); err != nil {
		return -1, err
	}
	if gerr != nil {
		return -1, gerr
	}
	return int(uid), nil
}
