package sandbox

import "slices"

// systemView are the host paths every sandbox shows besides its grants,
// each at its own name: the system directories (read-only; one that is a
// symbolic link on the host, /bin → usr/bin, is recreated as the same
// link), the /etc entries programs need to start (read-only), and the
// device nodes. /proc, /dev, /tmp and /etc are the sandbox's own: a fresh
// procfs, a private tmpfs, and a minimal passwd and group.
type systemView struct {
	dirs, etc, devs []string
}

// systemPaths is the one list of what the sandbox's root shows of the
// host for network mode m (TLS roots in broker mode): the sandbox init
// mounts exactly these, and [Exposed] reports them.
func systemPaths(m NetworkMode) systemView {
	v := systemView{
		dirs: []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"},
		// The non-secret /etc entries programs need to start.
		// resolv.conf is never bound: nothing in the sandbox can reach a
		// DNS server; the broker resolves names.
		etc: []string{"/etc/alternatives", "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d",
			"/etc/localtime", "/etc/nsswitch.conf", "/etc/hosts"},
		devs: []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty"},
	}
	if m == NetBroker {
		v.etc = slices.Concat(v.etc, []string{"/etc/ssl", "/etc/ca-certificates", "/etc/ca-certificates.conf", "/etc/pki"})
	}
	return v
}

// Exposed returns the host paths a sandbox in network mode m shows to the
// process besides the paths of its Spec (the workspace grants): what a
// command run there can read of the host, whatever its policy. Nothing
// else of the host is visible (its /tmp, /proc, /home, /root and the rest
// of /etc are not). A caller deciding a command that runs outside the
// sandbox uses it to refuse what the sandbox would not have shown
// (gate.Call.Unconfined). Paths are as the host names them; some may not exist.
func Exposed(m NetworkMode) []string {
	v := systemPaths(m)
	return slices.Concat(v.dirs, v.etc, v.devs)
}

// networkMode is the mode named s (Spec.Network's String), NetNone for
// any other.
func networkMode(s string) NetworkMode {
	if s == NetBroker.String() {
		return NetBroker
	}
	return NetNone
}
