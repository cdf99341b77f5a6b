//go:build linux

package fsguard

import (
	"context"
	"encoding/binary"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/internal/fileid"
)

// resolveFlags make the kernel refuse, at use time, any ".." above the
// directory descriptor and any symbolic link, magic or not, on the way.
const resolveFlags = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS

// maxRenameEntries bounds the entries checked when renaming a directory.
const maxRenameEntries = 100_000

// openat2 opens p beneath dirfd without following any symbolic link. It
// retries EINTR, and EAGAIN, which RESOLVE_BENEATH returns when a rename
// raced with the lookup.
func openat2(dirfd int, p string, flags int, mode uint32) (int, error) {
	how := unix.OpenHow{Flags: uint64(flags | unix.O_CLOEXEC), Mode: uint64(mode), Resolve: resolveFlags}
	for range 64 {
		fd, err := unix.Openat2(dirfd, p, &how)
		if err == unix.EINTR || err == unix.EAGAIN {
			continue
		}
		return fd, err
	}
	return -1, unix.EAGAIN
}

// useErr translates the errors openat2 gives on the canonical path. The
// canonical path has no symbolic link and no "..", so ELOOP or EXDEV mean
// that the tree changed after the policy check.
func useErr(err error) error {
	if err == unix.ELOOP || err == unix.EXDEV {
		return escape("the path changed after the policy check (a symbolic link appeared)")
	}
	return err
}

func (f *FS) initSys() error {
	fd, err := openat2(f.dirfd, ".", unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		if err == unix.ENOSYS || err == unix.EPERM {
			return fmt.Errorf("%w: openat2: %v", ErrUnsupportedPlatform, err)
		}
		return fmt.Errorf("fsguard: New: openat2: %w", err)
	}
	unix.Close(fd)
	return nil
}

// splitPath splits a canonical path into its parent ("." at the top) and
// its last component.
func splitPath(p string) (dir, base string) {
	i := strings.LastIndexByte(p, '/')
	if i < 0 {
		return ".", p
	}
	return p[:i], p[i+1:]
}

// join appends a component to a canonical path.
func join(dir, name string) string {
	if dir == "." {
		return name
	}
	return dir + "/" + name
}

// resolve turns a lexically clean relative path into the canonical path.
func (f *FS) resolve(rel string, follow bool) (string, error) {
	// Fast path: when the kernel finds no symbolic link on the way, rel is
	// already canonical.
	flags := unix.O_PATH
	if !follow {
		flags |= unix.O_NOFOLLOW
	}
	fd, err := openat2(f.dirfd, rel, flags, 0)
	if err == nil {
		unix.Close(fd)
		return rel, nil
	}
	if err == unix.ENOENT && rel != "." {
		// Only the last component may be missing; a missing name is no link.
		dir, _ := splitPath(rel)
		if fd, err := openat2(f.dirfd, dir, unix.O_PATH|unix.O_DIRECTORY, 0); err == nil {
			unix.Close(fd)
			return rel, nil
		}
	}
	return f.resolveSlow(rel, follow)
}

// resolveSlow walks rel one component at a time, expanding symbolic links
// (their targets are interpreted relative to the link's canonical directory,
// ".." in them pops a canonical component, so the walk is exact).
func (f *FS) resolveSlow(rel string, follow bool) (string, error) {
	stack := make([]string, 0, 8)
	pending := strings.Split(rel, "/")
	links := 0
	missing := false
	var buf []byte
	for len(pending) > 0 {
		c := pending[0]
		pending = pending[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if len(stack) == 0 {
				return "", escape("a symbolic link leads outside the workspace")
			}
			stack = stack[:len(stack)-1]
			continue
		}
		stack = append(stack, c)
		if missing || (len(pending) == 0 && !follow) {
			continue
		}
		if buf == nil {
			buf = make([]byte, unix.PathMax)
		}
		target, isLink, err := f.readlink(strings.Join(stack, "/"), buf)
		switch {
		case err == unix.ENOENT || err == unix.ENOTDIR:
			// Everything from here on does not exist (yet); the operation
			// will create it or fail.
			missing = true
			continue
		case err != nil:
			return "", err
		case !isLink:
			continue
		}
		links++
		if links > maxSymlinks {
			return "", unix.ELOOP
		}
		if target == "" {
			return "", unix.ENOENT
		}
		if target[0] == '/' {
			return "", escape("a symbolic link has an absolute target")
		}
		stack = stack[:len(stack)-1]
		pending = append(strings.Split(target, "/"), pending...)
	}
	if len(stack) == 0 {
		return ".", nil
	}
	return strings.Join(stack, "/"), nil
}

// readlink reports whether the canonical-so-far path p is a symbolic link,
// and its target. Every component before the last was checked not to be a
// link, so the kernel walk is beneath the root and link-free.
func (f *FS) readlink(p string, buf []byte) (string, bool, error) {
	fd, err := openat2(f.dirfd, p, unix.O_PATH|unix.O_NOFOLLOW, 0)
	if err != nil {
		if err == unix.ENOENT || err == unix.ENOTDIR {
			return "", false, err
		}
		return "", false, useErr(err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return "", false, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFLNK {
		return "", false, nil
	}
	n, err := unix.Readlinkat(fd, "", buf)
	if err != nil {
		return "", false, err
	}
	if n >= len(buf) {
		return "", false, unix.ENAMETOOLONG
	}
	return string(buf[:n]), true, nil
}

func denied(reason capability.Reason, kind capability.Kind, p, detail string) *capability.Error {
	return capability.Denied(reason, capability.Request{Kind: kind, Path: p}.String(), detail)
}

// regularOnly refuses anything but a regular file with one link.
func regularOnly(st *unix.Stat_t, kind capability.Kind, p string) error {
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		if st.Nlink > 1 {
			return denied(capability.ReasonHardlinkRefused, kind, p, "the file has "+strconv.FormatUint(uint64(st.Nlink), 10)+" hard links")
		}
		return nil
	case unix.S_IFDIR:
		return unix.EISDIR
	case unix.S_IFLNK:
		return useErr(unix.ELOOP)
	}
	return denied(capability.ReasonSpecialFileRefused, kind, p, "not a regular file")
}

func (f *FS) sysOpen(p string, flag int, perm fs.FileMode) (*os.File, error) {
	kind := capability.FSRead
	if flag&writeFlags != 0 {
		kind = capability.FSWrite
	}
	// O_TRUNC is applied after the hard-link check; O_NONBLOCK keeps a FIFO
	// from blocking the open and is cleared again below.
	oflags := flag&^os.O_TRUNC | unix.O_NOFOLLOW | unix.O_NONBLOCK
	var mode uint32
	if flag&os.O_CREATE != 0 {
		mode = uint32(perm.Perm())
	}
	fd, err := openat2(f.dirfd, p, oflags, mode)
	if err != nil {
		return nil, useErr(err)
	}
	fail := func(err error) (*os.File, error) {
		unix.Close(fd)
		if flag&(os.O_CREATE|os.O_EXCL) == os.O_CREATE|os.O_EXCL {
			f.sysRemove(p) // we created it
		}
		return nil, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fail(err)
	}
	if err := regularOnly(&st, kind, p); err != nil {
		return fail(err)
	}
	if flag&os.O_TRUNC != 0 && st.Size != 0 {
		if err := unix.Ftruncate(fd, 0); err != nil {
			return fail(err)
		}
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFL, flag&os.O_APPEND); err != nil {
		return fail(err)
	}
	return os.NewFile(uintptr(fd), p), nil
}

func (f *FS) sysReadFile(p string) ([]byte, string, error) {
	fd, err, _ := f.sysOpenNoLinks(p)
	if err != nil {
		return nil, "open", useErr(err)
	}
	return readFD(fd, p)
}

// sysOpenNoLinks opens p for reading with every symbolic link refused by
// the kernel; link reports that the open failed because a component of p is
// one (ELOOP/EXDEV under RESOLVE_NO_SYMLINKS|RESOLVE_BENEATH). The error is
// the raw errno. ReadFile's fast path uses it to learn, before any policy
// decision, whether the clean name is already the canonical path.
func (f *FS) sysOpenNoLinks(p string) (fd int, err error, link bool) {
	fd, err = openat2(f.dirfd, p, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		return -1, err, err == unix.ELOOP || err == unix.EXDEV
	}
	return fd, nil, false
}

// readFD reads the regular file open on fd, and closes fd.
func readFD(fd int, p string) ([]byte, string, error) {
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, "open", err
	}
	if err := regularOnly(&st, capability.FSRead, p); err != nil {
		return nil, "open", err
	}
	// As os.ReadFile: one more byte than the size, to see EOF without a
	// second allocation.
	size := 512
	if s := st.Size + 1; s > int64(size) && int64(int(s)) == s {
		size = int(s)
	}
	data := make([]byte, 0, size)
	for {
		n, err := unix.Read(fd, data[len(data):cap(data)])
		if err == unix.EINTR || err == unix.EAGAIN {
			continue
		}
		if err != nil {
			return nil, "read", err
		}
		if n == 0 {
			return data, "", nil
		}
		data = data[:len(data)+n]
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)]
		}
	}
}

func (f *FS) sysWriteFile(ctx context.Context, p string, data []byte, perm fs.FileMode) error {
	if p == "." {
		return unix.EISDIR
	}
	dir, base := splitPath(p)
	dfd, err := openat2(f.dirfd, dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return useErr(err)
	}
	defer unix.Close(dfd)
	var st unix.Stat_t
	if err := unix.Fstatat(dfd, base, &st, unix.AT_SYMLINK_NOFOLLOW); err == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR {
		return unix.EISDIR
	}
	prefix := base
	if len(prefix) > 200 {
		prefix = prefix[:200]
	}
	var tmp string
	var tfd int
	for range 16 {
		tmp = "." + prefix + "." + strconv.FormatUint(rand.Uint64(), 36) + ".tmp"
		tfd, err = openat2(dfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW, uint32(perm.Perm()))
		if err != unix.EEXIST {
			break
		}
	}
	if err != nil {
		return useErr(err)
	}
	done := false
	defer func() {
		if !done {
			unix.Unlinkat(dfd, tmp, 0)
		}
	}()
	werr := writeAll(tfd, data)
	if werr == nil {
		werr = unix.Fsync(tfd)
	}
	if cerr := unix.Close(tfd); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return werr
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := unix.Renameat(dfd, tmp, dfd, base); err != nil {
		return err
	}
	done = true
	unix.Fsync(dfd) // best effort: the rename is done either way
	return nil
}

func writeAll(fd int, data []byte) error {
	for len(data) > 0 {
		n, err := unix.Write(fd, data)
		if err == unix.EINTR || err == unix.EAGAIN {
			continue
		}
		if err != nil {
			return err
		}
		data = data[n:]
	}
	return nil
}

func (f *FS) sysMkdirAll(ctx context.Context, p string, perm fs.FileMode) error {
	if f.protected.Len() > 0 {
		// Existing directories are not checked, but one that is (or lies
		// in) a protected directory is refused: even its existence is
		// not told.
		if err := f.reach(capability.FSWrite, p); err != nil {
			return err
		}
	}
	if p == "." {
		return nil
	}
	comps := strings.Split(p, "/")
	// Find the longest prefix that exists.
	have := len(comps)
	for ; have > 0; have-- {
		fd, err := openat2(f.dirfd, strings.Join(comps[:have], "/"), unix.O_PATH|unix.O_NOFOLLOW, 0)
		if err == unix.ENOENT {
			continue
		}
		if err != nil {
			return useErr(err)
		}
		var st unix.Stat_t
		err = unix.Fstat(fd, &st)
		unix.Close(fd)
		if err != nil {
			return err
		}
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			return unix.ENOTDIR
		}
		break
	}
	// Check every directory to create before creating the first.
	for i := have + 1; i <= len(comps); i++ {
		if err := f.check(ctx, capability.FSWrite, strings.Join(comps[:i], "/")); err != nil {
			return err
		}
	}
	for i := have + 1; i <= len(comps); i++ {
		parent := "."
		if i > 1 {
			parent = strings.Join(comps[:i-1], "/")
		}
		dfd, err := openat2(f.dirfd, parent, unix.O_PATH|unix.O_DIRECTORY, 0)
		if err != nil {
			return useErr(err)
		}
		err = unix.Mkdirat(dfd, comps[i-1], uint32(perm.Perm()))
		if err == unix.EEXIST {
			// Created concurrently: fine if it is a directory.
			var st unix.Stat_t
			if serr := unix.Fstatat(dfd, comps[i-1], &st, unix.AT_SYMLINK_NOFOLLOW); serr == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR {
				err = nil
			}
		}
		unix.Close(dfd)
		if err != nil {
			return err
		}
	}
	return nil
}

func (f *FS) sysRemove(p string) error {
	if p == "." {
		return capability.Denied(capability.ReasonInvalidRequest, "fs.write workspace://.", "the workspace root cannot be removed")
	}
	dir, base := splitPath(p)
	dfd, err := openat2(f.dirfd, dir, unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		return useErr(err)
	}
	defer unix.Close(dfd)
	err = unix.Unlinkat(dfd, base, 0)
	if err == nil {
		return nil
	}
	if err1 := unix.Unlinkat(dfd, base, unix.AT_REMOVEDIR); err1 == nil {
		return nil
	} else if err1 != unix.ENOTDIR {
		err = err1
	}
	return err
}

func (f *FS) sysRename(ctx context.Context, oldp, newp string) error {
	if oldp == "." || newp == "." {
		return capability.Denied(capability.ReasonInvalidRequest, "fs.write workspace://.", "the workspace root cannot be renamed")
	}
	odir, obase := splitPath(oldp)
	ndir, nbase := splitPath(newp)
	ofd, err := openat2(f.dirfd, odir, unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		return useErr(err)
	}
	defer unix.Close(ofd)
	nfd, err := openat2(f.dirfd, ndir, unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		return useErr(err)
	}
	defer unix.Close(nfd)
	var st unix.Stat_t
	if err := unix.Fstatat(ofd, obase, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		// Moving a directory moves everything below it: each entry is a
		// write under its old and its new name.
		dfd, err := openat2(ofd, obase, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
		if err != nil {
			return useErr(err)
		}
		n := 0
		err = f.checkTree(ctx, dfd, oldp, newp, &n, make([]byte, 32<<10))
		unix.Close(dfd)
		if err != nil {
			return err
		}
	}
	return unix.Renameat(ofd, obase, nfd, nbase)
}

// isProtected reports whether the entry name of the directory open at fd
// (or, with fd the workspace's, the canonical path name) is a protected
// directory. A name that does not exist is not.
func (f *FS) isProtected(fd int, name string) bool {
	var st unix.Stat_t
	if unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return false
	}
	return f.protected.Has(fileid.ID{Dev: st.Dev, Ino: st.Ino})
}

// reach refuses the canonical path p when it or a directory on the way to
// it is protected. p has no symbolic link, so each prefix names exactly
// the directory the operation will pass through.
func (f *FS) reach(kind capability.Kind, p string) error {
	if f.isProtected(f.dirfd, ".") {
		return protectedErr(kind, p)
	}
	if p == "." {
		return nil
	}
	for i := 0; ; {
		j := strings.IndexByte(p[i:], '/')
		q := p
		if j >= 0 {
			q = p[:i+j]
		}
		if f.isProtected(f.dirfd, q) {
			return protectedErr(kind, p)
		}
		if j < 0 {
			return nil
		}
		i += j + 1
	}
}

// checkEntry is check for the entry name of the directory open at fd,
// whose canonical path is p: the directories above it were checked on the
// way down, so only the entry itself is looked at.
func (f *FS) checkEntry(ctx context.Context, kind capability.Kind, fd int, name, p string, typ fs.FileMode) error {
	if err := f.decide(ctx, kind, p); err != nil {
		return err
	}
	if f.protected.Len() > 0 && typ.IsDir() && f.isProtected(fd, name) {
		return protectedErr(kind, p)
	}
	return nil
}

func (f *FS) checkTree(ctx context.Context, fd int, oldp, newp string, n *int, buf []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	ents, err := readEntries(fd, buf)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if *n++; *n > maxRenameEntries {
			return denied(capability.ReasonInvalidRequest, capability.FSWrite, oldp, "directory too large to rename through the guard")
		}
		o, nw := oldp+"/"+e.name, newp+"/"+e.name
		if err := f.checkEntry(ctx, capability.FSWrite, fd, e.name, o, e.typ); err != nil {
			return err
		}
		if err := f.decide(ctx, capability.FSWrite, nw); err != nil {
			return err
		}
		if e.typ.IsDir() {
			cfd, err := openat2(fd, e.name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
			if err != nil {
				return useErr(err)
			}
			err = f.checkTree(ctx, cfd, o, nw, n, buf)
			unix.Close(cfd)
			if err != nil {
				return err
			}
		}
	}
	return nil
}

func (f *FS) sysLstat(p string) (fs.FileInfo, error) {
	fd, err := openat2(f.dirfd, p, unix.O_PATH|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil, useErr(err)
	}
	defer unix.Close(fd)
	fi := &fileInfo{}
	if err := syscall.Fstat(fd, &fi.sys); err != nil {
		return nil, err
	}
	_, fi.name = splitPath(p)
	return fi, nil
}

// fileInfo is the fs.FileInfo of the guard; Sys returns *syscall.Stat_t, as
// os does.
type fileInfo struct {
	name string
	sys  syscall.Stat_t
}

func (fi *fileInfo) Name() string       { return fi.name }
func (fi *fileInfo) Size() int64        { return fi.sys.Size }
func (fi *fileInfo) Mode() fs.FileMode  { return statMode(fi.sys.Mode) }
func (fi *fileInfo) ModTime() time.Time { return time.Unix(fi.sys.Mtim.Unix()) }
func (fi *fileInfo) IsDir() bool        { return fi.Mode().IsDir() }
func (fi *fileInfo) Sys() any           { return &fi.sys }

func statMode(m uint32) fs.FileMode {
	mode := fs.FileMode(m & 0o777)
	switch m & unix.S_IFMT {
	case unix.S_IFBLK:
		mode |= fs.ModeDevice
	case unix.S_IFCHR:
		mode |= fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFDIR:
		mode |= fs.ModeDir
	case unix.S_IFIFO:
		mode |= fs.ModeNamedPipe
	case unix.S_IFLNK:
		mode |= fs.ModeSymlink
	case unix.S_IFSOCK:
		mode |= fs.ModeSocket
	}
	if m&unix.S_ISGID != 0 {
		mode |= fs.ModeSetgid
	}
	if m&unix.S_ISUID != 0 {
		mode |= fs.ModeSetuid
	}
	if m&unix.S_ISVTX != 0 {
		mode |= fs.ModeSticky
	}
	return mode
}

// rawEntry is one directory entry as getdents64 reports it.
type rawEntry struct {
	name string
	typ  fs.FileMode
}

// readEntries reads every entry of the directory open at fd, sorted by
// name. It parses getdents64 itself: an *os.File would stat entries of
// unknown type through a path relative to the working directory.
func readEntries(fd int, buf []byte) ([]rawEntry, error) {
	var ents []rawEntry
	for {
		n, err := unix.Getdents(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		if n <= 0 {
			break
		}
		for off := 0; off < n; {
			// struct linux_dirent64 { u64 ino; s64 off; u16 reclen; u8 type; char name[]; }
			if off+19 > n {
				return nil, unix.EIO
			}
			reclen := int(binary.NativeEndian.Uint16(buf[off+16:]))
			if reclen < 19 || off+reclen > n {
				return nil, unix.EIO
			}
			rec := buf[off : off+reclen]
			off += reclen
			if binary.NativeEndian.Uint64(rec) == 0 {
				continue
			}
			nb := rec[19:]
			if i := slices.Index(nb, 0); i >= 0 {
				nb = nb[:i]
			}
			if len(nb) == 0 || string(nb) == "." || string(nb) == ".." {
				continue
			}
			name := string(nb)
			var typ fs.FileMode
			switch rec[18] {
			case unix.DT_REG:
			case unix.DT_DIR:
				typ = fs.ModeDir
			case unix.DT_LNK:
				typ = fs.ModeSymlink
			case unix.DT_FIFO:
				typ = fs.ModeNamedPipe
			case unix.DT_SOCK:
				typ = fs.ModeSocket
			case unix.DT_CHR:
				typ = fs.ModeDevice | fs.ModeCharDevice
			case unix.DT_BLK:
				typ = fs.ModeDevice
			default:
				var st unix.Stat_t
				if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
					if err == unix.ENOENT {
						continue // removed meanwhile
					}
					return nil, err
				}
				typ = statMode(st.Mode).Type()
			}
			ents = append(ents, rawEntry{name: name, typ: typ})
		}
	}
	slices.SortFunc(ents, func(a, b rawEntry) int { return strings.Compare(a.name, b.name) })
	return ents, nil
}

// dirEntry is the fs.DirEntry of ReadDir and WalkDir. Info is an lstat
// through the guard (beneath the workspace, no link followed).
type dirEntry struct {
	f    *FS
	path string // canonical
	name string
	typ  fs.FileMode
}

func (e *dirEntry) Name() string      { return e.name }
func (e *dirEntry) IsDir() bool       { return e.typ.IsDir() }
func (e *dirEntry) Type() fs.FileMode { return e.typ }
func (e *dirEntry) String() string    { return fs.FormatDirEntry(e) }

func (e *dirEntry) Info() (fs.FileInfo, error) {
	if err := e.f.acquire(); err != nil {
		return nil, &fs.PathError{Op: "lstat", Path: e.path, Err: err}
	}
	defer e.f.release()
	fi, err := e.f.sysLstat(e.path)
	if err != nil {
		return nil, &fs.PathError{Op: "lstat", Path: e.path, Err: err}
	}
	return fi, nil
}

func (f *FS) sysReadDir(ctx context.Context, p string) ([]fs.DirEntry, error) {
	fd, err := openat2(f.dirfd, p, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil, useErr(err)
	}
	defer unix.Close(fd)
	ents, err := readEntries(fd, make([]byte, 32<<10))
	if err != nil {
		return nil, err
	}
	out := make([]fs.DirEntry, 0, len(ents))
	for _, e := range ents {
		child := join(p, e.name)
		if f.checkEntry(ctx, capability.FSRead, fd, e.name, child, e.typ) != nil {
			continue
		}
		out = append(out, &dirEntry{f: f, path: child, name: e.name, typ: e.typ})
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

func (f *FS) sysWalk(ctx context.Context, p string, fn fs.WalkDirFunc) error {
	fi, err := f.sysLstat(p)
	if err != nil {
		return fn(p, nil, &fs.PathError{Op: "lstat", Path: p, Err: err})
	}
	d := &dirEntry{f: f, path: p, name: fi.Name(), typ: fi.Mode().Type()}
	if !d.IsDir() {
		return fn(p, d, nil)
	}
	return f.walkDir(ctx, f.dirfd, p, p, d, fn, make([]byte, 32<<10))
}

// walkDir mirrors fs.WalkDir's walkDir; the directory is opened relative to
// its parent's descriptor (name is one component, or the canonical path
// when parentfd is the workspace).
func (f *FS) walkDir(ctx context.Context, parentfd int, name, p string, d *dirEntry, fn fs.WalkDirFunc, buf []byte) error {
	if err := fn(p, d, nil); err != nil {
		if err == fs.SkipDir {
			err = nil
		}
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	fd, err := openat2(parentfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
	var ents []rawEntry
	if err != nil {
		err = useErr(err)
	} else {
		defer unix.Close(fd)
		ents, err = readEntries(fd, buf)
	}
	if err != nil {
		if err := fn(p, d, &fs.PathError{Op: "readdir", Path: p, Err: err}); err != nil {
			if err == fs.SkipDir {
				err = nil
			}
			return err
		}
	}
	for _, e := range ents {
		child := join(p, e.name)
		if f.checkEntry(ctx, capability.FSRead, fd, e.name, child, e.typ) != nil {
			continue // denied entries are neither reported nor entered
		}
		cd := &dirEntry{f: f, path: child, name: e.name, typ: e.typ}
		var err error
		if cd.IsDir() {
			err = f.walkDir(ctx, fd, e.name, child, cd, fn, buf)
		} else {
			err = fn(child, cd, nil)
		}
		if err != nil {
			if err == fs.SkipDir {
				break
			}
			return err
		}
	}
	return nil
}

func closeFD(fd int) { unix.Close(fd) }
