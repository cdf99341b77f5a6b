//go:build linux && !norma_init

package sandbox

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestEmbeddedInitIsCurrent rebuilds the slim init with the flags of the
// go:generate line in initexe_linux.go and requires the embedded copy to
// be byte for byte what the sources build (the build is reproducible), so
// that no test and no binary runs a stale init. On failure: run
// `go generate ./sandbox` and commit sandbox/initexe/norma-sandbox-init.
func TestEmbeddedInitIsCurrent(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary")
	}
	out := filepath.Join(t.TempDir(), "norma-sandbox-init")
	build := exec.Command("go", "build", "-trimpath", "-buildvcs=false", "-tags", "norma_init",
		"-ldflags=-s -w -buildid=", "-o", out, "./initexe")
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64", "GOFLAGS=")
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the slim init: %v\n%s", err, b)
	}
	fresh, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(initExe) == 0 {
		t.Fatal("no slim init is embedded")
	}
	if !bytes.Equal(fresh, initExe) {
		t.Fatalf("the embedded slim init (%d bytes) is not what the sources build (%d bytes): run `go generate ./sandbox`", len(initExe), len(fresh))
	}
}

// TestEmbeddedInitCannotBeSwapped attacks the memfd the init is executed
// from, through its descriptor and through /proc/self/fd: every write,
// truncation, growth and seal removal fails, and the bytes stay the
// embedded ones.
func TestEmbeddedInitCannotBeSwapped(t *testing.T) {
	path := embeddedInit()
	if path == "" {
		t.Fatal("the embedded slim init is not available")
	}
	var fd int
	if _, err := fmt.Sscanf(path, "/proc/self/fd/%d", &fd); err != nil {
		t.Fatalf("path %q: %v", path, err)
	}
	evil := []byte("#!/bin/sh\necho pwned\n")
	if _, err := unix.Pwrite(fd, evil, 0); !errors.Is(err, unix.EPERM) {
		t.Errorf("pwrite on the sealed memfd: %v, want EPERM", err)
	}
	if err := unix.Ftruncate(fd, 0); !errors.Is(err, unix.EPERM) {
		t.Errorf("ftruncate to 0: %v, want EPERM", err)
	}
	if err := unix.Ftruncate(fd, int64(len(initExe))+4096); !errors.Is(err, unix.EPERM) {
		t.Errorf("ftruncate to grow: %v, want EPERM", err)
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_FUTURE_WRITE); !errors.Is(err, unix.EPERM) {
		t.Errorf("adding a seal after F_SEAL_SEAL: %v, want EPERM", err)
	}
	if f, err := os.OpenFile(path, os.O_RDWR, 0); err == nil {
		_, werr := f.WriteAt(evil, 0)
		f.Close()
		if werr == nil {
			t.Error("writing through a reopened /proc/self/fd path succeeded")
		}
	} else if !errors.Is(err, unix.EPERM) && !errors.Is(err, unix.EACCES) {
		t.Errorf("reopen for writing: %v", err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, initExe) {
		t.Fatal("the memfd no longer holds the embedded init")
	}
}

// TestLoadSeccompRefusesMissingFilter: an init given no filter, or a
// truncated one, fails instead of running the target unfiltered. Every case
// is refused before the seccomp(2) call, so this thread stays unfiltered.
func TestLoadSeccompRefusesMissingFilter(t *testing.T) {
	good, err := seccompFilter(false)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		raw  []byte
	}{
		{"none", nil},
		{"truncated", good[:len(good)-3]},
		{"too long", make([]byte, (bpfMaxInsns+1)*sockFilterSize)},
	} {
		if err := loadSeccomp(tt.raw); err == nil {
			t.Fatalf("%s: loadSeccomp accepted it", tt.name)
		}
	}
	var mode int
	if b, err := os.ReadFile("/proc/thread-self/status"); err == nil {
		for _, l := range bytes.Split(b, []byte("\n")) {
			if v, ok := bytes.CutPrefix(l, []byte("Seccomp:\t")); ok {
				fmt.Sscanf(string(v), "%d", &mode)
			}
		}
	}
	if mode != 0 {
		t.Fatalf("a refused filter left this thread in seccomp mode %d", mode)
	}
}
