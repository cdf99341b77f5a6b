package sandbox

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Landlock is applied by the init to its own (locked) OS thread right
// before execve, so a single-thread landlock_restrict_self is exactly what
// is needed: the Go runtime's other threads vanish at execve. This uses the
// raw syscalls (golang.org/x/sys/unix) rather than go-landlock's Restrict,
// whose all-threads path pulls in libcap/psx.

const (
	llFSExecute     = unix.LANDLOCK_ACCESS_FS_EXECUTE
	llFSWriteFile   = unix.LANDLOCK_ACCESS_FS_WRITE_FILE
	llFSReadFile    = unix.LANDLOCK_ACCESS_FS_READ_FILE
	llFSReadDir     = unix.LANDLOCK_ACCESS_FS_READ_DIR
	llFSRefer       = unix.LANDLOCK_ACCESS_FS_REFER
	llFSTruncate    = unix.LANDLOCK_ACCESS_FS_TRUNCATE
	llFSIoctlDev    = unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
	llFSResolveUnix = unix.LANDLOCK_ACCESS_FS_RESOLVE_UNIX

	llNetBindTCP    = unix.LANDLOCK_ACCESS_NET_BIND_TCP
	llNetConnectTCP = unix.LANDLOCK_ACCESS_NET_CONNECT_TCP
	llNetBindUDP    = unix.LANDLOCK_ACCESS_NET_BIND_UDP
	llNetSendUDP    = unix.LANDLOCK_ACCESS_NET_CONNECT_SEND_UDP

	llScopeAbstractUnix = 1 << 0
	llScopeSignal       = 1 << 1

	llCreateRulesetVersion = 1 << 0
	llRulePathBeneath      = 1
	llRuleNetPort          = 2

	// Rights that only make sense on directories; the kernel refuses them
	// in a rule on a file.
	llDirOnly = unix.LANDLOCK_ACCESS_FS_READ_DIR | unix.LANDLOCK_ACCESS_FS_REMOVE_DIR |
		unix.LANDLOCK_ACCESS_FS_REMOVE_FILE | unix.LANDLOCK_ACCESS_FS_MAKE_CHAR |
		unix.LANDLOCK_ACCESS_FS_MAKE_DIR | unix.LANDLOCK_ACCESS_FS_MAKE_REG |
		unix.LANDLOCK_ACCESS_FS_MAKE_SOCK | unix.LANDLOCK_ACCESS_FS_MAKE_FIFO |
		unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK | unix.LANDLOCK_ACCESS_FS_MAKE_SYM |
		unix.LANDLOCK_ACCESS_FS_REFER
)

// landlockABI returns the kernel's Landlock ABI version, 0 when Landlock is
// unavailable or disabled.
func landlockABI() int {
	v, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, llCreateRulesetVersion)
	if e != 0 {
		return 0
	}
	return int(v)
}

// llHandledFS is the set of file-system rights ABI abi can restrict.
func llHandledFS(abi int) uint64 {
	switch {
	case abi >= 9:
		return 1<<17 - 1
	case abi >= 5:
		return 1<<16 - 1
	case abi >= 3:
		return 1<<15 - 1
	case abi == 2:
		return 1<<14 - 1
	case abi == 1:
		return 1<<13 - 1
	}
	return 0
}

func llHandledNet(abi int) uint64 {
	switch {
	case abi >= 10:
		return llNetBindTCP | llNetConnectTCP | llNetBindUDP | llNetSendUDP
	case abi >= 4:
		return llNetBindTCP | llNetConnectTCP
	}
	return 0
}

func llScoped(abi int) uint64 {
	if abi >= 6 {
		return llScopeAbstractUnix | llScopeSignal
	}
	return 0
}

// llRulesetAttr mirrors struct landlock_ruleset_attr (first three fields).
type llRulesetAttr struct {
	handledFS  uint64
	handledNet uint64
	scoped     uint64
}

// llNetPortAttr mirrors struct landlock_net_port_attr.
type llNetPortAttr struct {
	allowed uint64
	port    uint64
}

// llPathBeneathAttr mirrors the packed struct landlock_path_beneath_attr.
type llPathBeneathAttr struct {
	allowed  uint64
	parentFD int32
}

// landlockPolicy is the rule set the init applies.
type landlockPolicy struct {
	abi     int
	roDirs  []string // read + execute
	rwDirs  []string // everything but device ioctl and unix connect
	rwFiles []string // read + write + truncate (device nodes)
	unixOK  []string // additionally allow connect() to unix sockets (ABI >= 9)
	tcpPort int      // allowed TCP connect port (broker), 0 for none
	// restrictExec removes the execute right from every rule above and
	// grants it on execOnly alone.
	restrictExec bool
	execOnly     []string
}

// restrictSelf builds the ruleset and enforces it on the calling thread.
// The caller must have set no_new_privs and must hold the OS thread.
func (lp *landlockPolicy) restrictSelf() error {
	fsAll := llHandledFS(lp.abi)
	attr := llRulesetAttr{handledFS: fsAll, handledNet: llHandledNet(lp.abi), scoped: llScoped(lp.abi)}
	size := unsafe.Sizeof(attr)
	switch {
	case lp.abi < 4:
		size = 8
	case lp.abi < 6:
		size = 16
	}
	rfd, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), size, 0)
	if e != 0 {
		return fmt.Errorf("landlock_create_ruleset (ABI %d): %w", lp.abi, e)
	}
	defer unix.Close(int(rfd))

	ro := uint64(llFSExecute | llFSReadFile | llFSReadDir)
	rw := fsAll &^ (llFSIoctlDev | llFSResolveUnix)
	if lp.restrictExec {
		ro &^= llFSExecute
		rw &^= llFSExecute
	}
	devRW := uint64(llFSReadFile | llFSWriteFile | llFSTruncate)
	add := func(path string, rights uint64) error {
		fd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("landlock rule %s: %w", path, err)
		}
		defer unix.Close(fd)
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return fmt.Errorf("landlock rule %s: %w", path, err)
		}
		rights &= fsAll
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			rights &^= llDirOnly
		}
		pb := llPathBeneathAttr{allowed: rights, parentFD: int32(fd)}
		if _, _, e := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, rfd, llRulePathBeneath, uintptr(unsafe.Pointer(&pb)), 0, 0, 0); e != 0 {
			return fmt.Errorf("landlock_add_rule %s: %w", path, e)
		}
		return nil
	}
	// Listing directories is allowed everywhere: only what was mounted on
	// purpose exists, and masks are mode 000.
	if err := add("/", llFSReadDir); err != nil {
		return err
	}
	for _, p := range lp.roDirs {
		if err := add(p, ro); err != nil {
			return err
		}
	}
	for _, p := range lp.rwDirs {
		if err := add(p, rw); err != nil {
			return err
		}
	}
	for _, p := range lp.rwFiles {
		if err := add(p, devRW); err != nil {
			return err
		}
	}
	for _, p := range lp.unixOK {
		if err := add(p, rw|llFSResolveUnix); err != nil {
			return err
		}
	}
	for _, p := range lp.execOnly {
		if err := add(p, llFSExecute|llFSReadFile|llFSReadDir); err != nil {
			return err
		}
	}
	if lp.tcpPort > 0 && attr.handledNet&llNetConnectTCP != 0 {
		np := llNetPortAttr{allowed: llNetConnectTCP, port: uint64(lp.tcpPort)}
		if _, _, e := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, rfd, llRuleNetPort, uintptr(unsafe.Pointer(&np)), 0, 0, 0); e != 0 {
			return fmt.Errorf("landlock_add_rule tcp %d: %w", lp.tcpPort, e)
		}
	}
	if _, _, e := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, rfd, 0, 0); e != 0 {
		return fmt.Errorf("landlock_restrict_self: %w", e)
	}
	return nil
}
