package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha1"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
	"golang.org/x/mod/semver"

	"github.com/norma-run/norma/internal/syncbuf"
	"github.com/norma-run/norma/sandbox"
)

// The quick start tests run README.md's quick starts as a newcomer
// pastes them: each block between its <!-- quickstart:NAME --> marker and
// the end of the fenced block after it, unchanged, in bash, in a fresh
// HOME, with standard input on a terminal where every question is answered
// yes. Only the environment is the test's: HOME, PATH, and documented
// variables that keep the go command and npm offline.

// quickStart is the shell block of README.md's quick start name.
func quickStart(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	marker := "<!-- quickstart:" + name + " -->\n```sh\n"
	_, rest, ok := strings.Cut(string(data), marker)
	if !ok {
		t.Fatalf("README.md has no %q followed by a sh block", marker)
	}
	block, _, ok := strings.Cut(rest, "\n```\n")
	if !ok {
		t.Fatalf("README.md: the quick start %s has no end", name)
	}
	return block + "\n"
}

// quickStartPrompts are the questions the quick starts' commands ask on a
// terminal: hook install's and the consent of mcp add, one per group.
var quickStartPrompts = []string{"[y/N] ", "Grant? [y]es all"}

// runQuickStart runs block with bash -e in dir, standard input on a
// pseudo-terminal, and types "y" at each question it asks; it fails the
// test unless the block exits 0. It returns stdout, what the user reads.
func runQuickStart(t *testing.T, block, dir string, env []string) string {
	t.Helper()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	defer ptmx.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bash, "-e", "-x", "-c", block)
	cmd.Dir, cmd.Env = dir, env
	var out, errb syncbuf.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close()
	go io.Copy(io.Discard, ptmx) // the terminal's echo of the answers
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	answered := 0
	for {
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("the quick start failed: %v\n--- block (in %s)\n%s--- stdout\n%s\n--- stderr (bash -x)\n%s", err, dir, block, out.String(), errb.String())
			}
			return out.String()
		case <-time.After(20 * time.Millisecond):
			asked := 0
			for _, p := range quickStartPrompts {
				asked += strings.Count(out.String(), p)
			}
			for ; answered < asked; answered++ {
				if _, err := ptmx.Write([]byte("y\n")); err != nil {
					t.Fatalf("answer: %v", err)
				}
			}
		}
	}
}

// quickStartEnv is a newcomer's environment: HOME, a PATH with first the
// given directory, and nothing of Norma's (no NORMA_HOME, no XDG
// directories, no CLAUDE_CONFIG_DIR): the defaults apply.
func quickStartEnv(t *testing.T, home, first string) []string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	path := first + ":" + filepath.Dir(goBin) + ":/usr/local/bin:/usr/bin:/bin"
	return []string{"HOME=" + home, "PATH=" + path, "LANG=C.UTF-8", "TMPDIR=" + os.TempDir()}
}

// TestQuickStartClaudeCode runs README.md's "Protect Claude Code" quick
// start from the repository's root: scripts/build installs norma in
// ~/.local/bin (first on PATH, as the block asks), the installer shows its
// diff, is answered yes and writes ~/.claude/settings.json, and hook status
// reports the hook installed for every event.
func TestQuickStartClaudeCode(t *testing.T) {
	block := quickStart(t, "claude")
	home := t.TempDir()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	env := quickStartEnv(t, home, filepath.Join(home, ".local", "bin"))
	// The go command as this user has it, offline: the fresh HOME has no
	// build or module cache of its own.
	for _, v := range []string{"GOCACHE", "GOMODCACHE", "GOFLAGS"} {
		out, err := exec.Command("go", "env", v).Output()
		if err != nil {
			t.Fatalf("go env %s: %v", v, err)
		}
		env = append(env, v+"="+strings.TrimSpace(string(out)))
	}
	env = append(env, "GOPROXY=off", "GOTOOLCHAIN=local")

	out := runQuickStart(t, block, root, env)

	norma := filepath.Join(home, ".local", "bin", "norma")
	settings := filepath.Join(home, ".claude", "settings.json")
	if !strings.Contains(out, "wrote "+settings) {
		t.Errorf("the installer did not say it wrote %s:\n%s", settings, out)
	}
	data, err := os.ReadFile(settings)
	if err != nil {
		t.Fatalf("no Claude Code settings after the quick start: %v\n%s", err, out)
	}
	var s struct {
		Hooks map[string][]struct {
			Hooks []struct{ Type, Command string }
		}
	}
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatalf("%s: %v\n%s", settings, err, data)
	}
	for _, event := range []string{"PreToolUse", "PermissionRequest", "PostToolUse", "SessionStart", "SessionEnd"} {
		var cmds []string
		for _, e := range s.Hooks[event] {
			for _, h := range e.Hooks {
				cmds = append(cmds, h.Type+" "+h.Command)
			}
		}
		if want := "command " + norma + " hook claude-code"; len(cmds) != 1 || cmds[0] != want {
			t.Errorf("%s hooks = %q, want [%q]", event, cmds, want)
		}
	}
	if want := settings + ": installed (PreToolUse, PermissionRequest, PostToolUse, SessionStart, SessionEnd)"; !strings.Contains(out, want) {
		t.Errorf("hook status does not show %q:\n%s", want, out)
	}
}

// TestQuickStartMCP runs README.md's "Confine an MCP server" quick start
// in a fresh project: mcp add installs server-filesystem with npm, starts
// it in the sandbox to list its tools, asks consent for each group
// (answered yes), and mcp list and get show the server, pinned, with the
// project as ${workspace}. npm installs from a loopback registry that
// serves the packages of $NORMA_TEST_MCP_FS (npm_config_registry), so
// nothing is fetched.
func TestQuickStartMCP(t *testing.T) {
	requireNPM(t)
	prefix := os.Getenv("NORMA_TEST_MCP_FS")
	if prefix == "" {
		if os.Getenv("NORMA_REQUIRE_SANDBOX") == "1" {
			t.Fatal("NORMA_TEST_MCP_FS is required (.ci/run sets it)")
		}
		t.Skip("NORMA_TEST_MCP_FS is not set (.ci/run installs the npm servers there)")
	}
	if !sandbox.Ready() {
		if os.Getenv("NORMA_REQUIRE_SANDBOX") == "1" {
			t.Fatal("the OS sandbox is required")
		}
		t.Skip("no OS sandbox: mcp add starts the server in it")
	}
	block := quickStart(t, "mcp")
	home, project := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(project, "notes.md"), []byte("# Notes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := quickStartEnv(t, home, filepath.Dir(normaBin(t)))
	env = append(env, "npm_config_registry="+npmRegistry(t, prefix), "npm_config_update_notifier=false")

	out := runQuickStart(t, block, project, env)

	for _, want := range []string{
		"added fs: local.mcp.fs " + mcpServerVersion + " (npm @modelcontextprotocol/server-filesystem, sha512-",
		"fs\tlocal.mcp.fs\t" + mcpServerVersion + "\tuser\tnpm @modelcontextprotocol/server-filesystem@" + mcpServerVersion,
		"mcp__fs__read_text_file",
		"${workspace}",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the quick start's output lacks %q:\n%s", want, out)
		}
	}
	if asked := strings.Count(out, "Grant? [y]es all"); asked == 0 {
		t.Errorf("mcp add asked no consent:\n%s", out)
	}
}

// npmRegistry serves, on loopback, the npm packages installed under
// prefix/node_modules (nested ones too) as a registry does: a packument
// per name with every version found, and a tarball per version made from
// its directory. It returns the registry's URL.
func npmRegistry(t *testing.T, prefix string) string {
	t.Helper()
	type pkg struct{ dir, name, version string }
	byName := map[string][]pkg{}
	var walk func(nm string)
	add := func(dir string) {
		var pj struct{ Name, Version string }
		if b, err := os.ReadFile(filepath.Join(dir, "package.json")); err == nil && json.Unmarshal(b, &pj) == nil && pj.Name != "" && pj.Version != "" {
			byName[pj.Name] = append(byName[pj.Name], pkg{dir, pj.Name, pj.Version})
		}
		walk(filepath.Join(dir, "node_modules"))
	}
	walk = func(nm string) {
		entries, _ := os.ReadDir(nm)
		for _, e := range entries {
			switch {
			case !e.IsDir() || strings.HasPrefix(e.Name(), "."):
			case strings.HasPrefix(e.Name(), "@"):
				scoped, _ := os.ReadDir(filepath.Join(nm, e.Name()))
				for _, s := range scoped {
					if s.IsDir() {
						add(filepath.Join(nm, e.Name(), s.Name()))
					}
				}
			default:
				add(filepath.Join(nm, e.Name()))
			}
		}
	}
	walk(filepath.Join(prefix, "node_modules"))
	if len(byName["@modelcontextprotocol/server-filesystem"]) == 0 {
		t.Fatalf("NORMA_TEST_MCP_FS=%s holds no @modelcontextprotocol/server-filesystem", prefix)
	}

	var mu sync.Mutex
	tarballs := map[string][]byte{} // by "NAME/-/VERSION.tgz"
	packuments := map[string][]byte{}
	base := "" // the server's URL, set once it listens
	packument := func(name string) ([]byte, error) {
		mu.Lock()
		defer mu.Unlock()
		if b, ok := packuments[name]; ok {
			return b, nil
		}
		versions := map[string]any{}
		latest := ""
		for _, p := range byName[name] {
			if _, done := versions[p.version]; done {
				continue
			}
			tgz, err := npmTarball(p.dir)
			if err != nil {
				return nil, err
			}
			key := name + "/-/" + p.version + ".tgz"
			tarballs[key] = tgz
			var m map[string]any
			b, _ := os.ReadFile(filepath.Join(p.dir, "package.json"))
			if err := json.Unmarshal(b, &m); err != nil {
				return nil, err
			}
			sum512, sum1 := sha512.Sum512(tgz), sha1.Sum(tgz)
			m["dist"] = map[string]string{
				"tarball":   base + "/-/tarball/" + key,
				"integrity": "sha512-" + base64.StdEncoding.EncodeToString(sum512[:]),
				"shasum":    hex.EncodeToString(sum1[:]),
			}
			versions[p.version] = m
			if latest == "" || semver.Compare("v"+p.version, "v"+latest) > 0 {
				latest = p.version
			}
		}
		b, err := json.Marshal(map[string]any{"name": name, "dist-tags": map[string]string{"latest": latest}, "versions": versions})
		if err == nil {
			packuments[name] = b
		}
		return b, err
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path := strings.TrimPrefix(r.URL.Path, "/") // a scoped name's %2f is decoded
		if key, ok := strings.CutPrefix(path, "-/tarball/"); ok {
			mu.Lock()
			b, found := tarballs[key]
			mu.Unlock()
			if !found {
				http.NotFound(w, r)
				return
			}
			w.Header().Set("Content-Type", "application/octet-stream")
			w.Write(b)
			return
		}
		if len(byName[path]) == 0 {
			http.NotFound(w, r)
			return
		}
		b, err := packument(path)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(b)
	}))
	t.Cleanup(srv.Close)
	mu.Lock()
	base = srv.URL
	mu.Unlock()
	return srv.URL + "/"
}

// npmTarball packs the package in dir as npm does: a gzipped tar whose
// entries are under package/, without its node_modules.
func npmTarball(dir string) ([]byte, error) {
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p == filepath.Join(dir, "node_modules") {
			return filepath.SkipDir
		}
		if !d.Type().IsRegular() {
			return nil // directories are implied; links are not package content
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		hdr := &tar.Header{Name: "package/" + filepath.ToSlash(rel), Mode: int64(fi.Mode().Perm()), Size: int64(len(b)), ModTime: time.Unix(499162500, 0), Typeflag: tar.TypeReg}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		_, err = tw.Write(b)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("pack %s: %w", dir, err)
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := gz.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
