//go:build !unix

package gate

import "os"

// hardLinked cannot tell the link count here: every existing regular
// file counts as linked (fail closed).
func hardLinked(abs string) bool {
	fi, err := os.Lstat(abs)
	return err == nil && fi.Mode().IsRegular()
}
