package settings

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/norma-run/norma/manifest"
)

const managedBody = "permissions:\n  deny: [\"Bash(curl:*)\"]\n"

// writeFile writes body at dir/name with exactly mode perm (whatever the
// umask) and returns its path.
func writeFile(t *testing.T, dir, name, body string, perm os.FileMode) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), perm); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, perm); err != nil {
		t.Fatal(err)
	}
	return p
}

func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: managed settings must be owned by root")
	}
}

// TestManagedFile checks managed settings on disk: only a regular file
// owned by root and not writable by group or others is read. The first
// case is the negative control: the same content is accepted when the
// file is right, so every refusal is the check's.
func TestManagedFile(t *testing.T) {
	requireRoot(t)
	for _, tt := range []struct {
		name  string
		setup func(t *testing.T, dir string) string
		ok    bool
	}{
		{"root 0644", func(t *testing.T, dir string) string {
			return writeFile(t, dir, "m.yaml", managedBody, 0o644)
		}, true},
		{"root 0600", func(t *testing.T, dir string) string {
			return writeFile(t, dir, "m.yaml", managedBody, 0o600)
		}, true},
		{"group writable 0664", func(t *testing.T, dir string) string {
			return writeFile(t, dir, "m.yaml", managedBody, 0o664)
		}, false},
		{"world writable 0666", func(t *testing.T, dir string) string {
			return writeFile(t, dir, "m.yaml", managedBody, 0o666)
		}, false},
		{"others writable 0642", func(t *testing.T, dir string) string {
			return writeFile(t, dir, "m.yaml", managedBody, 0o642)
		}, false},
		{"owned by nobody", func(t *testing.T, dir string) string {
			p := writeFile(t, dir, "m.yaml", managedBody, 0o644)
			if err := os.Chown(p, 65534, 65534); err != nil {
				t.Fatal(err)
			}
			return p
		}, false},
		{"symlink to a good file", func(t *testing.T, dir string) string {
			target := writeFile(t, dir, "real.yaml", managedBody, 0o644)
			p := filepath.Join(dir, "m.yaml")
			if err := os.Symlink(target, p); err != nil {
				t.Fatal(err)
			}
			return p
		}, false},
		{"dangling symlink", func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "m.yaml")
			if err := os.Symlink(filepath.Join(dir, "nowhere"), p); err != nil {
				t.Fatal(err)
			}
			return p
		}, false},
		{"directory", func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "m.yaml")
			if err := os.Mkdir(p, 0o755); err != nil {
				t.Fatal(err)
			}
			return p
		}, false},
		{"fifo", func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "m.yaml")
			if err := syscall.Mkfifo(p, 0o644); err != nil {
				t.Fatal(err)
			}
			return p
		}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := tt.setup(t, t.TempDir())
			f, err := readWithin(t, p, ScopeManaged)
			if tt.ok {
				if err != nil {
					t.Fatalf("ReadFile(%s, managed): %v", tt.name, err)
				}
				if len(f.Rules) != 1 || f.Rules[0].Source.Scope != ScopeManaged {
					t.Errorf("ReadFile(%s, managed).Rules = %+v", tt.name, f.Rules)
				}
				return
			}
			var probs manifest.Errors
			if !errors.As(err, &probs) || !strings.Contains(err.Error(), "managed settings are refused") {
				t.Fatalf("ReadFile(%s, managed) = %v, want the refusal", tt.name, err)
			}
			if !strings.HasPrefix(err.Error(), p+": ") {
				t.Errorf("refusal %q does not name the file", err)
			}
			// Through Load too: a refused managed file is an error, not a
			// missing one.
			if _, err := Load(Options{Managed: p}); err == nil {
				t.Errorf("Load(managed %s) succeeded", tt.name)
			}
		})
	}
}

// readWithin is ReadFile, failing the test if it blocks (a FIFO must not).
func readWithin(t *testing.T, path string, scope Scope) (*File, error) {
	t.Helper()
	type result struct {
		f   *File
		err error
	}
	c := make(chan result, 1)
	go func() {
		f, err := ReadFile(path, scope, testWorkspace)
		c <- result{f, err}
	}()
	select {
	case r := <-c:
		return r.f, r.err
	case <-time.After(10 * time.Second):
		t.Fatalf("ReadFile(%s) blocked", path)
		return nil, nil
	}
}

// TestMissingFiles: absent user, workspace, local and managed files are
// not read; a --settings file that is absent is an error.
func TestMissingFiles(t *testing.T) {
	dir := t.TempDir()
	s, err := Load(Options{Workspace: dir, UserDir: filepath.Join(dir, "no-user"), Managed: filepath.Join(dir, "no-managed.yaml")})
	if err != nil {
		t.Fatalf("Load(nothing there): %v", err)
	}
	if len(s.Files) != 0 || len(s.Rules) != 0 || s.Network != nil {
		t.Errorf("Load(nothing there) = %+v", s)
	}
	flag := filepath.Join(dir, "missing.yaml")
	if _, err := Load(Options{Workspace: dir, Flag: flag}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Load(missing --settings) = %v, want fs.ErrNotExist", err)
	}
	if _, err := ReadFile(filepath.Join(dir, "no-managed.yaml"), ScopeManaged, dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadFile(missing managed) = %v, want fs.ErrNotExist", err)
	}
}

// TestLoad reads every file from a real workspace, user directory,
// --settings file and managed file.
func TestLoad(t *testing.T) {
	ws, user, etc := t.TempDir(), t.TempDir(), t.TempDir()
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join("testdata/valid", name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	userFile := writeFile(t, user, "settings.yaml", read("user.yaml"), 0o644)
	wsFile := writeFile(t, ws, WorkspaceFile, read("workspace.yaml"), 0o644)
	localFile := writeFile(t, ws, LocalFile, read("local.yaml"), 0o644)
	flagFile := writeFile(t, t.TempDir(), "flag.json", read("flag.json"), 0o644)
	o := Options{Workspace: ws, UserDir: user, Flag: flagFile}
	wantFiles := []Source{
		{File: userFile, Line: 1, Col: 1, Scope: ScopeUser},
		{File: wsFile, Line: 1, Col: 1, Scope: ScopeWorkspace},
		{File: localFile, Line: 1, Col: 1, Scope: ScopeLocal},
		{File: flagFile, Line: 1, Col: 1, Scope: ScopeFlag},
	}
	if os.Geteuid() == 0 {
		o.Managed = writeFile(t, etc, "managed-settings.yaml", read("managed.yaml"), 0o644)
		wantFiles = append(wantFiles, Source{File: o.Managed, Line: 1, Col: 1, Scope: ScopeManaged})
	}
	s, err := Load(o)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if !reflect.DeepEqual(s.Files, wantFiles) {
		t.Errorf("Load().Files = %+v\nwant %+v", s.Files, wantFiles)
	}
	// Hooks are resolved against the real workspace, and keep the file
	// they came from.
	var argv0 []string
	for _, h := range s.Hooks {
		argv0 = append(argv0, h.Argv[0])
		if h.Source.File == "" || h.Source.Line == 0 {
			t.Errorf("hook %q has no source", h.Command)
		}
	}
	want := []string{"/usr/local/bin/audit-bash",
		filepath.Join(ws, ".norma/hooks/check.sh"), filepath.Join(ws, ".norma/hooks/format.sh"),
		filepath.Join(ws, ".norma/hooks/stop.sh")}
	if o.Managed != "" {
		want = append(want, "/opt/corp/bin/session-start")
	}
	if !reflect.DeepEqual(argv0, want) {
		t.Errorf("Load() hook programs = %q, want %q", argv0, want)
	}
	if s.DefaultMode != "dontAsk" || s.DefaultModeSource.File != flagFile {
		t.Errorf("Load() mode = %q from %v, want dontAsk from the --settings file", s.DefaultMode, s.DefaultModeSource)
	}
	if s.Env["SHARED"] != "flag" {
		t.Errorf("Load() env SHARED = %q, want the --settings file's", s.Env["SHARED"])
	}

	// A bad workspace file stops Load with its position.
	writeFile(t, ws, WorkspaceFile, "permissions:\n  alow: [Read]\n", 0o644)
	_, err = Load(o)
	if want := wsFile + `:2:3: permissions.alow: unknown field "alow" (did you mean "allow"?)`; err == nil || err.Error() != want {
		t.Errorf("Load(typo) = %v, want %s", err, want)
	}
}

// TestNotRegular: a workspace or local settings file a repository carries
// must be a regular file (a FIFO would hang every run); a symlink to one
// is fine, as for a dotfile manager.
func TestNotRegular(t *testing.T) {
	ws := t.TempDir()
	p := filepath.Join(ws, WorkspaceFile)
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readWithin(t, p, ScopeWorkspace); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("ReadFile(fifo, workspace) = %v, want a refusal", err)
	}
	os.Remove(p)
	target := writeFile(t, t.TempDir(), "real.yaml", "permissions: {allow: [Read]}\n", 0o644)
	if err := os.Symlink(target, p); err != nil {
		t.Fatal(err)
	}
	if f, err := ReadFile(p, ScopeWorkspace, ws); err != nil || len(f.Rules) != 1 {
		t.Errorf("ReadFile(symlink, workspace) = %v, %v; want its rule", f, err)
	}
}

// TestSizeLimit: a file over manifest.MaxFileSize is refused, before any
// parsing, whether given as bytes or read from disk; a device that never
// ends is read no further than the limit.
func TestSizeLimit(t *testing.T) {
	big := strings.Repeat("#", manifest.MaxFileSize) + "\n"
	want := "big.yaml: file is 1048577 bytes; the limit is 1048576"
	if _, err := Parse("big.yaml", []byte(big), ScopeWorkspace, testWorkspace); err == nil || err.Error() != want {
		t.Errorf("Parse(%d bytes) = %v, want %s", len(big), err, want)
	}
	// Just at the limit, the same comments are fine.
	if _, err := Parse("limit.yaml", []byte(big[1:]), ScopeWorkspace, testWorkspace); err != nil {
		t.Errorf("Parse(%d bytes) = %v", len(big)-1, err)
	}
	p := writeFile(t, t.TempDir(), "big.yaml", "env:\n"+strings.Repeat("  A: b\n", manifest.MaxFileSize/7+1), 0o644)
	if _, err := ReadFile(p, ScopeFlag, testWorkspace); err == nil || !strings.Contains(err.Error(), "the limit is") {
		t.Errorf("ReadFile(big) = %v, want the size limit", err)
	}
	if _, err := os.Stat("/dev/zero"); err == nil {
		if _, err := readWithin(t, "/dev/zero", ScopeFlag); err == nil || !strings.Contains(err.Error(), "the limit is") {
			t.Errorf("ReadFile(/dev/zero) = %v, want the size limit", err)
		}
	}
}
