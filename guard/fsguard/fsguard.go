package fsguard

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync/atomic"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/guard/fspath"
	"github.com/norma-run/norma/internal/fileid"
)

// Scheme is the URI prefix a tool may put in front of a workspace-relative
// name: "workspace://docs/a.md" names the same file as "docs/a.md". The scheme
// is matched case-insensitively; the rest is taken literally (no percent
// decoding).
const Scheme = fspath.Scheme

// maxSymlinks bounds the symbolic links followed while resolving one name,
// the same bound Linux uses (MAXSYMLINKS).
const maxSymlinks = 40

// ErrUnsupportedPlatform is returned by [New] where the guard cannot give its
// guarantees: any operating system other than Linux, and Linux kernels older
// than 5.6 (no openat2). The guard never falls back to a weaker check.
var ErrUnsupportedPlatform = errors.New("fsguard: unsupported platform: the file guard needs Linux 5.6 or later (openat2 with RESOLVE_BENEATH)")

// errNotInitialized is returned by the methods of a zero FS.
var errNotInitialized = errors.New("fsguard: FS not created with New")

// FS is a file-system capability scoped to one workspace directory.
//
// Every method takes a workspace-relative name: a relative slash-separated
// path ("a/b", "./a/../b") or a workspace:// URI. Names are cleaned lexically
// first ("a/link/../b" is "a/b", whatever "link" is), then symbolic links are
// resolved inside the workspace. Names that are not valid UTF-8 are refused
// with INVALID_REQUEST. Absolute names, NUL bytes, backslashes, other
// URI schemes, names that clean to a path above the root, symbolic links with
// absolute targets and symbolic links leading out of the workspace are refused
// with PATH_ESCAPE; more than 40 links while resolving one name fail with
// ELOOP. The result is the canonical path ([FS.Resolve]), a clean relative
// path with no symbolic link in it, "." for the root itself. The
// [capability.Decider] is asked about that canonical path, as a
// [capability.Request] of kind [capability.FSRead] or [capability.FSWrite];
// anything but [capability.Allow] refuses the operation. The file is then
// reached through openat2(2) on exactly the canonical path, beneath the
// workspace directory, with symbolic links forbidden: if a component was
// swapped for a link since the check, the operation fails with PATH_ESCAPE.
//
// What the guard decides to be reads and writes:
//   - Open, ReadFile, Stat, Lstat, ReadDir, WalkDir read. ReadDir and WalkDir
//     check every entry and leave out (and never descend into) denied ones.
//   - OpenFile writes when the flags include O_WRONLY, O_RDWR, O_CREATE,
//     O_TRUNC or O_APPEND, and reads too unless the file is write-only.
//   - WriteFile, MkdirAll (each directory it would create), Remove, Rename
//     (both names, and for a directory every entry below both names) write.
//   - Remove, Rename and Lstat act on a final symbolic link itself, so they
//     check the link's own path; every other method follows it.
//
// Hard links: a regular file whose link count is greater than one is never
// opened, for reading or writing (HARDLINK_REFUSED), because another name of
// the same inode may lie outside the workspace or under a deny rule, and the
// guard cannot find the other names. The cost is that legitimately hard-linked
// files in a workspace (some package-manager stores, "git clone --local"
// object files) cannot be read through the guard. Stat and Lstat still report
// them, and WriteFile, Rename and Remove are allowed on them, since replacing
// or removing one name never changes the content seen through the others.
//
// Directories and special files: Open and OpenFile return regular files only;
// use ReadDir or WalkDir for directories (an *os.File for a directory would
// offer ReadDir entries whose Info method stats a path relative to the process
// working directory, outside the guard). FIFOs, sockets and devices are
// refused with SPECIAL_FILE_REFUSED.
//
// What the guard does not protect against: like [os.Root] it does not stop
// traversal of mount points or bind mounts inside the workspace (except
// into a directory of [Options.Protected], which it recognizes by
// identity under any name); it cannot
// bound what another process does with a file once opened; a file opened
// before a permission change keeps working; files returned by Open and
// OpenFile stay usable after Close. The OS sandbox is the second line.
//
// All errors are *fs.PathError values naming the operation and the name as
// the caller gave it (never the host path of the workspace); a refusal's Err
// is a *capability.Error, so [capability.ReasonOf] returns its code.
//
// Methods are safe for concurrent use. Close waits for nothing: operations in
// flight finish on the directory they started with, later ones fail. The zero
// FS refuses everything.
type FS struct {
	checker capability.Decider
	root    *os.Root
	dir     *os.File // the workspace directory, opened through root
	dirfd   int      // dir's descriptor, the anchor of every openat2

	// protected are the identities of the directories no operation may
	// reach (Options.Protected), recorded when the FS was created.
	protected fileid.Set

	// state is 1 bit "closed" and, above it, the count of operations in
	// flight, so that Close never closes dirfd under a running openat2 (the
	// number could be reused by an unrelated directory).
	state atomic.Int64
}

// Options configure [NewWithOptions]; the zero value is what [New] does.
type Options struct {
	// Protected are absolute host paths of directories that no operation
	// may reach, whatever name leads there: their device and inode are
	// recorded when the FS is created, and an operation whose canonical
	// path passes through a directory of that identity, or a listing, walk
	// or rename that meets one, is refused with PROTECTED_PATH even when
	// the checker allows the name. Norma protects its state directory so:
	// a deny rule matches the name the directory had when the policy was
	// compiled, and this also holds when the directory was renamed since,
	// is reached through a bind mount of it, or when the rule was written
	// for a name the workspace spells differently (a symbolic link on the
	// way to it). A path that does not exist is left out; one that is not a
	// directory is an error. The check costs one fstatat(2) per component
	// of each operation's path (and one per directory a walk enters); a
	// rename made between that check and the use is not seen, which only
	// a process outside the OS sandbox could do, since the sandbox keeps
	// these names from being changed.
	Protected []string
}

// New opens root, an absolute path to an existing directory, as the
// workspace. checker decides every access and must not be nil. The
// workspace directory is pinned by descriptor: renaming or replacing root
// afterwards does not redirect the guard. New returns [ErrUnsupportedPlatform]
// where the guard cannot enforce its guarantees.
func New(root string, checker capability.Decider) (*FS, error) {
	return NewWithOptions(root, checker, nil)
}

// NewWithOptions is [New] with options; nil opts is New.
func NewWithOptions(root string, checker capability.Decider, opts *Options) (*FS, error) {
	if checker == nil {
		return nil, errors.New("fsguard: New: nil checker")
	}
	if !filepath.IsAbs(root) {
		return nil, fmt.Errorf("fsguard: New: workspace root %q is not an absolute path", root)
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, fmt.Errorf("fsguard: New: %w", err)
	}
	d, err := r.Open(".")
	if err != nil {
		r.Close()
		return nil, fmt.Errorf("fsguard: New: %w", err)
	}
	f := &FS{checker: checker, root: r, dir: d, dirfd: int(d.Fd())}
	if err := f.initSys(); err != nil {
		d.Close()
		r.Close()
		return nil, err
	}
	if opts != nil {
		if f.protected, err = fileid.Record(opts.Protected...); err != nil {
			d.Close()
			r.Close()
			return nil, fmt.Errorf("fsguard: New: protected directory: %w", err)
		}
	}
	return f, nil
}

// Close releases the workspace directory. Operations that already started
// complete; later calls fail with an error wrapping [fs.ErrClosed]. Closing
// twice returns an error wrapping [fs.ErrClosed].
func (f *FS) Close() error {
	if f == nil || f.root == nil {
		return errNotInitialized
	}
	for {
		s := f.state.Load()
		if s&1 != 0 {
			return fmt.Errorf("fsguard: Close: %w", fs.ErrClosed)
		}
		if f.state.CompareAndSwap(s, s|1) {
			if s == 0 {
				return f.closeDir()
			}
			return nil // the last operation in flight closes it
		}
	}
}

func (f *FS) closeDir() error {
	return errors.Join(f.dir.Close(), f.root.Close())
}

// acquire registers an operation in flight; release must follow.
func (f *FS) acquire() error {
	if f == nil || f.root == nil {
		return errNotInitialized
	}
	for {
		s := f.state.Load()
		if s&1 != 0 {
			return fs.ErrClosed
		}
		if f.state.CompareAndSwap(s, s+2) {
			return nil
		}
	}
}

func (f *FS) release() {
	if f.state.Add(-2) == 1 {
		f.closeDir()
	}
}

// begin starts an operation: the FS must be open and ctx not done.
func (f *FS) begin(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return f.acquire()
}

// Resolve returns the canonical form of name: the clean workspace-relative
// path, free of symbolic links, that the policy is asked about and that the
// file operations use ("." for the root). A final symbolic link is followed.
// Resolve makes no policy check; it reveals the targets of links inside the
// workspace, never anything outside it. The error is a *fs.PathError with Op
// "resolve".
func (f *FS) Resolve(name string) (string, error) {
	if err := f.acquire(); err != nil {
		return "", &fs.PathError{Op: "resolve", Path: name, Err: err}
	}
	defer f.release()
	p, err := f.resolveName(name, true)
	if err != nil {
		return "", &fs.PathError{Op: "resolve", Path: name, Err: err}
	}
	return p, nil
}

func (f *FS) resolveName(name string, follow bool) (string, error) {
	rel, err := fspath.Clean(name)
	if err != nil {
		return "", err
	}
	return f.resolve(rel, follow)
}

func escape(detail string) *capability.Error {
	return capability.Denied(capability.ReasonPathEscape, "", detail)
}

// check asks the checker about kind on the canonical path p and turns
// anything but Allow into a *capability.Error; an allowed path that passes
// through a protected directory is refused too.
func (f *FS) check(ctx context.Context, kind capability.Kind, p string) error {
	if err := f.decide(ctx, kind, p); err != nil {
		return err
	}
	if f.protected.Len() > 0 {
		return f.reach(kind, p)
	}
	return nil
}

// protectedErr is the refusal of a path that reaches a protected
// directory.
func protectedErr(kind capability.Kind, p string) *capability.Error {
	return capability.Denied(capability.ReasonProtectedPath, capability.Request{Kind: kind, Path: p}.String(),
		"the path leads into a directory Norma protects (its state directory), whatever its name")
}

// decide is check without the protected directories: the checker's
// answer alone.
func (f *FS) decide(ctx context.Context, kind capability.Kind, p string) error {
	req := capability.Request{Kind: kind, Path: p}
	d, panicked := callPolicy(ctx, f.checker, req)
	if d.Mode == capability.Allow && !panicked {
		return nil
	}
	detail := ""
	switch {
	case panicked:
		d = capability.Decision{Mode: capability.Deny, Reason: capability.ReasonPolicyError, Layer: "guard"}
		detail = "the policy checker panicked"
	case d.Reason == "" || d.Reason == capability.ReasonAllowed:
		// A refusal without a usable code still refuses.
		if kind == capability.FSWrite {
			d.Reason = capability.ReasonFilesystemWriteDenied
		} else {
			d.Reason = capability.ReasonFilesystemReadDenied
		}
	}
	if d.Request == "" {
		d.Request = req.String()
	}
	return &capability.Error{Decision: d, Detail: detail}
}

func callPolicy(ctx context.Context, c capability.Decider, req capability.Request) (d capability.Decision, panicked bool) {
	defer func() {
		if recover() != nil {
			d, panicked = capability.Decision{}, true
		}
	}()
	return c.Decide(ctx, req), false
}

// writeFlags are the OpenFile flags that make an open a write.
const writeFlags = os.O_WRONLY | os.O_RDWR | os.O_CREATE | os.O_TRUNC | os.O_APPEND

// allowedFlags are the OpenFile flags a tool may pass.
const allowedFlags = os.O_RDONLY | os.O_WRONLY | os.O_RDWR | os.O_CREATE | os.O_EXCL | os.O_TRUNC | os.O_APPEND | os.O_SYNC

// Open opens the regular file name for reading. It is a read of the
// canonical path. The error is a *fs.PathError with Op "open".
func (f *FS) Open(ctx context.Context, name string) (*os.File, error) {
	return f.openFile(ctx, "open", name, os.O_RDONLY, 0)
}

// OpenFile opens the regular file name with flag (O_RDONLY, O_WRONLY or
// O_RDWR, with O_CREATE, O_EXCL, O_TRUNC, O_APPEND, O_SYNC; anything else is
// refused with INVALID_REQUEST) and, when it creates the file, perm (only the
// permission bits, before the umask). With any of O_WRONLY, O_RDWR, O_CREATE,
// O_TRUNC, O_APPEND it is a write of the canonical path, and unless
// O_WRONLY also a read. The file is truncated only after the hard-link check
// passed. The error is a *fs.PathError with Op "open".
func (f *FS) OpenFile(ctx context.Context, name string, flag int, perm fs.FileMode) (*os.File, error) {
	return f.openFile(ctx, "open", name, flag, perm)
}

func (f *FS) openFile(ctx context.Context, op, name string, flag int, perm fs.FileMode) (*os.File, error) {
	if err := f.begin(ctx); err != nil {
		return nil, &fs.PathError{Op: op, Path: name, Err: err}
	}
	defer f.release()
	if flag&^allowedFlags != 0 {
		return nil, &fs.PathError{Op: op, Path: name, Err: capability.Denied(capability.ReasonInvalidRequest, "", fmt.Sprintf("unsupported open flags %#x", flag&^allowedFlags))}
	}
	p, err := f.resolveName(name, true)
	if err != nil {
		return nil, &fs.PathError{Op: op, Path: name, Err: err}
	}
	if flag&os.O_WRONLY == 0 {
		if err := f.check(ctx, capability.FSRead, p); err != nil {
			return nil, &fs.PathError{Op: op, Path: name, Err: err}
		}
	}
	if flag&writeFlags != 0 {
		if err := f.check(ctx, capability.FSWrite, p); err != nil {
			return nil, &fs.PathError{Op: op, Path: name, Err: err}
		}
	}
	file, err := f.sysOpen(p, flag, perm)
	if err != nil {
		return nil, &fs.PathError{Op: op, Path: name, Err: err}
	}
	return file, nil
}

// ReadFile reads the whole regular file name. It is a read of the canonical
// path. The error is a *fs.PathError with Op "open" or "read".
func (f *FS) ReadFile(ctx context.Context, name string) ([]byte, error) {
	if err := f.begin(ctx); err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	defer f.release()
	// Fast path: most names contain no symbolic link, so their clean form is
	// already the canonical path. Open it with every link refused by the
	// kernel; when that proves there is none, decide on that path and read
	// from the descriptor already open on it (no window to swap a link in).
	// The decision comes before any error is reported, so a denied name
	// never reveals whether it exists. A name with a link on the way takes
	// the full path below, which resolves links inside the root first.
	if rel, err := fspath.Clean(name); err == nil && rel != "." {
		fd, oerr, link := f.sysOpenNoLinks(rel)
		if !link {
			if err := f.check(ctx, capability.FSRead, rel); err != nil {
				if oerr == nil {
					closeFD(fd)
				}
				return nil, &fs.PathError{Op: "open", Path: name, Err: err}
			}
			if oerr != nil {
				return nil, &fs.PathError{Op: "open", Path: name, Err: useErr(oerr)}
			}
			data, op, err := readFD(fd, rel)
			if err != nil {
				return nil, &fs.PathError{Op: op, Path: name, Err: err}
			}
			return data, nil
		}
	}
	p, err := f.resolveName(name, true)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	if err := f.check(ctx, capability.FSRead, p); err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	data, op, err := f.sysReadFile(p)
	if err != nil {
		return nil, &fs.PathError{Op: op, Path: name, Err: err}
	}
	return data, nil
}

// WriteFile replaces the content of name with data, atomically: data goes to
// a new temporary file in the same directory (a hidden name starting with
// "." and ending in ".tmp"), which is synced and renamed over name, and the
// directory is synced. Readers see the old content or the new, never a mix;
// on any error the temporary file is removed and name is untouched. The new
// file gets perm (permission bits only, before the umask), even when it
// replaces an existing one. It is a write of the canonical path; the
// temporary name is not checked separately. The parent directory must exist.
// The error is a *fs.PathError with Op "write".
func (f *FS) WriteFile(ctx context.Context, name string, data []byte, perm fs.FileMode) error {
	if err := f.begin(ctx); err != nil {
		return &fs.PathError{Op: "write", Path: name, Err: err}
	}
	defer f.release()
	p, err := f.resolveName(name, true)
	if err != nil {
		return &fs.PathError{Op: "write", Path: name, Err: err}
	}
	if err := f.check(ctx, capability.FSWrite, p); err != nil {
		return &fs.PathError{Op: "write", Path: name, Err: err}
	}
	if err := f.sysWriteFile(ctx, p, data, perm); err != nil {
		return &fs.PathError{Op: "write", Path: name, Err: err}
	}
	return nil
}

// MkdirAll creates the directory name and any missing parents with perm
// (permission bits only, before the umask). Each directory it would create is
// a write, and all of them are checked before the first is created, so a
// refusal creates nothing. Existing directories are not checked. The error is
// a *fs.PathError with Op "mkdir".
func (f *FS) MkdirAll(ctx context.Context, name string, perm fs.FileMode) error {
	if err := f.begin(ctx); err != nil {
		return &fs.PathError{Op: "mkdir", Path: name, Err: err}
	}
	defer f.release()
	p, err := f.resolveName(name, true)
	if err != nil {
		return &fs.PathError{Op: "mkdir", Path: name, Err: err}
	}
	if err := f.sysMkdirAll(ctx, p, perm); err != nil {
		return &fs.PathError{Op: "mkdir", Path: name, Err: err}
	}
	return nil
}

// Remove removes the file, symbolic link or empty directory name. A final
// symbolic link is removed itself, so the check is a write of the link's own
// canonical path. The root cannot be removed. The error is a *fs.PathError
// with Op "remove".
func (f *FS) Remove(ctx context.Context, name string) error {
	if err := f.begin(ctx); err != nil {
		return &fs.PathError{Op: "remove", Path: name, Err: err}
	}
	defer f.release()
	p, err := f.resolveName(name, false)
	if err != nil {
		return &fs.PathError{Op: "remove", Path: name, Err: err}
	}
	if err := f.check(ctx, capability.FSWrite, p); err != nil {
		return &fs.PathError{Op: "remove", Path: name, Err: err}
	}
	if err := f.sysRemove(p); err != nil {
		return &fs.PathError{Op: "remove", Path: name, Err: err}
	}
	return nil
}

// Rename renames oldname to newname, replacing newname if it is a file or an
// empty directory. Neither final symbolic link is followed. Both canonical
// paths are writes; when oldname is a directory, so is every entry below it
// under its old and its new name (a rename moves them all), and a directory
// holding more than 100,000 entries cannot be renamed. The error is a
// *os.LinkError with Op "rename".
func (f *FS) Rename(ctx context.Context, oldname, newname string) error {
	lerr := func(err error) error { return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: err} }
	if err := f.begin(ctx); err != nil {
		return lerr(err)
	}
	defer f.release()
	op, err := f.resolveName(oldname, false)
	if err != nil {
		return lerr(err)
	}
	np, err := f.resolveName(newname, false)
	if err != nil {
		return lerr(err)
	}
	if err := f.check(ctx, capability.FSWrite, op); err != nil {
		return lerr(err)
	}
	if err := f.check(ctx, capability.FSWrite, np); err != nil {
		return lerr(err)
	}
	if err := f.sysRename(ctx, op, np); err != nil {
		return lerr(err)
	}
	return nil
}

// Stat returns information about name, following a final symbolic link. It
// is a read of the canonical path. The FileInfo's Name is the base of the
// canonical path. The error is a *fs.PathError with Op "stat".
func (f *FS) Stat(ctx context.Context, name string) (fs.FileInfo, error) {
	return f.stat(ctx, "stat", name, true)
}

// Lstat is like [FS.Stat] but describes a final symbolic link itself; the
// read check is on the link's own canonical path. The error is a
// *fs.PathError with Op "lstat".
func (f *FS) Lstat(ctx context.Context, name string) (fs.FileInfo, error) {
	return f.stat(ctx, "lstat", name, false)
}

func (f *FS) stat(ctx context.Context, op, name string, follow bool) (fs.FileInfo, error) {
	if err := f.begin(ctx); err != nil {
		return nil, &fs.PathError{Op: op, Path: name, Err: err}
	}
	defer f.release()
	p, err := f.resolveName(name, follow)
	if err != nil {
		return nil, &fs.PathError{Op: op, Path: name, Err: err}
	}
	if err := f.check(ctx, capability.FSRead, p); err != nil {
		return nil, &fs.PathError{Op: op, Path: name, Err: err}
	}
	fi, err := f.sysLstat(p)
	if err != nil {
		return nil, &fs.PathError{Op: op, Path: name, Err: err}
	}
	return fi, nil
}

// ReadDir reads the directory name and returns its entries sorted by name,
// leaving out every entry whose canonical path the checker refuses to let be
// read. Reading the directory itself is a read. Entries are not followed:
// a symbolic link is listed as a link, under its own path. Each entry's Info
// goes through the guard (an lstat beneath the workspace, no new check). The
// error is a *fs.PathError with Op "readdir".
func (f *FS) ReadDir(ctx context.Context, name string) ([]fs.DirEntry, error) {
	if err := f.begin(ctx); err != nil {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: err}
	}
	defer f.release()
	p, err := f.resolveName(name, true)
	if err != nil {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: err}
	}
	if err := f.check(ctx, capability.FSRead, p); err != nil {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: err}
	}
	ents, err := f.sysReadDir(ctx, p)
	if err != nil {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: err}
	}
	return ents, nil
}

// WalkDir walks the tree rooted at name like [fs.WalkDir]: it calls fn for the
// root and for every entry below it in lexical order, with the entry's
// canonical workspace-relative path (usable with the other methods). The root
// is resolved (a final link followed); below it, symbolic links are reported
// and never followed. Every entry is a read check: denied entries are never
// passed to fn, and denied directories are never opened. Directories are
// opened relative to their already-open parent, beneath the workspace and
// without following links, so a walk costs one open and a few getdents per
// directory. If resolving or checking the root fails, fn is called with that
// error, as fs.WalkDir does; fn's SkipDir and SkipAll work as documented
// there. The walk stops early with ctx's error when ctx is done.
func (f *FS) WalkDir(ctx context.Context, name string, fn fs.WalkDirFunc) error {
	if err := f.begin(ctx); err != nil {
		return &fs.PathError{Op: "walk", Path: name, Err: err}
	}
	defer f.release()
	p, err := f.resolveName(name, true)
	if err == nil {
		err = f.check(ctx, capability.FSRead, p)
	}
	if err != nil {
		err = fn(name, nil, &fs.PathError{Op: "walk", Path: name, Err: err})
		if err == fs.SkipDir || err == fs.SkipAll {
			return nil
		}
		return err
	}
	err = f.sysWalk(ctx, p, fn)
	if err == fs.SkipDir || err == fs.SkipAll {
		return nil
	}
	return err
}
