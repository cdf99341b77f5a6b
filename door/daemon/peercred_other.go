//go:build !linux && !darwin

package daemon

import (
	"errors"
	"net"
)

// peerUID cannot read a peer's credentials on this platform: every
// connection is refused (fail closed) rather than accepted unchecked.
func peerUID(*net.UnixConn) (int, error) {
	return -1, errors.New("daemon: peer credentials are not supported on this platform")
}
