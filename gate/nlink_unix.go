//go:build unix

package gate

import (
	"os"
	"syscall"
)

// hardLinked reports whether abs is a regular file with more than one
// name: a write through one name changes what the others show.
func hardLinked(abs string) bool {
	fi, err := os.Lstat(abs)
	if err != nil || !fi.Mode().IsRegular() {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && st.Nlink > 1
}
