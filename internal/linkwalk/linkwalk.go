// Package linkwalk follows a path name as the kernel does when a process
// opens it, and says which symbolic links it passed and where it ended:
// the one answer, for the sandbox and for the derivation of its paths, to
// "which objects does this name reach, and which names would a process
// have to replace to make it reach another?".
package linkwalk

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// maxLinks bounds the symbolic links one walk follows, as the kernel's
// MAXSYMLINKS (40) does.
const maxLinks = 40

// Walk is what [Resolve] found.
type Walk struct {
	// Links are the symbolic links passed on the way, in order, each
	// named by its parent directory (links resolved) and its own name.
	Links []string
	// Final is the path, links resolved, of the object the name leads
	// to; empty when it does not exist.
	Final string
	// Missing is, when Final is empty, the first name on the way that
	// does not exist, under its parent (links resolved): what a process
	// would create to make the name lead somewhere. It is empty when the
	// way is blocked by something that is not a directory.
	Missing string
	// Last reports that Missing is the last name of the way: creating it
	// makes the path lead to it.
	Last bool
}

// Resolve follows the absolute path p component by component, every
// symbolic link included (the last one too) and ".." taken from the
// directory reached, as open(2) would. An error other than a name that
// does not exist or a component that is not a directory (ENOTDIR) is
// returned as is, and so is ELOOP after too many links; p must be
// absolute.
func Resolve(p string) (Walk, error) {
	var w Walk
	if !filepath.IsAbs(p) {
		return w, &fs.PathError{Op: "linkwalk", Path: p, Err: errors.New("not absolute")}
	}
	todo := strings.Split(filepath.ToSlash(p), "/")
	cur := "/"
	hops := 0
	for len(todo) > 0 {
		c := todo[0]
		todo = todo[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, c)
		fi, err := os.Lstat(next)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			w.Missing, w.Last = next, !hasName(todo)
			return w, nil
		case errors.Is(err, syscall.ENOTDIR):
			return w, nil
		case err != nil:
			return w, err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			if len(todo) > 0 && !fi.IsDir() && hasName(todo) {
				return w, nil // a file in the middle: nothing lies beyond it
			}
			cur = next
			continue
		}
		if hops++; hops > maxLinks {
			return w, &fs.PathError{Op: "linkwalk", Path: p, Err: syscall.ELOOP}
		}
		w.Links = append(w.Links, next)
		t, err := os.Readlink(next)
		if err != nil {
			return w, err
		}
		if filepath.IsAbs(t) {
			cur = "/"
		}
		todo = append(strings.Split(filepath.ToSlash(t), "/"), todo...)
	}
	w.Final = cur
	return w, nil
}

// hasName reports whether components hold a name other than "" and ".".
func hasName(components []string) bool {
	for _, c := range components {
		if c != "" && c != "." {
			return true
		}
	}
	return false
}
