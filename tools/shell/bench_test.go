package shell

import (
	"strings"
	"testing"
)

// BenchmarkBashTrue is the launch latency of a trivial foreground Bash
// call through the tool (not the gate): deriving the sandbox's view of the
// workspace from the policy, building the sandbox, running `true`,
// tearing it down.
func BenchmarkBashTrue(b *testing.B) {
	requireSandbox(b)
	f := newFixture(b, fixtureOpts{})
	b.ReportAllocs()
	for b.Loop() {
		res, err := f.call(b, "Bash", map[string]any{"command": "true"})
		if err != nil || !strings.Contains(res.Content, "[exit code 0]") {
			b.Fatalf("Bash(true) = %q, %v", res.Content, err)
		}
	}
}

// BenchmarkSandboxPaths isolates the policy-to-mounts derivation that every
// call performs (sandboxpolicy.Derive, through Manager.spec).
func BenchmarkSandboxPaths(b *testing.B) {
	f := newFixture(b, fixtureOpts{})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := f.m.spec(b.Context(), []string{"true"}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSandboxTrue is the floor: sandbox.Run of /bin/true with the same
// grants, without the tool or a shell.
func BenchmarkSandboxTrue(b *testing.B) {
	requireSandbox(b)
	f := newFixture(b, fixtureOpts{})
	spec, err := f.m.spec(b.Context(), []string{"/bin/true"})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := f.m.cfg.Runner.Run(b.Context(), spec); err != nil {
			b.Fatal(err)
		}
	}
}
