package sandboxpolicy

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/norma-run/norma/manifest"
	"github.com/norma-run/norma/policy"
	"github.com/norma-run/norma/sandbox/sandboxtest"
	"github.com/norma-run/norma/tool"
)

// denyWriteRunner returns a Runner over a new workspace that setup
// prepared, under a run's built-in policy (the whole workspace) and a
// workspace layer whose floor denies reading secret.txt and anything
// under protected/private, and writing protected/ (the globs runtime
// makes of deny: Read(./secret.txt), Read(./protected/private/**) and
// Edit(./protected/**)).
func denyWriteRunner(t *testing.T, setup func(ws string)) *Runner {
	t.Helper()
	ws := t.TempDir()
	setup(ws)
	m, err := manifest.Parse("manifest.yaml", []byte(manifestHead+"    read: [workspace://**]\n    write: [workspace://**]\n"))
	if err != nil {
		t.Fatal(err)
	}
	hidden, readOnly := policy.DenyGlobs([]string{"Read(./secret.txt)", "Read(./protected/private/**)", "Edit(./protected/**)"})
	wl := &manifest.Layer{SchemaVersion: 2, Kind: manifest.KindWorkspace,
		Permissions: manifest.Permissions{Filesystem: &manifest.Filesystem{Deny: hidden, DenyWrite: readOnly}}}
	set, err := policy.Compile(policy.Inputs{Manifest: m, Workspace: wl, Host: policy.Host{Sandbox: true}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewRunner(RunnerConfig{Workspace: ws, Policy: set,
		Layers: []manifest.Permissions{m.Permissions, wl.Permissions, RootCandidate}})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestDeriveFreezesWriteDenied: a path the policy lets be read but not
// written (deny_write) is frozen, not hidden; a read-denied path under
// it is still hidden, and a hard link elsewhere to a frozen file is
// frozen too.
func TestDeriveFreezesWriteDenied(t *testing.T) {
	r := denyWriteRunner(t, func(ws string) {
		write(t, filepath.Join(ws, "protected/a.txt"), "a\n")
		write(t, filepath.Join(ws, "protected/private/k"), "k\n")
		write(t, filepath.Join(ws, "secret.txt"), "s\n")
		write(t, filepath.Join(ws, "src/main.go"), "package main\n")
		if err := os.Link(filepath.Join(ws, "protected/a.txt"), filepath.Join(ws, "src/a-link.txt")); err != nil {
			t.Fatal(err)
		}
	})
	p, err := Derive(t.Context(), r.ws, r.cfg.Policy, r.prot, r.cfg.Layers...)
	if err != nil {
		t.Fatal(err)
	}
	abs := func(rel ...string) []string {
		var out []string
		for _, x := range rel {
			out = append(out, filepath.Join(r.ws, x))
		}
		return out
	}
	if want := abs("."); !slices.Equal(p.ReadWrite, want) {
		t.Errorf("ReadWrite = %q, want %q", p.ReadWrite, want)
	}
	slices.Sort(p.Deny)
	if want := abs("protected/private", "secret.txt"); !slices.Equal(p.Deny, want) {
		t.Errorf("Deny = %q, want %q", p.Deny, want)
	}
	for _, f := range abs("protected", "src/a-link.txt") {
		if !slices.Contains(p.Freeze, f) {
			t.Errorf("Freeze = %q, want it to hold %s", p.Freeze, f)
		}
	}
	for _, f := range abs("src", "src/main.go", "protected/a.txt") {
		if slices.Contains(p.Freeze, f) {
			t.Errorf("Freeze = %q holds %s", p.Freeze, f)
		}
	}
}

// TestWriteDeniedStaysReadOnly: in the sandbox a Runner builds, every
// attempt to write, create, remove or move what a Write or Edit deny
// names fails and changes nothing on the host, while reading it works and
// a read-denied file under it stays hidden. Each attack is first run
// without the sandbox on a copy, to show that it is real there.
func TestWriteDeniedStaysReadOnly(t *testing.T) {
	sandboxtest.Require(t)
	const canary = "canary-denywrite-5e1f"
	r := denyWriteRunner(t, func(ws string) {
		write(t, filepath.Join(ws, "protected/a"), "original\n")
		write(t, filepath.Join(ws, "protected/private/k"), canary+"\n")
		write(t, filepath.Join(ws, "README.md"), "readme\n")
	})
	ws := r.ws
	bash := func(script string) (string, string, int) {
		t.Helper()
		res, err := r.Run(t.Context(), tool.Command{Argv: []string{"/bin/bash", "--norc", "--noprofile", "-c", script}})
		if err != nil {
			t.Fatalf("Run(%q): %v", script, err)
		}
		return string(res.Stdout), string(res.Stderr), res.ExitCode
	}
	for _, script := range []string{
		"d=protected; echo x > $d/a",
		"d=protected; echo x > $d/new",
		"cp README.md protected/c.txt",
		"tee protected/d.txt < README.md",
		"rm -f protected/a",
		"mv protected/a a2",
		"mv protected p2 && mkdir protected && echo x > protected/a",
		"sed -i s/original/changed/ protected/a",
		"mkdir protected/sub",
		"ln README.md protected/l",
	} {
		cp := t.TempDir()
		if out, err := exec.Command("cp", "-a", ws+"/.", cp).CombinedOutput(); err != nil {
			t.Fatalf("cp: %v %s", err, out)
		}
		ctl := exec.Command("/bin/bash", "--norc", "--noprofile", "-c", script)
		ctl.Dir = cp
		if out, err := ctl.CombinedOutput(); err != nil {
			t.Fatalf("unconfined %q failed (%v, %s): the attack is not real", script, err, out)
		}
		out, errOut, code := bash(script)
		if code == 0 {
			t.Errorf("%q succeeded in the sandbox: %q %q", script, out, errOut)
		}
		if b, err := os.ReadFile(filepath.Join(ws, "protected/a")); err != nil || string(b) != "original\n" {
			t.Fatalf("%q: protected/a = %q, %v on the host", script, b, err)
		}
		ents, _ := os.ReadDir(filepath.Join(ws, "protected"))
		if len(ents) != 2 {
			t.Fatalf("%q: protected/ holds %v on the host", script, ents)
		}
		// (mv may leave a copy at its destination: a read, which the
		// deny allows.)
	}
	// Reading works; the read-denied file under the frozen directory
	// stays hidden.
	out, errOut, code := bash("cat protected/a; ls protected")
	if code != 0 || !strings.Contains(out, "original") {
		t.Errorf("reading protected/a: exit %d, %q %q", code, out, errOut)
	}
	out, errOut, _ = bash("cat protected/private/k; ls -la protected/private")
	if strings.Contains(out+errOut, canary) {
		t.Errorf("a hidden file showed through a frozen directory: %q %q", out, errOut)
	}
	// Writing elsewhere works.
	if out, errOut, code := bash("echo hi > new.txt"); code != 0 {
		t.Errorf("echo hi > new.txt: exit %d, %q %q", code, out, errOut)
	}
}
