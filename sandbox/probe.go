package sandbox

import "fmt"

// Capabilities is what [Probe] found on this host and what follows from it.
type Capabilities struct {
	OS   string `json:"os"`
	Arch string `json:"arch"`
	// Root reports that the caller is host root (RLIMIT_NPROC does not
	// apply to uid 0; process limits then need a pids cgroup).
	Root                 bool   `json:"root"`
	UserNamespaces       bool   `json:"userNamespaces"`
	UserNamespacesDetail string `json:"userNamespacesDetail,omitempty"`
	// LandlockABI is the kernel's Landlock ABI version; 0 means none.
	LandlockABI int  `json:"landlockABI"`
	Seccomp     bool `json:"seccomp"`
	// CgroupV2: the unified hierarchy is mounted. CgroupDelegated: our own
	// cgroup lets us create children with the pids controller.
	// CgroupPidsV1: a writable cgroup v1 pids hierarchy.
	CgroupV2        bool `json:"cgroupV2"`
	CgroupDelegated bool `json:"cgroupDelegated"`
	CgroupPidsV1    bool `json:"cgroupPidsV1"`
	// Memory is how [Limits.Memory] is enforced on this host: a per-run
	// memory cgroup (v2 or v1), or RLIMIT_AS when no memory controller is
	// writable.
	Memory MemoryMechanism `json:"memoryMechanism"`
	// Ready reports that every required layer is present, so Run will
	// build a sandbox instead of refusing.
	Ready bool `json:"ready"`
	// Guarantees are the properties a run on this host has; Missing are the
	// required layers that are absent (each makes Run refuse), Weaker are
	// optional protections this host lacks.
	Guarantees []string `json:"guarantees"`
	Missing    []string `json:"missing,omitempty"`
	Weaker     []string `json:"weaker,omitempty"`
}

// derive fills Ready, Guarantees, Missing and Weaker.
func (c *Capabilities) derive() {
	c.Guarantees, c.Missing, c.Weaker = nil, nil, nil
	if c.OS != "linux" {
		c.Missing = append(c.Missing, "the OS sandbox needs Linux")
	}
	if c.Arch != "amd64" {
		c.Missing = append(c.Missing, "the seccomp filter is written for x86_64")
	}
	if c.UserNamespaces {
		c.Guarantees = append(c.Guarantees,
			"file system: only /usr, /lib*, /bin, /sbin, a few /etc files and the granted paths are visible (minimal root via pivot_root; / is never bound)",
			"network: empty network namespace; no route out (broker mode: one loopback proxy endpoint owned by the host)",
			"processes: own pid namespace; the tree dies with its pid 1, on timeout and when the host process dies",
			"ipc, hostname: own IPC and UTS namespaces")
	} else {
		c.Missing = append(c.Missing, "user namespaces ("+c.UserNamespacesDetail+")")
	}
	switch {
	case c.LandlockABI >= 1:
		c.Guarantees = append(c.Guarantees, fmt.Sprintf("Landlock ABI %d: file access limited to the granted paths even if a mount were escaped", c.LandlockABI))
		if c.LandlockABI >= 4 {
			c.Guarantees = append(c.Guarantees, "Landlock: TCP bind/connect denied (broker port excepted)")
		} else {
			c.Weaker = append(c.Weaker, "Landlock ABI < 4: no TCP restriction (the empty network namespace still applies)")
		}
		if c.LandlockABI >= 6 {
			c.Guarantees = append(c.Guarantees, "Landlock: signals and abstract unix sockets scoped to the sandbox")
		} else {
			c.Weaker = append(c.Weaker, "Landlock ABI < 6: no signal/abstract-socket scoping (namespaces still isolate them)")
		}
	default:
		c.Missing = append(c.Missing, "Landlock (kernel >= 5.13 with lsm=landlock)")
	}
	if c.Seccomp {
		c.Guarantees = append(c.Guarantees, "seccomp: non-native syscall ABIs kill the process; ptrace, io_uring, bpf, keyring, mount, namespace, module and kexec syscalls, legacy calls (modify_ldt, ustat, sysfs, uselib, iopl, …), personality other than PER_LINUX and non-unix sockets (inet in broker mode) are denied")
	} else {
		c.Missing = append(c.Missing, "seccomp filters")
	}
	c.Guarantees = append(c.Guarantees, "no_new_privs, no capabilities, new session (no TIOCSTI into the caller's terminal), rlimits")
	switch {
	case !c.Root:
		c.Guarantees = append(c.Guarantees, "process count bounded by RLIMIT_NPROC (counted per user namespace)")
	case c.CgroupDelegated || c.CgroupPidsV1:
		c.Guarantees = append(c.Guarantees, "process count bounded by a per-sandbox pids cgroup (root is exempt from RLIMIT_NPROC)")
	default:
		c.Weaker = append(c.Weaker, "running as root without a writable pids cgroup: runs that set Limits.NProc are refused")
	}
	switch c.Memory {
	case MemoryCgroupV2, MemoryCgroupV1:
		c.Guarantees = append(c.Guarantees, "memory: the resident memory of the whole tree is bounded by a per-run memory cgroup ("+string(c.Memory)+"); going over it makes the kernel kill the tree (v2) or its largest process (v1)")
	case MemoryRlimitAS:
		c.Weaker = append(c.Weaker, "no writable memory cgroup: memory is bounded by RLIMIT_AS, the address space of each process, not the resident memory of the tree")
	}
	c.Ready = len(c.Missing) == 0
}
