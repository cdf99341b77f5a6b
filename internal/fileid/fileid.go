// Package fileid names directories by identity (device and inode) rather
// than by path: the one answer, for the file guard and for the sandbox's
// view of the workspace, to "is this Norma's state directory, whatever it
// is called now?".
package fileid

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// ID is a file's identity: its device and inode numbers. Two names with
// the same ID are the same file (a rename, a bind mount, a hard link).
type ID struct{ Dev, Ino uint64 }

// OfStat returns the identity of st.
func OfStat(st *syscall.Stat_t) ID { return ID{Dev: uint64(st.Dev), Ino: st.Ino} }

// Of returns the identity of fi, which must come from os.Stat, os.Lstat or
// a DirEntry's Info on this platform; ok is false otherwise.
func Of(fi fs.FileInfo) (id ID, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return ID{}, false
	}
	return OfStat(st), true
}

// Set is a set of directory identities, recorded once by [Record]. The
// zero value holds none. It is immutable and safe for concurrent use.
type Set struct{ ids map[ID]bool }

// Record returns the identities of the directories dirs, absolute paths
// (symbolic links followed). An empty path or one that does not exist is
// skipped (nothing to protect); a relative path or one that is not a
// directory is an error.
func Record(dirs ...string) (Set, error) {
	s := Set{ids: map[ID]bool{}}
	for _, d := range dirs {
		if d == "" {
			continue
		}
		if !filepath.IsAbs(d) {
			return Set{}, fmt.Errorf("fileid: %q is not an absolute path", d)
		}
		fi, err := os.Stat(d)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return Set{}, fmt.Errorf("fileid: %w", err)
		}
		if !fi.IsDir() {
			return Set{}, fmt.Errorf("fileid: %s is not a directory", d)
		}
		id, ok := Of(fi)
		if !ok {
			return Set{}, fmt.Errorf("fileid: no identity for %s on this platform", d)
		}
		s.ids[id] = true
	}
	return s, nil
}

// Len is the number of directories in s.
func (s Set) Len() int { return len(s.ids) }

// Has reports whether id is one of the directories of s.
func (s Set) Has(id ID) bool { return s.ids[id] }
