package sandbox

import (
	"bufio"
	"bytes"
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

// cgroup is the per-sandbox cgroup of one run: a pids limit when
// RLIMIT_NPROC cannot work (the caller is host root, which the kernel
// exempts from it) and a memory limit when a memory controller is
// writable. On cgroup v2 it is one directory; on v1 one per hierarchy.
type cgroup struct {
	dirs   []string // created directories, joined in order
	memDir string   // the one holding the memory controller, "" without
	memV2  bool
}

// cgroupInfo describes what this host offers.
type cgroupInfo struct {
	V2        bool // the unified hierarchy is mounted at /sys/fs/cgroup
	Delegated bool // our v2 cgroup lets us create children with pids
	PidsV1    bool // a writable v1 pids hierarchy exists
	// pidsParent and memParent are where a per-sandbox pids or memory
	// cgroup is created ("" when none can be); memV2 says memParent is v2.
	pidsParent, memParent string
	memV2                 bool
}

// memory returns the mechanism a memory limit gets on this host.
func (ci cgroupInfo) memory() MemoryMechanism {
	switch {
	case ci.memParent == "":
		return MemoryRlimitAS
	case ci.memV2:
		return MemoryCgroupV2
	}
	return MemoryCgroupV1
}

// ownCgroup returns this process's path in the hierarchy of controller
// ("" for the v2 hierarchy).
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
	return dir != "" && unix.Access(dir, unix.W_OK) == nil
}

func probeCgroups() cgroupInfo {
	var ci cgroupInfo
	if _, err := os.Stat(filepath.Join(cgroupRoot, "cgroup.controllers")); err == nil {
		ci.V2 = true
		if p, ok := ownCgroup(""); ok {
			dir := filepath.Join(cgroupRoot, p)
			b, err := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control"))
			enabled := " " + strings.TrimSpace(string(b)) + " "
			if err == nil && writable(dir) {
				if strings.Contains(enabled, " pids ") {
					ci.Delegated = true
					ci.pidsParent = dir
				}
				if strings.Contains(enabled, " memory ") {
					ci.memParent, ci.memV2 = dir, true
				}
			}
		}
		return ci
	}
	if p, ok := ownCgroup("pids"); ok {
		dir := filepath.Join(cgroupRoot, "pids", p)
		if writable(dir) {
			ci.PidsV1 = true
			ci.pidsParent = dir
		}
	}
	if p, ok := ownCgroup("memory"); ok {
		dir := filepath.Join(cgroupRoot, "memory", p)
		if _, err := os.Stat(filepath.Join(dir, "memory.limit_in_bytes")); err == nil && writable(dir) {
			ci.memParent = dir
		}
	}
	return ci
}

// newCgroup creates the cgroup of one run: pids.max = nproc when nproc is
// set, and the memory limit mem when it is set. The caller has checked
// that ci offers what it asks for.
func newCgroup(ci cgroupInfo, nproc, mem uint64) (_ *cgroup, err error) {
	var rnd [6]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return nil, err
	}
	name := "norma-sandbox-" + strconv.Itoa(os.Getpid()) + "-" + hex.EncodeToString(rnd[:])
	c := &cgroup{}
	defer func() {
		if err != nil {
			c.remove()
		}
	}()
	dir := func(parent string) (string, error) {
		d := filepath.Join(parent, name)
		for _, have := range c.dirs {
			if have == d {
				return d, nil
			}
		}
		if err := os.Mkdir(d, 0o700); err != nil {
			return "", fmt.Errorf("create cgroup: %w", err)
		}
		c.dirs = append(c.dirs, d)
		return d, nil
	}
	if nproc > 0 {
		if ci.pidsParent == "" {
			return nil, errors.New("no delegated cgroup v2 with the pids controller and no writable v1 pids hierarchy")
		}
		d, err := dir(ci.pidsParent)
		if err != nil {
			return nil, err
		}
		if err := setCgroup(d, "pids.max", nproc); err != nil {
			return nil, err
		}
	}
	if mem > 0 {
		if ci.memParent == "" {
			return nil, errors.New("no writable memory cgroup")
		}
		d, err := dir(ci.memParent)
		if err != nil {
			return nil, err
		}
		c.memDir, c.memV2 = d, ci.memV2
		if err := c.setMemory(mem); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// setMemory bounds the resident memory of the cgroup, swap included (no
// swap at all on v2, memory+swap equal to the limit on v1). On v2 an OOM
// kill takes the whole tree (memory.oom.group).
func (c *cgroup) setMemory(mem uint64) error {
	if c.memV2 {
		if err := setCgroup(c.memDir, "memory.max", mem); err != nil {
			return err
		}
		for _, f := range []string{"memory.swap.max", "memory.oom.group"} {
			v := uint64(0)
			if f == "memory.oom.group" {
				v = 1
			}
			if err := setCgroup(c.memDir, f, v); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
		}
		return nil
	}
	if err := setCgroup(c.memDir, "memory.limit_in_bytes", mem); err != nil {
		return err
	}
	// Present only when swap accounting is on; without it there is no
	// swap to bound.
	if err := setCgroup(c.memDir, "memory.memsw.limit_in_bytes", mem); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

func setCgroup(dir, file string, v uint64) error {
	if err := os.WriteFile(filepath.Join(dir, file), []byte(strconv.FormatUint(v, 10)), 0); err != nil {
		return fmt.Errorf("set %s: %w", file, err)
	}
	return nil
}

// oomKills returns how many processes of the cgroup the kernel's OOM
// killer killed (the oom_kill line of memory.events on v2, of
// memory.oom_control on v1).
func (c *cgroup) oomKills() uint64 {
	if c == nil || c.memDir == "" {
		return 0
	}
	file := "memory.oom_control"
	if c.memV2 {
		file = "memory.events"
	}
	b, err := os.ReadFile(filepath.Join(c.memDir, file))
	if err != nil {
		return 0
	}
	for line := range bytes.Lines(b) {
		if v, ok := bytes.CutPrefix(bytes.TrimSpace(line), []byte("oom_kill ")); ok {
			n, _ := strconv.ParseUint(string(v), 10, 64)
			return n
		}
	}
	return 0
}

// add moves pid into the cgroup. The init has not forked yet when this is
// called (it waits for its spec), so the whole tree is inside.
func (c *cgroup) add(pid int) error {
	for _, d := range c.dirs {
		if err := os.WriteFile(filepath.Join(d, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
			return fmt.Errorf("join cgroup %s: %w", d, err)
		}
	}
	return nil
}

// remove deletes the cgroup; the tree is dead by then, but the kernel may
// need a moment to release the last tasks, so it retries with a short,
// growing pause (about 700 ms in all).
func (c *cgroup) remove() {
	for _, d := range c.dirs {
		pause := 200 * time.Microsecond
		for range 40 {
			if err := os.Remove(d); err == nil || os.IsNotExist(err) {
				break
			}
			time.Sleep(pause)
			pause = min(2*pause, 20*time.Millisecond)
		}
	}
}
