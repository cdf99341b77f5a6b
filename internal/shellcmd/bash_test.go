package shellcmd

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/norma-run/norma/internal/command"
)

// The differential test runs real bash on a command and compares what it
// executed with what Parse reported. Every program bash finds on PATH is a
// shim that records the directory it runs in, its name and its arguments;
// a wrapper shim (env, xargs, find, bash, ...) records and then runs the
// real program, so what that runs is recorded too.

const bashPath = "/bin/bash"

// plainShims record and exit 0; wrapperShims record and exec the program.
var (
	plainShims   = []string{"a", "b", "c", "git", "rm", "ls", "cat", "id", "go", "make", "gofmt", "grep", "echo", "printf", "true", "test", "[", "sudo", "touch"}
	wrapperShims = map[string]string{
		"env": "/usr/bin/env", "xargs": "/usr/bin/xargs", "find": "/usr/bin/find", "nice": "/usr/bin/nice",
		"timeout": "/usr/bin/timeout", "nohup": "/usr/bin/nohup", "stdbuf": "/usr/bin/stdbuf",
		"bash": bashPath, "sh": "/bin/sh",
	}
)

// bashBox is the directory tree of one test process: shims, a log
// directory and a work directory, emptied before each run.
type bashBox struct {
	root, bin, log, work string
	mu                   sync.Mutex
}

var (
	boxOnce sync.Once
	box     *bashBox
	boxErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if box != nil {
		os.RemoveAll(box.root)
	}
	os.Exit(code)
}

// getBox makes the shims once per process. When the test runs as root,
// bash runs as nobody (it then cannot write outside the box or signal
// other processes, and RLIMIT_NPROC bounds it), so the box is readable by
// all. As another user a generated command runs as that user, in the box
// directory; the seed corpus writes nothing outside it.
func getBox(t testing.TB) *bashBox {
	if _, err := os.Stat(bashPath); err != nil {
		t.Skip("no /bin/bash")
	}
	boxOnce.Do(func() {
		root, err := os.MkdirTemp("", "shellcmd-bash-")
		if err == nil {
			// $PWD in the shims is the real path.
			root, err = filepath.EvalSymlinks(root)
		}
		if err != nil {
			boxErr = err
			return
		}
		b := &bashBox{root: root, bin: filepath.Join(root, "bin"), log: filepath.Join(root, "log"), work: filepath.Join(root, "work")}
		for _, d := range []string{b.bin, b.log, b.work} {
			if err := os.Mkdir(d, 0o777); err != nil {
				boxErr = err
				return
			}
		}
		os.Chmod(root, 0o755)
		os.Chmod(b.log, 0o777)
		os.Chmod(b.work, 0o777)
		rec := `printf '%s\0' "$#" "$PWD" "${0##*/}" "$@" >>"` + b.log + `/$$"` + "\n"
		write := func(name, tail string) {
			if boxErr == nil {
				boxErr = os.WriteFile(filepath.Join(b.bin, name), []byte("#!/bin/sh\n"+rec+tail), 0o755)
			}
		}
		for _, n := range plainShims {
			write(n, "exit 0\n")
		}
		for n, real := range wrapperShims {
			tail := `exec ` + real + ` "$@"` + "\n"
			if n == "bash" || n == "sh" {
				// A shell running a file or its input runs what the
				// command line does not show: the request for the shell
				// stands for it, so its programs are not traced.
				tail = `keep=
for a in "$@"; do case "$a" in -*c*) keep=1; break;; -*|+*) ;; *) break;; esac; done
[ -n "$keep" ] || PATH=/nonexistent
export PATH
` + tail
			}
			write(n, tail)
		}
		box = b
	})
	if boxErr != nil {
		t.Fatal(boxErr)
	}
	return box
}

// execution is a program bash executed from PATH: its argv, and the
// directory it ran in relative to the work directory ("." for it; the
// absolute path when outside).
type execution struct {
	dir  string
	argv []string
}

// run runs cmd with bash -c in the box, whose work directory holds the
// directories dirs (made anew for each run), and returns every program it
// executed from PATH.
func (b *bashBox) run(t testing.TB, cmd string, dirs ...string) []execution {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, d := range []string{b.log, b.work} {
		ents, _ := os.ReadDir(d)
		for _, e := range ents {
			os.RemoveAll(filepath.Join(d, e.Name()))
		}
	}
	for _, d := range dirs {
		if err := os.MkdirAll(filepath.Join(b.work, d), 0o777); err != nil {
			t.Fatal(err)
		}
		os.Chmod(filepath.Join(b.work, d), 0o777)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	argv := []string{bashPath, "-c", cmd}
	c := exec.CommandContext(ctx, argv[0], argv[1:]...)
	c.Dir = b.work
	c.Env = []string{"PATH=" + b.bin, "HOME=" + b.work, "LANG=C"}
	c.Stdin = nil
	var out bytes.Buffer
	c.Stdout, c.Stderr = &out, &out
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if os.Getuid() == 0 {
		c.SysProcAttr.Credential = &syscall.Credential{Uid: 65534, Gid: 65534}
		c.SysProcAttr.Pdeathsig = syscall.SIGKILL
	}
	c.Cancel = func() error { return syscall.Kill(-c.Process.Pid, syscall.SIGKILL) }
	c.WaitDelay = time.Second
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	if os.Getuid() == 0 {
		// Bound the processes of the user nobody: a fork bomb stays small.
		_ = unix.Prlimit(c.Process.Pid, unix.RLIMIT_NPROC, &unix.Rlimit{Cur: 256, Max: 256}, nil)
	}
	_ = c.Wait()
	syscall.Kill(-c.Process.Pid, syscall.SIGKILL) // background jobs
	return readLogs(t, b.log, b.work)
}

// readLogs parses the shims' records: count, directory, name, then count
// arguments, each NUL-terminated.
func readLogs(t testing.TB, dir, work string) []execution {
	var recs []execution
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		f := strings.Split(string(data), "\x00")
		for len(f) > 3 {
			n, err := strconv.Atoi(f[0])
			if err != nil || len(f) < n+3 {
				break // a record cut short (a killed shim)
			}
			d := f[1]
			if rel, err := filepath.Rel(work, d); err == nil && filepath.IsLocal(rel) {
				d = rel
			}
			recs = append(recs, execution{dir: d, argv: slices.Clone(f[2 : n+3])})
			f = f[n+3:]
		}
	}
	return recs
}

// matches reports whether a reported spawn describes an executed argv: a
// literal word equals its word, dynamicWord stands for one word,
// dynamicWords for any number. The spawn's program may be a path.
func matches(spawn, argv []string) bool {
	if len(spawn) == 0 || len(argv) == 0 {
		return len(spawn) == len(argv)
	}
	if spawn[0] != argv[0] && !isDynamic(spawn[0]) && filepath.Base(spawn[0]) != argv[0] {
		return false
	}
	return matchWords(spawn[1:], argv[1:])
}

func matchWords(p, w []string) bool {
	if len(p) == 0 {
		return len(w) == 0
	}
	switch {
	case command.IsWords(p[0]):
		for i := 0; i <= len(w); i++ {
			if matchWords(p[1:], w[i:]) {
				return true
			}
		}
		return false
	case p[0] == dynamicWord:
		return len(w) > 0 && matchWords(p[1:], w[1:])
	}
	if isDynamic(p[0]) {
		return len(w) > 0 && matchWords(p[1:], w[1:]) // NAME=<computed>
	}
	return len(w) > 0 && p[0] == w[0] && matchWords(p[1:], w[1:])
}

// checkBash runs cmd in real bash and fails when bash executed a program
// that Parse did not report, unless Parse said it cannot know.
func checkBash(t *testing.T, cmd string) {
	fx := Parse(cmd)
	if fx.Unknown != "" {
		return
	}
	if len(cmd) > 2000 {
		return
	}
	for _, x := range getBox(t).run(t, cmd) {
		if !slices.ContainsFunc(fx.Spawns, func(s []string) bool { return matches(s, x.argv) }) {
			t.Errorf("bash -c %q executed %q, which Parse did not report (spawns %q)", cmd, x.argv, fx.Spawns)
		}
	}
}

// FuzzBashDifferential: for any command the analyzer calls analyzable,
// every program real bash executes is one it reported. The seed corpus
// (testdata/fuzz/FuzzBashDifferential) runs in every go test; a campaign:
//
//	go test -run '^$' -fuzz FuzzBashDifferential -fuzztime 5m ./internal/shellcmd
func FuzzBashDifferential(f *testing.F) {
	for _, s := range []string{"git status", "a; b | c && id"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, cmd string) {
		checkBash(t, cmd)
	})
}

// TestBashShims: the recording works: a plain command, a wrapper's inner
// command and a command substitution are all seen, each in the directory
// it ran in.
func TestBashShims(t *testing.T) {
	ran := getBox(t).run(t, `git status; env rm -f x; echo "$(id -u)"; cd sub && cat y`, "sub")
	var names []string
	for _, r := range ran {
		names = append(names, r.dir+": "+strings.Join(r.argv, " "))
	}
	slices.Sort(names)
	want := []string{".: env rm -f x", ".: git status", ".: id -u", ".: rm -f x", "sub: cat y"}
	if !slices.Equal(names, want) {
		t.Fatalf("recorded %q; want %q", names, want)
	}
}
