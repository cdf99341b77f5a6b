package sandbox

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

const cgroupRoot = "/sys/fs/cgroup"

// cgroup is a per-sandbox pids cgroup (v2 when delegated to us, else the v1
// pids controller). It is only used when RLIMIT_NPROC cannot work (the
// caller is host root, which the kernel exempts from RLIMIT_NPROC).
type cgroup struct {
	dir string
}

// cgroupInfo describes what this host offers.
type cgroupInfo struct {
	V2        bool   // the unified hierarchy is mounted at /sys/fs/cgroup
	Delegated bool   // our v2 cgroup lets us create children with pids/memory
	PidsV1    bool   // a writable v1 pids hierarchy exists
	parent    string // where a per-sandbox pids cgroup would be created
}

// ownCgroup returns this process's path in hierarchy h ("" for v2).
func ownCgroup(controller string) (string, bool) {
	f, err := os.Open("/proc/self/cgroup")
	if err != nil {
		return "", false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		if controller == "" && parts[0] == "0" && parts[1] == "" {
			return parts[2], true
		}
		if controller != "" {
			for _, c := range strings.Split(parts[1], ",") {
				if c == controller {
					return parts[2], true
				}
			}
		}
	}
	return "", false
}

func writable(dir string) bool {
	return dir != "" && unixAccessW(dir)
}

func probeCgroups() cgroupInfo {
	var ci cgroupInfo
	if _, err := os.Stat(filepath.Join(cgroupRoot, "cgroup.controllers")); err == nil {
		ci.V2 = true
		if p, ok := ownCgroup(""); ok {
			dir := filepath.Join(cgroupRoot, p)
			b, err := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control"))
			if err == nil && strings.Contains(" "+strings.TrimSpace(string(b))+" ", " pids ") && writable(dir) {
				ci.Delegated = true
				ci.parent = dir
			}
		}
		return ci
	}
	if p, ok := ownCgroup("pids"); ok {
		dir := filepath.Join(cgroupRoot, "pids", p)
		if writable(dir) {
			ci.PidsV1 = true
			ci.parent = dir
		}
	}
	return ci
}

// newPidsCgroup creates a fresh cgroup limited to max processes.
func newPidsCgroup(max uint64) (*cgroup, error) {
	ci := probeCgroups()
	if ci.parent == "" {
		return nil, errors.New("no delegated cgroup v2 with the pids controller and no writable v1 pids hierarchy")
	}
	var rnd [6]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return nil, err
	}
	dir := filepath.Join(ci.parent, "norma-sandbox-"+strconv.Itoa(os.Getpid())+"-"+hex.EncodeToString(rnd[:]))
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create cgroup: %w", err)
	}
	c := &cgroup{dir: dir}
	if err := os.WriteFile(filepath.Join(dir, "pids.max"), []byte(strconv.FormatUint(max, 10)), 0); err != nil {
		c.remove()
		return nil, fmt.Errorf("set pids.max: %w", err)
	}
	return c, nil
}

// add moves pid into the cgroup. The init has not forked yet when this is
// called (it waits for its spec), so the whole tree is inside.
func (c *cgroup) add(pid int) error {
	if err := os.WriteFile(filepath.Join(c.dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
		return fmt.Errorf("join cgroup %s: %w", c.dir, err)
	}
	return nil
}

// remove deletes the cgroup; the tree is dead by then, but the kernel may
// need a moment to release the last tasks.
func (c *cgroup) remove() {
	for range 50 {
		if err := os.Remove(c.dir); err == nil || os.IsNotExist(err) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func unixAccessW(p string) bool { return unix.Access(p, unix.W_OK) == nil }
