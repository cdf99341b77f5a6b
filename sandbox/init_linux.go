package sandbox

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/norma-run/norma/capability"
)

// IsInit reports whether this process was started by [Runner.Start] as the
// sandbox init. Programs that may be used as the init (the norma binary,
// test binaries) call it first thing in main or TestMain:
//
//	if sandbox.IsInit() { sandbox.InitMain() }
func IsInit() bool { return os.Getenv(initEnv) == "1" }

// InitMain runs the sandbox init and never returns. It reads its
// configuration from the inherited spec pipe, builds the sandbox (mounts,
// pivot_root, limits, session, capabilities, no_new_privs, Landlock,
// seccomp) and execs the target, which then is pid 1 of the sandbox's pid
// namespace: when it exits, the kernel kills everything else in the
// namespace. On failure it reports its *capability.Error to the host over
// the status socket and exits with status 125.
func InitMain() {
	// Everything from here to execve runs on this one OS thread, so that
	// Landlock and seccomp, which apply per thread, cover the exec'd
	// program.
	runtime.LockOSThread()
	err := initRun()
	reportInit(err)
	os.Exit(initFailExit)
}

// initError is what initRun returns on failure.
func initError(code capability.Reason, op, path string, err error) *capability.Error {
	return NewError(code, op, path, "", err)
}

func setupFail(op, path string, err error) *capability.Error {
	return initError(capability.ReasonSandboxSetupFailed, op, path, err)
}

func reportInit(err error) {
	m := statusMsg{Kind: "error", Code: capability.ReasonSandboxSetupFailed, Msg: fmt.Sprint(err)}
	if e, ok := errors.AsType[*capability.Error](err); ok {
		m.Code, m.Detail = e.Decision.Reason, e.Detail
		m.Msg = ""
		if e.Err != nil {
			m.Msg = e.Err.Error()
		}
	}
	b, _ := json.Marshal(m)
	if _, werr := unix.Write(statusFD, b); werr != nil {
		fmt.Fprintln(os.Stderr, "norma sandbox init:", err)
	}
}

func initRun() error {
	unix.CloseOnExec(specFD)
	unix.CloseOnExec(statusFD)
	raw, err := readSpec()
	if err != nil {
		return setupFail("read spec", "", err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var cfg initConfig
	if err := dec.Decode(&cfg); err != nil {
		return initError(capability.ReasonSandboxSpecInvalid, "decode spec", "", err)
	}
	unix.Close(specFD)
	// Die with the host process even if the runtime's fork path raced.
	if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(unix.SIGKILL), 0, 0, 0); err != nil {
		return setupFail("pdeathsig", "", err)
	}
	// Not dumpable: nothing in the sandbox can read our memory or environ
	// through /proc.
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return setupFail("dumpable", "", err)
	}
	broker := cfg.Network == NetBroker.String()
	if !broker && cfg.Network != NetNone.String() {
		return NewError(capability.ReasonSandboxSpecInvalid, "network", "", fmt.Sprintf("unknown mode %q", cfg.Network), nil)
	}
	lp, err := buildRoot(&cfg)
	if err != nil {
		return err
	}
	_ = unix.Sethostname([]byte("norma-sandbox"))
	env := slices.Clone(cfg.Env)
	if broker {
		port, err := brokerListener()
		if err != nil {
			return err
		}
		lp.tcpPort = port
		proxy := "http://127.0.0.1:" + strconv.Itoa(port)
		env = append(env, "HTTP_PROXY="+proxy, "HTTPS_PROXY="+proxy, "http_proxy="+proxy, "https_proxy="+proxy)
	}
	if err := unix.Chdir(cfg.Dir); err != nil {
		return initError(capability.ReasonSandboxExecFailed, "chdir", cfg.Dir, err)
	}
	path, err := lookPath(cfg.Argv[0], env, func(p string) bool {
		var st unix.Stat_t
		return unix.Stat(p, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG && unix.Access(p, unix.X_OK) == nil
	})
	if err != nil {
		return initError(capability.ReasonSandboxExecFailed, "exec", cfg.Argv[0], err)
	}
	if err := setLimits(cfg.Limits); err != nil {
		return err
	}
	if _, err := unix.Setsid(); err != nil {
		return setupFail("setsid", "", err)
	}
	if err := dropCapabilities(); err != nil {
		return err
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return setupFail("no_new_privs", "", err)
	}
	if err := lp.restrictSelf(); err != nil {
		return setupFail("landlock", "", err)
	}
	if err := loadSeccomp(cfg.Seccomp); err != nil {
		return setupFail("seccomp", "", err)
	}
	err = syscall.Exec(path, cfg.Argv, env)
	return initError(capability.ReasonSandboxExecFailed, "exec", path, err)
}

// readSpec reads the spec pipe to EOF with plain read(2) calls: no
// *os.File and no runtime poller for a pipe that is read once.
func readSpec() ([]byte, error) {
	buf := make([]byte, 0, 4<<10)
	for {
		if len(buf) == cap(buf) {
			if len(buf) >= maxSpec {
				return nil, fmt.Errorf("spec larger than %d bytes", maxSpec)
			}
			buf = slices.Grow(buf, len(buf))
		}
		n, err := unix.Read(specFD, buf[len(buf):cap(buf)])
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return nil, err
		case n == 0:
			return buf, nil
		}
		buf = buf[:len(buf)+n]
	}
}

// maxSpec bounds the spec the init accepts.
const maxSpec = 16 << 20

// writeFile creates name (which must not exist) with body, using plain
// system calls.
func writeFile(name string, body []byte, mode uint32) error {
	fd, err := unix.Open(name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, mode)
	if err != nil {
		return err
	}
	for len(body) > 0 {
		n, err := unix.Write(fd, body)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			unix.Close(fd)
			return err
		}
		body = body[n:]
	}
	return unix.Close(fd)
}

// stage is where the new root is assembled before pivot_root. Mounting a
// tmpfs over it only hides the host directory inside our own mount
// namespace; every host path we need was captured as a detached mount
// before that.
const stage = "/tmp"

// detached is a host path captured with open_tree(OPEN_TREE_CLONE).
type detached struct {
	fd  int
	dst string
	dir bool
	// hidden: attached inside a denied directory's mask, where the
	// directories on the way are created mode 0111 (see maskDenied).
	hidden bool
}

// capture clones the mount tree at src as a detached mount with attrs set
// recursively. missingOK ignores a source that does not exist.
func capture(src, dst string, attrs uint64, missingOK bool) (*detached, error) {
	fd, err := unix.OpenTree(unix.AT_FDCWD, src, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE)
	if err != nil {
		if missingOK && errors.Is(err, unix.ENOENT) {
			return nil, nil
		}
		return nil, setupFail("open_tree", src, err)
	}
	if attrs != 0 {
		if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &unix.MountAttr{Attr_set: attrs}); err != nil {
			unix.Close(fd)
			return nil, setupFail("mount_setattr", src, err)
		}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, setupFail("stat", src, err)
	}
	return &detached{fd: fd, dst: dst, dir: st.Mode&unix.S_IFMT == unix.S_IFDIR}, nil
}

// attach creates the mount point under the stage and moves d onto it.
func (d *detached) attach() error {
	defer unix.Close(d.fd)
	target := stage + d.dst
	skel := os.FileMode(0o755)
	if d.hidden {
		skel = 0o111
	}
	if err := mountPoint(target, d.dir, skel); err != nil {
		return setupFail("mountpoint", d.dst, err)
	}
	if err := unix.MoveMount(d.fd, "", unix.AT_FDCWD, target, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return setupFail("move_mount", d.dst, err)
	}
	return nil
}

// mountPoint makes sure target exists as a directory or an empty file,
// creating the directories on the way with mode skel.
func mountPoint(target string, dir bool, skel os.FileMode) error {
	if dir {
		return os.MkdirAll(target, skel)
	}
	if err := os.MkdirAll(filepath.Dir(target), skel); err != nil {
		return err
	}
	fd, err := unix.Open(target, unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0o644)
	if err != nil {
		if errors.Is(err, unix.EEXIST) || errors.Is(err, unix.EROFS) || errors.Is(err, unix.EISDIR) {
			var st unix.Stat_t
			if unix.Stat(target, &st) == nil {
				return nil
			}
		}
		return err
	}
	return unix.Close(fd)
}

const (
	roAttrs  = unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV
	rwAttrs  = unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV
	devAttrs = unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NOEXEC
)

// buildRoot assembles the minimal root and pivots into it. It returns the
// Landlock policy matching what is mounted.
func buildRoot(cfg *initConfig) (*landlockPolicy, error) {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return nil, setupFail("make mounts private", "/", err)
	}
	lp := &landlockPolicy{abi: landlockABI(), restrictExec: cfg.RestrictExec, execOnly: cfg.ExecOnly}
	if lp.abi < 1 {
		return nil, NewError(capability.ReasonSandboxUnavailable, "landlock", "", "Landlock not available", nil)
	}
	// 1. Capture everything we need from the host tree.
	var binds []*detached
	type link struct{ name, target string }
	var links []link
	sys := systemPaths(networkMode(cfg.Network))
	for _, d := range sys.dirs {
		fi, err := os.Lstat(d)
		if err != nil {
			continue
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			t, err := os.Readlink(d)
			if err != nil {
				return nil, setupFail("readlink", d, err)
			}
			links = append(links, link{d, t})
			continue
		}
		b, err := capture(d, d, roAttrs, true)
		if err != nil {
			return nil, err
		}
		if b != nil {
			binds = append(binds, b)
			lp.roDirs = append(lp.roDirs, d)
		}
	}
	for _, e := range sys.etc {
		b, err := capture(e, e, roAttrs, true)
		if err != nil {
			return nil, err
		}
		if b != nil {
			binds = append(binds, b)
		}
	}
	var devs []*detached
	for _, n := range sys.devs {
		b, err := capture(n, n, devAttrs, true)
		if err != nil {
			return nil, err
		}
		if b != nil {
			devs = append(devs, b)
			lp.rwFiles = append(lp.rwFiles, n)
		}
	}
	// Granted paths, parents before children so that nested grants land on
	// top of their parent's bind.
	type grant struct {
		path string
		rw   bool
	}
	var grants []grant
	for _, p := range cfg.RO {
		grants = append(grants, grant{p, false})
	}
	for _, p := range cfg.RW {
		grants = append(grants, grant{p, true})
	}
	slices.SortStableFunc(grants, func(a, b grant) int {
		return strings.Count(a.path, "/") - strings.Count(b.path, "/")
	})
	var grantBinds []*detached
	for _, g := range grants {
		attrs := uint64(roAttrs)
		if g.rw {
			attrs = rwAttrs
		}
		b, err := capture(g.path, g.path, attrs, false)
		if err != nil {
			return nil, err
		}
		grantBinds = append(grantBinds, b)
		if g.rw {
			lp.rwDirs = append(lp.rwDirs, g.path)
		} else {
			lp.roDirs = append(lp.roDirs, g.path)
		}
	}

	// 2. The new root: a tmpfs over the stage (only in this namespace).
	if err := unix.Mount("tmpfs", stage, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755,size=1m,nr_inodes=4096"); err != nil {
		return nil, setupFail("mount root tmpfs", stage, err)
	}
	for _, l := range links {
		if err := os.Symlink(l.target, stage+l.name); err != nil {
			return nil, setupFail("symlink", l.name, err)
		}
	}
	for _, d := range []string{"/proc", "/dev", "/tmp", "/etc"} {
		if err := os.Mkdir(stage+d, 0o755); err != nil {
			return nil, setupFail("mkdir", d, err)
		}
	}
	for _, b := range binds {
		if err := b.attach(); err != nil {
			return nil, err
		}
	}
	if err := writeIdentity(); err != nil {
		return nil, err
	}
	lp.roDirs = append(lp.roDirs, "/etc")

	// /proc: a fresh procfs for our pid namespace; /proc/sys read-only.
	if err := unix.Mount("proc", stage+"/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return nil, setupFail("mount proc", "/proc", err)
	}
	if err := unix.Mount(stage+"/proc/sys", stage+"/proc/sys", "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return nil, setupFail("bind /proc/sys", "/proc/sys", err)
	}
	if err := unix.Mount("", stage+"/proc/sys", "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return nil, setupFail("remount /proc/sys", "/proc/sys", err)
	}
	lp.roDirs = append(lp.roDirs, "/proc")

	// /dev: tmpfs with bind-mounted nodes, read-only once populated.
	if err := unix.Mount("tmpfs", stage+"/dev", "tmpfs", unix.MS_NOSUID|unix.MS_NOEXEC, "mode=0755,size=64k,nr_inodes=64"); err != nil {
		return nil, setupFail("mount /dev", "/dev", err)
	}
	for name, target := range map[string]string{"fd": "/proc/self/fd", "stdin": "/proc/self/fd/0", "stdout": "/proc/self/fd/1", "stderr": "/proc/self/fd/2"} {
		if err := os.Symlink(target, stage+"/dev/"+name); err != nil {
			return nil, setupFail("symlink", "/dev/"+name, err)
		}
	}
	if err := os.Mkdir(stage+"/dev/shm", 0o755); err != nil {
		return nil, setupFail("mkdir", "/dev/shm", err)
	}
	for _, b := range devs {
		if err := b.attach(); err != nil {
			return nil, err
		}
	}
	if err := unix.Mount("tmpfs", stage+"/dev/shm", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "mode=1777,size=64m"); err != nil {
		return nil, setupFail("mount /dev/shm", "/dev/shm", err)
	}
	if err := unix.Mount("", stage+"/dev", "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NOEXEC, ""); err != nil {
		return nil, setupFail("remount /dev", "/dev", err)
	}
	lp.roDirs = append(lp.roDirs, "/dev")
	lp.rwDirs = append(lp.rwDirs, "/dev/shm")

	// /tmp: private tmpfs.
	if err := unix.Mount("tmpfs", stage+"/tmp", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=1777,size=256m"); err != nil {
		return nil, setupFail("mount /tmp", "/tmp", err)
	}
	lp.rwDirs = append(lp.rwDirs, "/tmp")
	lp.unixOK = append(lp.unixOK, "/tmp")

	// Granted paths; those inside a denied directory go onto its mask
	// (see maskDenied).
	var onMasks []*detached
	for i, b := range grantBinds {
		if inDeniedDir(grants[i].path, cfg.Deny) {
			onMasks = append(onMasks, b)
			continue
		}
		if err := b.attach(); err != nil {
			return nil, err
		}
	}
	// Pinned paths, then denied ones: every path whose name must stay
	// becomes a mount point, which cannot be renamed or removed.
	if err := pin(cfg.Pin); err != nil {
		return nil, err
	}
	// Frozen paths: read-only mount points of themselves, on top of the
	// pins and under the masks, so that a denied path inside one stays
	// hidden.
	if err := freeze(cfg.Freeze); err != nil {
		return nil, err
	}
	// Denied paths: cover each with an empty, mode-000, read-only object.
	if err := maskDenied(cfg.Deny, onMasks); err != nil {
		return nil, err
	}
	if err := sealScratchParents(slices.Concat(cfg.RO, cfg.RW)); err != nil {
		return nil, err
	}
	// The root itself is read-only: nothing can be created outside the
	// read-write grants and the tmpfs mounts.
	if err := unix.Mount("", stage, "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV, ""); err != nil {
		return nil, setupFail("remount root read-only", "/", err)
	}
	// 3. pivot_root into the stage and drop the host tree.
	if err := unix.Chdir(stage); err != nil {
		return nil, setupFail("chdir", stage, err)
	}
	if err := unix.PivotRoot(".", "."); err != nil {
		return nil, setupFail("pivot_root", stage, err)
	}
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return nil, setupFail("detach old root", "/", err)
	}
	if err := unix.Chdir("/"); err != nil {
		return nil, setupFail("chdir", "/", err)
	}
	return lp, nil
}

// sealScratchParents makes read-only the directories that the sandbox
// created inside its private, writable /tmp to hold grants that live under
// the host's /tmp (a workspace in /tmp/proj granted as /tmp/proj/src
// creates /tmp/proj). Left writable, they would take a write to an
// ungranted path such as /tmp/proj/README.md and keep it in the private
// tmpfs: the process would be told the write succeeded while the host file
// is unchanged. Each top-level such directory is replaced by a read-only
// bind of itself whose nested mounts (the grants, the masks) keep their
// own flags, so writes there fail with EROFS like anywhere else outside a
// read-write grant.
func sealScratchParents(grants []string) error {
	var tops []string
	for _, g := range grants {
		rest, ok := strings.CutPrefix(g, "/tmp/")
		if !ok {
			continue
		}
		first, _, _ := strings.Cut(rest, "/")
		top := "/tmp/" + first
		if !slices.Contains(grants, top) && !slices.Contains(tops, top) {
			tops = append(tops, top)
		}
	}
	for _, top := range tops {
		target := stage + top
		fd, err := unix.OpenTree(unix.AT_FDCWD, target, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE)
		if err != nil {
			return setupFail("seal scratch parent", top, err)
		}
		// Not AT_RECURSIVE: only the skeleton becomes read-only.
		err = unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH, &unix.MountAttr{Attr_set: roAttrs})
		if err == nil {
			err = unix.MoveMount(fd, "", unix.AT_FDCWD, target, unix.MOVE_MOUNT_F_EMPTY_PATH)
		}
		unix.Close(fd)
		if err != nil {
			return setupFail("seal scratch parent", top, err)
		}
	}
	return nil
}

// writeIdentity writes a minimal passwd and group so that programs which
// look up the current user work. Inside, the caller is uid 0.
func writeIdentity() error {
	files := map[string]string{
		"/etc/passwd": "root:x:0:0:norma sandbox:/tmp:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
		"/etc/group":  "root:x:0:\nnogroup:x:65534:\n",
	}
	for name, body := range files {
		if err := writeFile(stage+name, []byte(body), 0o644); err != nil {
			return setupFail("write", name, err)
		}
	}
	return nil
}

// pin makes each path (sorted parents first) a mount point of itself. The
// bind is recursive, so a grant or pin already mounted below stays
// visible, and it keeps the flags of the mount it is taken from (a pin
// inside a read-write grant stays writable). rename(2), unlink(2) and
// rmdir(2) of a mount point fail with EBUSY in the namespace that holds
// it, which is the sandboxed process's; a rename of an ancestor would
// carry the mount along, which is why Derive pins every ancestor too.
func pin(paths []string) error {
	for _, p := range paths {
		target := stage + p
		if err := unix.Mount(target, target, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return setupFail("pin", p, err)
		}
	}
	return nil
}

// freeze binds each path (sorted parents first) read-only onto itself,
// recursively, without following a symbolic link it ends in: a frozen
// directory or file, and every mount below it, becomes read-only (EROFS
// on any write, creation, rename or removal inside), and the path is a
// mount point that cannot be renamed, removed or replaced (EBUSY). A
// symbolic link gets a mount of itself, which pins it: it still reads
// the same, and rm, mv or ln -sf over it fail. Any failure fails the
// run: a path left writable would be a silent hole.
func freeze(paths []string) error {
	for _, p := range paths {
		target := stage + p
		fd, err := unix.OpenTree(unix.AT_FDCWD, target, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE|unix.AT_SYMLINK_NOFOLLOW)
		if err != nil {
			return setupFail("freeze", p, err)
		}
		err = unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &unix.MountAttr{Attr_set: roAttrs})
		if err == nil {
			// No MOVE_MOUNT_T_SYMLINKS: a link is mounted on, not followed.
			err = unix.MoveMount(fd, "", unix.AT_FDCWD, target, unix.MOVE_MOUNT_F_EMPTY_PATH)
		}
		unix.Close(fd)
		if err != nil {
			return setupFail("freeze", p, err)
		}
	}
	return nil
}

// maskDenied hides each denied path behind an empty object nobody in the
// sandbox can open (mode 000, no capabilities left to override it).
//
// A grant inside a denied directory (the host binds a plugin's package and
// data directory, which live in Norma's state directory, hidden as a whole:
// by the host, and by identity when the workspace holds it) is attached on
// top of the mask: that mask is a tmpfs of mode 0111 holding only the
// directories down to the grants (mode 0111 too), read-only once they are
// attached. So exactly the granted paths show through, and nothing else of
// the denied directory, not even the names beside them. A denied directory
// that lies in no grant (it only holds some) is created in the new root
// first.
func maskDenied(deny []denyPath, onMasks []*detached) error {
	if len(deny) == 0 {
		return nil
	}
	const maskFile = stage + "/.norma-mask"
	if err := writeFile(maskFile, nil, 0); err != nil {
		return setupFail("create mask", "", err)
	}
	defer os.Remove(maskFile)
	if err := os.Chmod(maskFile, 0); err != nil {
		return setupFail("chmod mask", "", err)
	}
	var holders []string // masks that hold grants, made read-only at the end
	for _, d := range deny {
		target := stage + d.Path
		if d.Dir {
			holds := slices.ContainsFunc(onMasks, func(b *detached) bool { return within(b.dst, d.Path) })
			if !holds {
				if err := unix.Mount("tmpfs", target, "tmpfs", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "mode=000,size=4k,nr_inodes=1"); err != nil {
					return setupFail("mask dir", d.Path, err)
				}
				continue
			}
			if err := os.MkdirAll(target, 0o755); err != nil {
				return setupFail("mask dir", d.Path, err)
			}
			if err := unix.Mount("tmpfs", target, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "mode=0111,size=64k,nr_inodes=1024"); err != nil {
				return setupFail("mask dir", d.Path, err)
			}
			holders = append(holders, d.Path)
			continue
		}
		if err := unix.Mount(maskFile, target, "", unix.MS_BIND, ""); err != nil {
			return setupFail("mask file", d.Path, err)
		}
		if err := unix.Mount("", target, "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
			return setupFail("mask file", d.Path, err)
		}
	}
	for _, b := range onMasks {
		b.hidden = true
		if err := b.attach(); err != nil {
			return err
		}
	}
	for _, h := range holders {
		if err := unix.Mount("", stage+h, "", unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
			return setupFail("mask dir read-only", h, err)
		}
	}
	return nil
}

// inDeniedDir reports whether path lies strictly inside a denied
// directory.
func inDeniedDir(path string, deny []denyPath) bool {
	return slices.ContainsFunc(deny, func(d denyPath) bool { return d.Dir && path != d.Path && within(path, d.Path) })
}

// brokerListener brings lo up, listens on 127.0.0.1:0 inside the sandbox's
// network namespace and hands the listening socket to the host over the
// status socket. The socket's namespace is fixed at creation, so the host
// accepts connections from inside the sandbox while nothing inside can
// reach the host's network. It returns the port.
func brokerListener() (int, error) {
	s, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0, setupFail("broker", "lo", err)
	}
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		unix.Close(s)
		return 0, setupFail("broker", "lo", err)
	}
	ifr.SetUint16(unix.IFF_UP | unix.IFF_LOOPBACK | unix.IFF_RUNNING)
	err = unix.IoctlIfreq(s, unix.SIOCSIFFLAGS, ifr)
	unix.Close(s)
	if err != nil {
		return 0, setupFail("broker: bring lo up", "lo", err)
	}
	ln, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0, setupFail("broker: socket", "", err)
	}
	defer unix.Close(ln)
	if err := unix.Bind(ln, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		return 0, setupFail("broker: bind", "127.0.0.1", err)
	}
	if err := unix.Listen(ln, 128); err != nil {
		return 0, setupFail("broker: listen", "", err)
	}
	sa, err := unix.Getsockname(ln)
	if err != nil {
		return 0, setupFail("broker: getsockname", "", err)
	}
	port := sa.(*unix.SockaddrInet4).Port
	b, _ := json.Marshal(statusMsg{Kind: "listener", Port: port})
	if err := unix.Sendmsg(statusFD, b, unix.UnixRights(ln), nil, 0); err != nil {
		return 0, setupFail("broker: hand listener to host", "", err)
	}
	return port, nil
}

// setLimits applies the resource limits (soft = hard; a value above the
// current hard limit is clamped to it, which is stricter).
func setLimits(l Limits) error {
	for _, lim := range []struct {
		res  int
		name string
		v    uint64
	}{
		{unix.RLIMIT_NPROC, "RLIMIT_NPROC", l.NProc},
		{unix.RLIMIT_NOFILE, "RLIMIT_NOFILE", l.NoFile},
		{unix.RLIMIT_AS, "RLIMIT_AS", l.AS},
		{unix.RLIMIT_CPU, "RLIMIT_CPU", l.CPU},
		{unix.RLIMIT_FSIZE, "RLIMIT_FSIZE", l.FSize},
	} {
		if lim.v == 0 {
			continue
		}
		var cur unix.Rlimit
		if err := unix.Getrlimit(lim.res, &cur); err != nil {
			return setupFail("getrlimit", lim.name, err)
		}
		v := min(lim.v, cur.Max)
		if err := unix.Setrlimit(lim.res, &unix.Rlimit{Cur: v, Max: v}); err != nil {
			return setupFail("setrlimit", lim.name, err)
		}
	}
	return nil
}

// dropCapabilities leaves the process (uid 0 inside its user namespace)
// with no capabilities, now or after execve: securebits make uid 0 ordinary
// and are locked, the bounding and ambient sets are emptied, and the
// effective, permitted and inheritable sets are cleared.
func dropCapabilities() error {
	const secbits = 1<<0 | 1<<1 | // SECBIT_NOROOT (+locked)
		1<<2 | 1<<3 | // SECBIT_NO_SETUID_FIXUP (+locked)
		1<<5 | // SECBIT_KEEP_CAPS_LOCKED
		1<<6 | 1<<7 // SECBIT_NO_CAP_AMBIENT_RAISE (+locked)
	if err := unix.Prctl(unix.PR_SET_SECUREBITS, secbits, 0, 0, 0); err != nil {
		return setupFail("securebits", "", err)
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
		return setupFail("clear ambient capabilities", "", err)
	}
	for c := 0; c < 64; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil {
			if errors.Is(err, unix.EINVAL) {
				break // past the last capability
			}
			return setupFail("drop bounding capability", strconv.Itoa(c), err)
		}
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return setupFail("capset", "", err)
	}
	return nil
}
