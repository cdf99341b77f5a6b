package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/zip"
)

// normaModule is Norma's module path, as an importing program requires it.
const normaModule = "github.com/norma-run/norma"

// testVersion is the version the test publishes this tree as. Nothing
// real has it: the test's proxy serves it, and the module cache it
// downloads into is the test's own.
const testVersion = "v0.0.1-embedtest"

// TestEmbedModule proves that Norma can be imported: a program in a module
// of its own (example.com/embedder) whose main.go is this example's,
// requiring Norma by its module path, builds and prints what TestEmbedRuns
// expects. Only the main module's replace directives apply, so a replace in
// Norma's go.mod (a patched dependency) would not reach the embedder: with
// one, Norma would build here and fail there. No network: the go command's
// proxy is a file:// directory holding a hard-linked copy of this user's
// module download cache and a module zip of this tree's tracked files
// (git ls-files; bench/ is a module of its own), as the Go proxy would serve
// a release.
func TestEmbedModule(t *testing.T) {
	if testing.Short() {
		t.Skip("builds Norma in a module of its own: not in -short")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	goEnv := func(name string) string {
		out, err := exec.Command(goBin, "env", name).Output()
		if err != nil {
			t.Fatalf("go env %s: %v", name, err)
		}
		return strings.TrimSpace(string(out))
	}
	base := t.TempDir()
	proxy := filepath.Join(base, "proxy")
	if out, err := exec.Command("cp", "-al", filepath.Join(goEnv("GOMODCACHE"), "cache", "download"), proxy).CombinedOutput(); err != nil {
		t.Skipf("no module download cache to serve offline (cp -al: %v: %s)", err, out)
	}
	publish(t, root, proxy)

	// The embedder: a module of its own, with this example as its main.go.
	mod := filepath.Join(base, "embedder")
	if err := os.Mkdir(mod, 0o755); err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	gomod := fmt.Sprintf("module example.com/embedder\n\ngo %s\n\nrequire %s %s\n", goDirective(t, root), normaModule, testVersion)
	for name, data := range map[string][]byte{"go.mod": []byte(gomod), "main.go": src} {
		if err := os.WriteFile(filepath.Join(mod, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	env := append(os.Environ(),
		"GOPROXY=file://"+filepath.ToSlash(proxy), "GOSUMDB=off", "GONOSUMDB=", "GOPRIVATE=", "GONOPROXY=", "GOINSECURE=",
		"GOWORK=off", "GOTOOLCHAIN=local", "GOFLAGS=-mod=mod -modcacherw -trimpath", "CGO_ENABLED=0",
		// A module cache of the test's own, so that this tree's zip is
		// never kept under the version's name; the build cache is the
		// user's, so that the dependencies compile once.
		"GOMODCACHE="+filepath.Join(base, "modcache"), "GOCACHE="+goEnv("GOCACHE"),
	)
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(t.Context(), goBin, args...)
		cmd.Dir, cmd.Env = mod, env
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go %s in a module requiring %s %s: %v\n%s%s", strings.Join(args, " "), normaModule, testVersion, err, out, stderr.String())
		}
		return string(out)
	}
	run("mod", "tidy")
	if got, want := run("run", "."), wantOutput(); got != want {
		t.Errorf("the example in a module of its own printed:\n%s\nwant:\n%s", got, want)
	}
}

// publish writes this tree's tracked files as module normaModule at
// testVersion into the file proxy dir: the .info, .mod and .zip the go
// command asks a proxy for. Files of the hard-linked cache are never
// written to, only replaced.
func publish(t *testing.T, root, proxy string) {
	t.Helper()
	ls := exec.Command("git", "ls-files", "-z")
	ls.Dir = root
	out, err := ls.Output()
	if err != nil {
		t.Skipf("not a git checkout (git ls-files: %v): nothing to publish", err)
	}
	tree := filepath.Join(t.TempDir(), "norma")
	n := 0
	for _, name := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		if name == "" || name == "bench" || strings.HasPrefix(name, "bench/") {
			continue
		}
		fi, err := os.Lstat(filepath.Join(root, name))
		if err != nil || !fi.Mode().IsRegular() {
			continue // deleted in the working tree, or a link (not module content)
		}
		if err := copyFile(filepath.Join(root, name), filepath.Join(tree, name)); err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n == 0 {
		t.Fatal("git ls-files listed no file")
	}
	var z bytes.Buffer
	if err := zip.CreateFromDir(&z, module.Version{Path: normaModule, Version: testVersion}, tree); err != nil {
		// The go command makes the same zip of a release (proxy or
		// direct): a file it refuses makes Norma impossible to require.
		t.Fatalf("Norma cannot be published as a module: %v", err)
	}
	gomod, err := os.ReadFile(filepath.Join(tree, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	info, _ := json.Marshal(struct {
		Version string
		Time    time.Time
	}{testVersion, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)})
	esc, err := module.EscapePath(normaModule)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(proxy, filepath.FromSlash(esc), "@v")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for ext, data := range map[string][]byte{".info": info, ".mod": gomod, ".zip": z.Bytes()} {
		p := filepath.Join(dir, testVersion+ext)
		os.Remove(p) // a hard link into the user's cache is replaced, not written through
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// goDirective is the go version Norma's go.mod states, which the
// embedder's go.mod needs at least.
func goDirective(t *testing.T, root string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := modfile.ParseLax("go.mod", data, nil)
	if err != nil || f.Go == nil {
		t.Fatalf("Norma's go.mod: no go directive (%v)", err)
	}
	return f.Go.Version
}

func copyFile(from, to string) error {
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return err
	}
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
