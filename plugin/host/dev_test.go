package host

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/norma-run/norma/audit"
	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/manifest"
	"github.com/norma-run/norma/secret"
)

// devPackage writes the python test server (no "#!" line: CMD names the
// interpreter) and manifest mf into a directory of their own and returns
// it with the parsed manifest.
func devPackage(t *testing.T, mf string) (string, *manifest.Manifest) {
	t.Helper()
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("no /usr/bin/python3")
	}
	src, err := os.ReadFile(filepath.Join("testdata", "pyserver", "server.py"))
	if err != nil {
		t.Fatal(err)
	}
	pkg := t.TempDir()
	os.WriteFile(filepath.Join(pkg, "server.py"), src, 0o644)
	os.WriteFile(filepath.Join(pkg, "manifest.yaml"), []byte(mf), 0o644)
	m, err := manifest.ParseFile(filepath.Join(pkg, "manifest.yaml"))
	if err != nil {
		t.Fatalf("manifest: %v\n%s", err, mf)
	}
	return pkg, m
}

// stateFiles lists every path under dir (none when it does not exist).
func stateFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil {
			out = append(out, p)
		}
		return nil
	})
	return out
}

// TestLoadDev: a manifest that is not installed, its server started by
// `python3 server.py ${workspace}` in the manifest's directory, runs as an
// installed plugin does: python3 found in the sandbox's PATH and run
// directly, the arguments expanded, the secret only as the broker's
// placeholder, the workspace grants enforced by the sandbox (a write
// outside out/, into the package or to .env fails and writes nothing; .env
// is not readable). Its data directory is a temporary one, gone at Close;
// nothing is added to the plugin state, and the load is audited as a dev
// consent with the manifest's digest.
func TestLoadDev(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	os.MkdirAll(filepath.Join(e.ws, "out"), 0o755)
	extra := "data_dir: true\nenv:\n  DATA: \"${data}\"\n  TOKEN_HEADER: \"Bearer ${secret:issue_api_token}\"\n"
	perms := pySecret + "  filesystem:\n    read: [\"workspace://**\"]\n    write: [\"workspace://out/**\"]\n"
	pkg, m := devPackage(t, pyManifest("local.test.devpy", extra, perms))
	before := stateFiles(t, filepath.Join(e.home, "plugins"))

	p, err := e.host.LoadDev(ctx, m, pkg, []string{"python3", "server.py", "--ws=${workspace}"}, nil)
	if err != nil {
		t.Fatalf("LoadDev: %v", err)
	}
	if p.ServerName() != "local.test.devpy" {
		t.Errorf("server name %q", p.ServerName())
	}
	ts, err := p.Tools()
	if err != nil || len(ts) != 5 {
		t.Fatalf("tools: %d, %v", len(ts), err)
	}
	se := pyEnv(ctx, t, p)
	python, _ := filepath.EvalSymlinks("/usr/bin/python3")
	if want := []string{python, "server.py", "--ws=" + e.ws}; !slices.Equal(se.Argv, want) {
		t.Errorf("argv = %q, want %q", se.Argv, want)
	}
	if !strings.HasPrefix(se.Env["TOKEN_HEADER"], "Bearer "+secret.PlaceholderPrefix+"issue_api_token:") {
		t.Errorf("TOKEN_HEADER = %q, want the broker's placeholder", se.Env["TOKEN_HEADER"])
	}
	// The working directory is the package.
	if out, isErr := pyCall(ctx, t, p, "listdir", map[string]string{"path": "."}); isErr || !strings.Contains(out, `"server.py"`) {
		t.Errorf("listdir . = %s", out)
	}
	data := se.Env["DATA"]
	if !strings.HasPrefix(data, os.TempDir()) || strings.HasPrefix(data, e.home) {
		t.Errorf("data directory %q, want a temporary one", data)
	}
	if out, isErr := pyCall(ctx, t, p, "write", map[string]string{"path": filepath.Join(data, "graph.json"), "content": "{}"}); isErr {
		t.Errorf("write in the data directory: %s", out)
	}
	if out, isErr := pyCall(ctx, t, p, "write", map[string]string{"path": filepath.Join(e.ws, "out", "ok.md"), "content": "ok"}); isErr {
		t.Errorf("write in out/: %s", out)
	}
	for _, path := range []string{filepath.Join(e.ws, "docs", "evil.md"), filepath.Join(pkg, "evil.py"), filepath.Join(e.ws, "docs", ".env")} {
		if out, isErr := pyCall(ctx, t, p, "write", map[string]string{"path": path, "content": "evil"}); !isErr {
			t.Errorf("write %s outside the grant: %s", path, out)
		}
	}
	if _, err := os.Stat(filepath.Join(e.ws, "docs", "evil.md")); err == nil {
		t.Error("docs/evil.md was written")
	}
	if _, err := os.Stat(filepath.Join(pkg, "evil.py")); err == nil {
		t.Error("the package was written")
	}
	if b, _ := os.ReadFile(filepath.Join(e.ws, "docs", ".env")); string(b) != "TOKEN="+canaryToken {
		t.Errorf("docs/.env = %q", b)
	}
	if out, isErr := pyCall(ctx, t, p, "read", map[string]string{"path": filepath.Join(e.ws, "docs", ".env")}); !isErr || strings.Contains(out, canaryToken) {
		t.Errorf("read .env = %q", out)
	}

	e.host.Stop(ctx, m.ID)
	if _, err := os.Stat(data); err == nil {
		t.Errorf("the temporary data directory %s outlived the plugin", data)
	}
	if after := stateFiles(t, filepath.Join(e.home, "plugins")); !slices.Equal(before, after) {
		t.Errorf("the plugin state changed:\nbefore %q\nafter  %q", before, after)
	}
	recs, _ := e.audit.Query(ctx, audit.Filter{})
	var dev int
	for _, r := range recs {
		ev := r.Event
		if ev.Type == audit.TypeConsentGranted && ev.Detail["dev"] == "true" {
			dev++
			if ev.Plugin != m.ID || ev.ManifestDigest != m.Digest() || ev.Detail["package"] != pkg || !strings.HasPrefix(ev.Detail["grant"], "none") {
				t.Errorf("dev consent event: %+v", ev)
			}
		}
		if strings.Contains(r.Event.Detail["command"]+r.Event.Detail["stderr"], canaryToken) {
			t.Errorf("the canary in the audit log: %+v", ev)
		}
	}
	if dev != 1 {
		t.Errorf("%d dev consent events, want 1", dev)
	}
}

// TestLoadDevGrant: with a grant layer, the grant caps the manifest: the
// grant gives no write, so the sandbox refuses a write to out/ that the
// manifest asks for, and nothing is written.
func TestLoadDevGrant(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	os.MkdirAll(filepath.Join(e.ws, "out"), 0o755)
	pkg, m := devPackage(t, pyManifest("local.test.devgrant", "", "  filesystem:\n    read: [\"workspace://**\"]\n    write: [\"workspace://out/**\"]\n"))
	grant := &manifest.Layer{SchemaVersion: 2, Kind: manifest.KindGrant, Permissions: manifest.Permissions{
		Filesystem: &manifest.Filesystem{Read: []string{"workspace://**"}, Write: []string{}, Deny: []string{}}}}
	p, err := e.host.LoadDev(ctx, m, pkg, []string{"python3", "server.py"}, grant)
	if err != nil {
		t.Fatalf("LoadDev: %v", err)
	}
	if out, isErr := pyCall(ctx, t, p, "read", map[string]string{"path": filepath.Join(e.ws, "docs", "intro.md")}); isErr || !strings.Contains(out, "Intro") {
		t.Errorf("granted read: %s", out)
	}
	if out, isErr := pyCall(ctx, t, p, "write", map[string]string{"path": filepath.Join(e.ws, "out", "no.md"), "content": "no"}); !isErr {
		t.Errorf("write the grant does not give: %s", out)
	}
	if _, err := os.Stat(filepath.Join(e.ws, "out", "no.md")); err == nil {
		t.Error("out/no.md was written")
	}
}

// TestLoadDevPackageRefused: a package directory that is, lies inside or
// holds the workspace or the state directory is refused
// (PLUGIN_DEV_PACKAGE) before anything starts: mounted whole, it would
// show the server what the policy hides. A command is required.
func TestLoadDevPackageRefused(t *testing.T) {
	e := newEnvAt(t, filepath.Join(t.TempDir(), "state"), t.TempDir())
	ctx := t.Context()
	_, m := devPackage(t, pyManifest("local.test.devbad", "", ""))
	inside := filepath.Join(e.ws, "server")
	os.MkdirAll(inside, 0o755)
	for _, dir := range []string{e.ws, inside, filepath.Dir(e.ws), e.home, filepath.Join(e.home, "plugins"), filepath.Dir(e.home)} {
		if _, err := e.host.LoadDev(ctx, m, dir, []string{"python3", "server.py"}, nil); capability.ReasonOf(err) != ReasonDevPackage {
			t.Errorf("LoadDev in %s: %v, want %s", dir, err, ReasonDevPackage)
		}
	}
	if _, err := e.host.LoadDev(ctx, m, t.TempDir(), nil, nil); err == nil {
		t.Error("LoadDev without a command succeeded")
	}
	if n := len(e.host.loaded()); n != 0 {
		t.Errorf("%d plugins loaded after refusals", n)
	}
}
