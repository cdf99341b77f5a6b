package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/norma-run/norma/sandbox/sandboxtest"
)

// nobody is the unprivileged user the demo runs as when the tests run as
// root.
const nobody = 65534

// demoResult is one run of `norma demo --yes --json` through the door,
// shared by the tests that read it (the demo takes seconds).
var demoResult struct {
	once             sync.Once
	code             int
	out, errs, as    string
	err              error
	unprivilegedNote string
}

// runDemo runs the built demo once per test process: as the unprivileged
// user nobody when the tests run as root (it must need no privilege: its
// issue API is on a high port, mapped from :443 by its resolver), as the
// current user otherwise. If nobody cannot use the OS sandbox on this
// machine, it runs as root instead and says so in the log.
func runDemo(t *testing.T) (code int, stdout, stderr string) {
	t.Helper()
	sandboxtest.Require(t)
	demoResult.once.Do(func() {
		root, err := filepath.Abs("../..")
		if err != nil {
			demoResult.err = err
			return
		}
		if os.Geteuid() == 0 {
			cmd, cleanup, err := nobodyDemo(t, root)
			if err != nil {
				demoResult.unprivilegedNote = "cannot run as nobody: " + err.Error()
			} else {
				defer cleanup()
				demoResult.code, demoResult.out, demoResult.errs = doorCmd(t, cmd)
				demoResult.as = "nobody"
				if !strings.Contains(demoResult.errs, "needs the OS sandbox") {
					return
				}
				demoResult.unprivilegedNote = "nobody cannot use the OS sandbox here:\n" + demoResult.errs
			}
		}
		cmd := exec.Command(normaBin(t), "demo", "--yes", "--json")
		cmd.Dir = root
		demoResult.code, demoResult.out, demoResult.errs = doorCmd(t, cmd)
		demoResult.as = "self"
	})
	if demoResult.err != nil {
		t.Fatal(demoResult.err)
	}
	if demoResult.unprivilegedNote != "" {
		t.Logf("the demo ran as root: %s", demoResult.unprivilegedNote)
	}
	return demoResult.code, demoResult.out, demoResult.errs
}

// nobodyDemo prepares the demo to run as nobody with a writable HOME and
// TMPDIR of its own. The demo builds the example plugins with the go
// command, so nobody gets a build cache (kept across test runs, under the
// temporary directory) and a module proxy: a hard-linked copy of this
// user's module download cache (GOPROXY=file://..., nothing is fetched).
func nobodyDemo(t *testing.T, root string) (*exec.Cmd, func(), error) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		return nil, nil, err
	}
	modCache, err := exec.Command(goBin, "env", "GOMODCACHE").Output()
	if err != nil {
		return nil, nil, err
	}
	base := filepath.Join(os.TempDir(), "norma-door-nobody")
	if fi, err := os.Lstat(base); err == nil {
		if st, ok := fi.Sys().(*syscall.Stat_t); !fi.IsDir() || !ok || st.Uid != nobody {
			if err := os.RemoveAll(base); err != nil {
				return nil, nil, err
			}
		}
	}
	if err := os.MkdirAll(base, 0o700); err != nil {
		return nil, nil, err
	}
	if err := os.Chown(base, nobody, nobody); err != nil {
		return nil, nil, err
	}
	run, err := os.MkdirTemp(base, "run-")
	if err != nil {
		return nil, nil, err
	}
	cleanup := func() { os.RemoveAll(run) }
	fail := func(err error) (*exec.Cmd, func(), error) { cleanup(); return nil, nil, err }
	home := filepath.Join(run, "home")
	proxy := filepath.Join(run, "proxy")
	if err := os.Mkdir(home, 0o700); err != nil {
		return fail(err)
	}
	if out, err := exec.Command("cp", "-al", filepath.Join(strings.TrimSpace(string(modCache)), "cache", "download"), proxy).CombinedOutput(); err != nil {
		return fail(fmt.Errorf("copy the module cache: %v: %s", err, out))
	}
	// The binary as installed, in a directory nobody may write to.
	norma := filepath.Join(run, "norma")
	bin, err := os.ReadFile(normaBin(t))
	if err != nil {
		return fail(err)
	}
	if err := os.WriteFile(norma, bin, 0o755); err != nil {
		return fail(err)
	}
	for _, p := range []string{run, home} {
		if err := os.Chown(p, nobody, nobody); err != nil {
			return fail(err)
		}
	}
	cmd := exec.Command(norma, "demo", "--yes", "--json")
	cmd.Dir = root
	cmd.Env = []string{
		"PATH=" + filepath.Dir(goBin) + ":/usr/bin:/bin", "HOME=" + home, "TMPDIR=" + home,
		"GOCACHE=" + filepath.Join(base, "gocache"), "GOMODCACHE=" + filepath.Join(base, "mod"),
		"GOPROXY=file://" + proxy, "GOSUMDB=off", "GOFLAGS=-buildvcs=false", "GOTOOLCHAIN=local",
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody, Groups: []uint32{}}}
	return cmd, cleanup, nil
}

// TestDoorDemo runs the built `norma demo --yes --json` (as nobody when
// the tests run as root: the demo needs no privilege) and checks its
// summary as .ci/run does, its snake_case keys, and that its issue API was
// not on port 443.
func TestDoorDemo(t *testing.T) {
	code, out, errs := runDemo(t)
	if code != 0 {
		t.Fatalf("demo (as %s): exit %d\n%s%s", demoResult.as, code, out, errs)
	}
	var s struct {
		Allowed          int  `json:"allowed"`
		Approved         int  `json:"approved"`
		Denied           int  `json:"denied"`
		Comments         int  `json:"comments"`
		MalloryAttempts  int  `json:"mallory_attempts"`
		MallorySucceeded int  `json:"mallory_succeeded"`
		UpdateHeld       bool `json:"update_held"`
		ChainVerified    bool `json:"chain_verified"`
		Canary           bool `json:"canary"`
		Reasons          []struct {
			Reason string `json:"reason"`
			Count  int    `json:"count"`
		} `json:"reasons"`
		Home string `json:"home"`
	}
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("summary is not JSON: %v\n%s", err, out)
	}
	t.Cleanup(func() { os.RemoveAll(s.Home) })
	if s.Allowed != 4 || s.Approved != 1 || s.Denied != 2 || s.Comments != 1 || s.MalloryAttempts < 15 || s.MallorySucceeded != 0 ||
		!s.UpdateHeld || !s.ChainVerified || s.Canary {
		t.Errorf("summary = %+v\n%s", s, errs)
	}
	reasons := map[string]int{}
	for _, r := range s.Reasons {
		reasons[r.Reason] = r.Count
	}
	if reasons["FILESYSTEM_READ_DENIED"] != 1 || reasons["NETWORK_DESTINATION_DENIED"] != 1 {
		t.Errorf("reasons = %v", s.Reasons)
	}
	checkJSONKeys(t, "demo", out)
	m := regexp.MustCompile(`issue API on https://api\.example\.invalid \(→ 127\.0\.0\.1:(\d+) `).FindStringSubmatch(errs)
	if m == nil || m[1] == "443" {
		t.Errorf("the issue API address is not a high loopback port: %v\n%s", m, errs)
	}
	// The showcase names a plugin tool once, and the built-in tools'
	// refusals their own layer.
	if strings.Contains(errs, "issues.summarize mcp__") || !strings.Contains(errs, "layer builtin") {
		t.Errorf("showcase:\n%s", errs)
	}
	if demoResult.as == "self" && os.Geteuid() == 0 {
		t.Logf("ran as root (see above); the high-port check stands in for the unprivileged run")
	}
}
