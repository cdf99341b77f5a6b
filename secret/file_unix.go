//go:build unix

package secret

import (
	"io/fs"
	"os"
	"syscall"
)

const nofollow = syscall.O_NOFOLLOW

func ownedByCurrentUser(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Geteuid()
}

// lockFile takes an exclusive advisory lock on f (flock), blocking.
func lockFile(f *os.File) error { return syscall.Flock(int(f.Fd()), syscall.LOCK_EX) }

func unlockFile(f *os.File) error { return syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }
