package sandbox_test

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/norma-run/norma/sandbox"
	"github.com/norma-run/norma/sandbox/sandboxpolicy"
)

// BenchmarkLaunchTrue measures a complete sandboxed run of /bin/true from a
// long-running parent: namespaces, minimal root, Landlock, seccomp, exec,
// wait.
func BenchmarkLaunchTrue(b *testing.B) {
	requireSandbox(b)
	b.ReportAllocs()
	s := sandbox.Spec{Argv: []string{"/bin/true"}}
	for b.Loop() {
		res, err := sandbox.Run(b.Context(), s)
		if err != nil || res.ExitCode != 0 {
			b.Fatalf("Run(true) = %+v, %v", res, err)
		}
	}
}

// BenchmarkBwrapTrue is the reference: bubblewrap with all namespaces
// unshared and a comparable minimal root. It is skipped when bwrap is not
// installed (sandbox/bench.sh installs it).
func BenchmarkBwrapTrue(b *testing.B) {
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		b.Skip("bwrap not installed (run sandbox/bench.sh)")
	}
	args := []string{"--unshare-all", "--die-with-parent",
		"--ro-bind", "/usr", "/usr",
		"--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64",
		"--symlink", "usr/bin", "/bin", "--symlink", "usr/sbin", "/sbin",
		"--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp",
		"--new-session", "--clearenv",
		"/bin/true"}
	if err := exec.Command(bwrap, args...).Run(); err != nil {
		b.Skipf("bwrap cannot run here: %v", err)
	}
	b.ReportAllocs()
	for b.Loop() {
		cmd := exec.Command(bwrap, args...)
		cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
		if err := cmd.Run(); err != nil {
			b.Fatalf("bwrap: %v", err)
		}
	}
}

// BenchmarkLaunchTrueDefaultLimits is BenchmarkLaunchTrue with the limits
// every Bash command and plugin gets (sandboxpolicy.DefaultLimits): as
// root, the process and memory bounds add a per-run cgroup.
func BenchmarkLaunchTrueDefaultLimits(b *testing.B) {
	requireSandbox(b)
	b.ReportAllocs()
	s := sandbox.Spec{Argv: []string{"/bin/true"}, Limits: sandboxpolicy.DefaultLimits}
	for b.Loop() {
		res, err := sandbox.Run(b.Context(), s)
		if err != nil || res.ExitCode != 0 {
			b.Fatalf("Run(true) = %+v, %v", res, err)
		}
	}
}

// BenchmarkLaunchPins is the cost of the pins (Spec.Pin, one recursive
// self bind mount each) on a launch: /bin/true with a read-write
// workspace grant and 0, 8, 32 or 256 pinned directories.
func BenchmarkLaunchPins(b *testing.B) {
	requireSandbox(b)
	ws := b.TempDir()
	var pins []string
	for i := range 256 {
		d := filepath.Join(ws, fmt.Sprintf("d%02d", i))
		if err := os.Mkdir(d, 0o755); err != nil {
			b.Fatal(err)
		}
		pins = append(pins, d)
	}
	for _, n := range []int{0, 8, 32, 256} {
		b.Run(fmt.Sprintf("pins=%d", n), func(b *testing.B) {
			s := sandbox.Spec{Argv: []string{"/bin/true"}, ReadWrite: []string{ws}, Pin: pins[:n]}
			b.ReportAllocs()
			for b.Loop() {
				res, err := sandbox.Run(b.Context(), s)
				if err != nil || res.ExitCode != 0 {
					b.Fatalf("Run(true) = %+v, %v", res, err)
				}
			}
		})
	}
}
