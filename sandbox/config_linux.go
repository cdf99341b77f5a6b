package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/internal/linkwalk"
)

// initConfig is what the host sends to the sandbox init over the inherited
// spec pipe, as JSON. Every path is canonical (symlinks resolved on the
// host) and validated.
type initConfig struct {
	Argv    []string   `json:"argv"`
	Dir     string     `json:"dir"`
	RO      []string   `json:"ro,omitempty"`
	RW      []string   `json:"rw,omitempty"`
	Deny    []denyPath `json:"deny,omitempty"`
	Pin     []string   `json:"pin,omitempty"`
	Freeze  []string   `json:"freeze,omitempty"` // see frozen: objects and links, parents first
	Env     []string   `json:"env,omitempty"`
	Network string     `json:"network"`
	Limits  Limits     `json:"limits"`
	// NProcByCgroup: the host enforces Limits.NProc with a pids cgroup, so
	// the init must not rely on RLIMIT_NPROC alone (uid 0 is exempt).
	NProcByCgroup bool `json:"nprocByCgroup,omitempty"`
	// ExecOnly: see Spec.ExecOnly; nil means unrestricted.
	ExecOnly []string `json:"execOnly,omitempty"`
	// RestrictExec is true when Spec.ExecOnly was not nil (even empty).
	RestrictExec bool `json:"restrictExec,omitempty"`
	// Seccomp is the filter to install (see seccompFilter), assembled by
	// the host.
	Seccomp []byte `json:"seccomp"`
	UID     int    `json:"uid"`
	GID     int    `json:"gid"`
}

type denyPath struct {
	Path string `json:"path"`
	Dir  bool   `json:"dir"`
}

// forbiddenGrant reports paths that must never be granted: the root (never
// bind /) and the trees the sandbox synthesizes itself.
func forbiddenGrant(p string) bool {
	if p == "/" {
		return true
	}
	for _, synth := range []string{"/proc", "/dev", "/sys"} {
		if within(p, synth) {
			return true
		}
	}
	return false
}

// within reports whether p is base or below it (both clean and absolute).
func within(p, base string) bool {
	if base == "/" {
		return true
	}
	return p == base || strings.HasPrefix(p, base+"/")
}

// canonical resolves symlinks in an existing absolute path.
func canonical(p string) (string, error) {
	r, err := filepath.EvalSymlinks(filepath.Clean(p))
	if err != nil {
		return "", err
	}
	return filepath.Abs(r)
}

// buildConfig validates s against the host file system and produces the
// canonical init configuration.
func buildConfig(s *Spec) (*initConfig, error) {
	if err := s.validate(); err != nil {
		return nil, err
	}
	c := &initConfig{
		Argv:    slices.Clone(s.Argv),
		Env:     slices.Clone(s.Env),
		Network: s.Network.String(),
		Limits:  s.Limits,
		UID:     os.Geteuid(),
		GID:     os.Getegid(),
	}
	if s.ExecOnly != nil {
		c.RestrictExec = true
		for _, p := range s.ExecOnly {
			cp, err := canonical(p)
			if err != nil {
				return nil, NewError(capability.ReasonSandboxSpecInvalid, "exec", p, "", err)
			}
			c.ExecOnly = append(c.ExecOnly, cp)
		}
	}
	seen := map[string]bool{}
	grant := func(p string, rw bool) error {
		cp, err := canonical(p)
		if err != nil {
			return NewError(capability.ReasonSandboxSpecInvalid, "grant", p, "", err)
		}
		if forbiddenGrant(cp) {
			return specErr("grant", p, "refused: %s is never granted (the sandbox builds /, /proc, /dev and /sys itself)", cp)
		}
		if seen[cp] {
			return nil
		}
		seen[cp] = true
		if rw {
			c.RW = append(c.RW, cp)
		} else {
			c.RO = append(c.RO, cp)
		}
		return nil
	}
	// Read-write first so that a path granted both ways is read-write.
	for _, p := range s.ReadWrite {
		if err := grant(p, true); err != nil {
			return nil, err
		}
	}
	for _, p := range s.ReadOnly {
		if err := grant(p, false); err != nil {
			return nil, err
		}
	}
	granted := func(p string) bool {
		for _, g := range slices.Concat(c.RO, c.RW) {
			if within(p, g) {
				return true
			}
		}
		return false
	}
	for _, p := range s.Deny {
		fi, err := os.Lstat(filepath.Clean(p))
		if err != nil {
			if os.IsNotExist(err) {
				continue // nothing to hide
			}
			return nil, NewError(capability.ReasonSandboxSpecInvalid, "deny", p, "", err)
		}
		cp, err := canonical(p)
		if err != nil {
			if os.IsNotExist(err) {
				continue // dangling symlink: nothing behind it to hide
			}
			return nil, NewError(capability.ReasonSandboxSpecInvalid, "deny", p, "", err)
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			if fi, err = os.Stat(cp); err != nil {
				return nil, NewError(capability.ReasonSandboxSpecInvalid, "deny", p, "", err)
			}
		}
		// A denied directory outside every grant matters when it holds one:
		// only that grant shows through its mask (see maskDenied).
		holds := fi.IsDir() && slices.ContainsFunc(slices.Concat(c.RO, c.RW), func(g string) bool { return g != cp && within(g, cp) })
		if !granted(cp) && !holds {
			continue // not visible inside the sandbox at all
		}
		for _, g := range slices.Concat(c.RO, c.RW) {
			if g == cp {
				return nil, specErr("deny", p, "denies a granted path as a whole; remove the grant instead")
			}
		}
		if !fi.IsDir() {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Nlink > 1 {
				return nil, specErr("deny", p, "file has %d hard links; the other names cannot be hidden", st.Nlink)
			}
		}
		if slices.ContainsFunc(c.Deny, func(d denyPath) bool { return d.Path == cp }) {
			continue // named twice (by the policy and as a protected directory)
		}
		c.Deny = append(c.Deny, denyPath{Path: cp, Dir: fi.IsDir()})
	}
	var err error
	var ancestors []string
	if c.Freeze, ancestors, err = frozen(s.Freeze, c); err != nil {
		return nil, err
	}
	if c.Pin, err = pins(slices.Concat(s.Pin, ancestors), c); err != nil {
		return nil, err
	}
	dir := s.Dir
	if dir == "" {
		dir = "/tmp"
	}
	if cd, err := canonical(dir); err == nil {
		dir = cd
	}
	if dir != "/tmp" && !granted(dir) {
		return nil, specErr("dir", s.Dir, "working directory is not inside a granted path")
	}
	c.Dir = dir
	return c, nil
}

// pins returns the canonical paths of ps that the init must pin: those
// that exist inside a read-write grant and are neither a grant nor under
// a denied path, sorted parents first and without duplicates.
func pins(ps []string, c *initConfig) ([]string, error) {
	var out []string
	for _, p := range ps {
		cp, err := canonical(p)
		if err != nil {
			if os.IsNotExist(err) {
				continue // nothing to pin
			}
			return nil, NewError(capability.ReasonSandboxSpecInvalid, "pin", p, "", err)
		}
		if slices.Contains(c.RW, cp) || slices.Contains(c.RO, cp) ||
			!slices.ContainsFunc(c.RW, func(g string) bool { return within(cp, g) }) ||
			slices.ContainsFunc(c.Deny, func(d denyPath) bool { return within(cp, d.Path) }) {
			continue
		}
		out = append(out, cp)
	}
	slices.SortFunc(out, func(a, b string) int {
		if d := strings.Count(a, "/") - strings.Count(b, "/"); d != 0 {
			return d
		}
		return strings.Compare(a, b)
	})
	return slices.Compact(out), nil
}

// frozen returns what the init binds read-only onto itself for the
// Freeze paths (see Spec.Freeze), sorted parents first: the symbolic
// links met on the way to each that lie inside a read-write grant, and
// the object each leads to when that lies inside one; and the
// directories to pin between those and their grant. Anything under a
// denied path is left out (its mask hides it). A path that ends at a
// missing name inside a read-write grant is an error.
func frozen(paths []string, c *initConfig) (freeze, ancestors []string, err error) {
	inRW := func(p string) bool { return slices.ContainsFunc(c.RW, func(g string) bool { return within(p, g) }) }
	denied := func(p string) bool {
		return slices.ContainsFunc(c.Deny, func(d denyPath) bool { return within(p, d.Path) })
	}
	add := func(p string) {
		freeze = append(freeze, p)
		for a := filepath.Dir(p); inRW(a) && !slices.Contains(c.RW, a); a = filepath.Dir(a) {
			ancestors = append(ancestors, a)
		}
	}
	for _, p := range paths {
		w, err := linkwalk.Resolve(filepath.Clean(p))
		if err != nil {
			return nil, nil, NewError(capability.ReasonSandboxSpecInvalid, "freeze", p, "", err)
		}
		for _, l := range w.Links {
			if inRW(l) && !denied(l) {
				add(l)
			}
		}
		switch {
		case w.Final != "":
			if inRW(w.Final) && !denied(w.Final) {
				add(w.Final)
			}
		case w.Missing != "" && inRW(w.Missing) && !denied(w.Missing):
			return nil, nil, specErr("freeze", p, "%s does not exist, and the process could create it", w.Missing)
		}
	}
	slices.SortFunc(freeze, func(a, b string) int {
		if d := strings.Count(a, "/") - strings.Count(b, "/"); d != 0 {
			return d
		}
		return strings.Compare(a, b)
	})
	return slices.Compact(freeze), ancestors, nil
}
