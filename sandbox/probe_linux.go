package sandbox

import (
	"os"
	"runtime"
	"strconv"
	"strings"
)

// Probe inspects what this host can enforce, without starting anything. It
// is cheap enough to call per run, but [Runner.Start] does not depend on it:
// every layer is checked again, and fails closed, when it is applied.
func Probe() Capabilities {
	c := probeKernel()
	cg := probeCgroups()
	c.CgroupV2, c.CgroupDelegated, c.CgroupPidsV1 = cg.V2, cg.Delegated, cg.PidsV1
	c.Memory = cg.memory()
	c.derive()
	return c
}

// Ready is Probe().Ready without probing cgroups, which strengthen or
// weaken what a sandbox guarantees but never decide whether one can be
// built: what a process that only asks that question (a run, a hook,
// policy explain) need not read at each start.
func Ready() bool {
	c := probeKernel()
	c.derive()
	return c.Ready
}

// probeKernel probes what decides readiness: the platform, user
// namespaces, Landlock and seccomp.
func probeKernel() Capabilities {
	c := Capabilities{OS: runtime.GOOS, Arch: runtime.GOARCH, Root: os.Geteuid() == 0}
	c.UserNamespaces, c.UserNamespacesDetail = probeUserNS()
	c.LandlockABI = landlockABI()
	c.Seccomp = seccompAvailable()
	return c
}

func readSysctl(path string) (int, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	return n, err == nil
}

func probeUserNS() (bool, string) {
	if n, ok := readSysctl("/proc/sys/user/max_user_namespaces"); ok && n == 0 {
		return false, "user.max_user_namespaces is 0"
	}
	if os.Geteuid() != 0 {
		if n, ok := readSysctl("/proc/sys/kernel/unprivileged_userns_clone"); ok && n == 0 {
			return false, "kernel.unprivileged_userns_clone is 0"
		}
		if n, ok := readSysctl("/proc/sys/kernel/apparmor_restrict_unprivileged_userns"); ok && n == 1 {
			return false, "AppArmor restricts unprivileged user namespaces (kernel.apparmor_restrict_unprivileged_userns=1)"
		}
	}
	if _, err := os.Stat("/proc/self/ns/user"); err != nil {
		return false, "kernel without user namespaces"
	}
	return true, "available"
}
