package daemon

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// ErrRunning is returned by [ListenUnix] when another daemon serves (or is
// starting on) the socket.
var ErrRunning = errors.New("daemon: another norma serve is running on this socket")

// UnixListener is a Unix socket listener that accepts only peers of this
// process's uid. Close removes the socket and releases the lock.
type UnixListener struct {
	*net.UnixListener
	path   string
	lock   *os.File
	refuse func(uid int)
}

// ListenUnix listens on the Unix socket path, mode 0600. It first takes
// path+".lock" (flock, held until Close), so two daemons never race for
// the socket; then a socket left at path by a daemon that died is removed
// and replaced, a socket something still answers on is refused with
// [ErrRunning], and a path that is not a socket is refused, never removed.
// refuse, when not nil, is told the uid of every peer refused.
func ListenUnix(path string, refuse func(uid int)) (*UnixListener, error) {
	lock, err := os.OpenFile(path+".lock", os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("daemon: the socket's lock: %w", err)
	}
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		lock.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w (%s is locked)", ErrRunning, path+".lock")
		}
		return nil, fmt.Errorf("daemon: locking %s: %w", path+".lock", err)
	}
	ln, err := listenUnixLocked(path)
	if err != nil {
		lock.Close()
		return nil, err
	}
	return &UnixListener{UnixListener: ln, path: path, lock: lock, refuse: refuse}, nil
}

// listenUnixLocked replaces a stale socket at path and listens; the caller
// holds the lock.
func listenUnixLocked(path string) (*net.UnixListener, error) {
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("daemon: %w", err)
	case fi.Mode().Type() != fs.ModeSocket:
		return nil, fmt.Errorf("daemon: %s exists and is not a socket; not replacing it", path)
	default:
		c, err := net.DialTimeout("unix", path, 500*time.Millisecond)
		if err == nil {
			c.Close()
			return nil, fmt.Errorf("%w (something answers on %s)", ErrRunning, path)
		}
		if !errors.Is(err, syscall.ECONNREFUSED) {
			return nil, fmt.Errorf("daemon: probing the socket %s: %w", path, err)
		}
		// Nobody listens: the socket of a daemon that died. The lock is
		// ours, so no other daemon can be binding it now.
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("daemon: removing the stale socket: %w", err)
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("daemon: %w", err)
	}
	// The socket is created 0600 (bind applies the umask): there is no
	// moment when another user could connect. The peer check would refuse
	// them anyway.
	old := syscall.Umask(0o177)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	syscall.Umask(old)
	if err != nil {
		return nil, fmt.Errorf("daemon: %w", err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("daemon: %w", err)
	}
	return ln, nil
}

// Accept returns the next connection of a peer with this process's uid;
// a connection of any other peer, or one whose credentials cannot be
// read, is closed before a byte is read from it.
func (l *UnixListener) Accept() (net.Conn, error) {
	for {
		c, err := l.AcceptUnix()
		if err != nil {
			return nil, err
		}
		uid, err := peerUID(c)
		if err == nil && uid == os.Getuid() {
			return c, nil
		}
		c.Close()
		if l.refuse != nil {
			l.refuse(uid)
		}
	}
}

// Close stops listening, removes the socket and releases the lock.
func (l *UnixListener) Close() error {
	err := l.UnixListener.Close() // unlinks the socket it created
	l.lock.Close()
	return err
}

// Path is the socket's path.
func (l *UnixListener) Path() string { return l.path }

// ListenLoopback listens on TCP addr, which must be a loopback IP address
// and a port ("127.0.0.1:8787", "[::1]:0"); any other address is refused,
// a host name included (it could resolve elsewhere).
func ListenLoopback(addr string) (net.Listener, error) {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return nil, fmt.Errorf("daemon: --http %q: want a loopback address and port such as 127.0.0.1:8787", addr)
	}
	if !ap.Addr().Unmap().IsLoopback() {
		return nil, fmt.Errorf("daemon: --http %s is not a loopback address; norma serve listens on loopback only", addr)
	}
	return net.Listen("tcp", ap.String())
}
