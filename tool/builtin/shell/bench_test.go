package shell

import (
	"slices"
	"strings"
	"testing"

	"github.com/norma-run/norma/manifest"
	"github.com/norma-run/norma/sandbox"
	"github.com/norma-run/norma/sandbox/sandboxpolicy"
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

// layers are the candidates the process capability proposes for every
// command: the manifest's directories and the workspace root.
func layers(b *testing.B) []manifest.Permissions {
	b.Helper()
	man, err := manifest.Parse("manifest.yaml", []byte(testManifest))
	if err != nil {
		b.Fatal(err)
	}
	root := manifest.Permissions{Filesystem: &manifest.Filesystem{
		Read: []string{manifest.WorkspaceScheme + "."}, Write: []string{manifest.WorkspaceScheme + "."}}}
	return []manifest.Permissions{man.Permissions, root}
}

// BenchmarkSandboxPaths isolates the policy-to-mounts derivation that every
// call performs (sandboxpolicy.Derive, through the process capability).
func BenchmarkSandboxPaths(b *testing.B) {
	f := newFixture(b, fixtureOpts{})
	ls := layers(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := sandboxpolicy.Derive(b.Context(), f.ws, f.set, sandboxpolicy.Protected{}, ls...); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSandboxTrue is the floor: sandbox.Run of /bin/true with the same
// grants, without the tool, the policy derivation or a shell.
func BenchmarkSandboxTrue(b *testing.B) {
	requireSandbox(b)
	f := newFixture(b, fixtureOpts{})
	p, err := sandboxpolicy.Derive(b.Context(), f.ws, f.set, sandboxpolicy.Protected{}, layers(b)...)
	if err != nil {
		b.Fatal(err)
	}
	spec := sandbox.Spec{Argv: []string{"/bin/true"}, Dir: f.ws, ReadOnly: p.ReadOnly, ReadWrite: p.ReadWrite,
		Deny: p.Deny, Env: []string{"PATH=/usr/bin:/bin"}}
	if !slices.Contains(p.ReadWrite, f.ws) {
		spec.Dir = "/tmp"
	}
	var r sandbox.Runner
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.Run(b.Context(), spec); err != nil {
			b.Fatal(err)
		}
	}
}
