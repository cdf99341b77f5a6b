package plugin

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/norma-run/norma/manifest"
)

// TestDataDirScreenAndRemove: the install screen names the real host path
// of a data_dir plugin's data directory, and plugin remove deletes it with
// the plugin.
func TestDataDirScreenAndRemove(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t)
	m := e.manager(t, nil, nil)
	dir := copyFixture(t, "issue-helper-1.4.0")
	mf := filepath.Join(dir, "manifest.yaml")
	b, _ := os.ReadFile(mf)
	os.WriteFile(mf, []byte(strings.Replace(string(b), "entrypoint: bin/issue-helper\n", "entrypoint: bin/issue-helper\ndata_dir: true\nenv: {STORE: \"${data}/store\"}\n", 1)), 0o644)
	grant, err := manifest.ParseLayerFile(filepath.Join("testdata", "grant-reports-only.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Install(ctx, dir, InstallOptions{Dev: true, Grant: grant}); err != nil {
		t.Fatal(err)
	}
	data := m.DataDir(helper)
	if data != filepath.Join(e.home, "plugins", helper, "data") {
		t.Fatalf("DataDir = %s", data)
	}
	if want := "with a data directory of its own, read-write, kept across runs and updates: " + data + "\n"; !strings.Contains(e.out.String(), want) {
		t.Errorf("install screen does not show %q:\n%s", want, e.out.String())
	}
	// The host creates it on first start; the plugin writes into it.
	os.Mkdir(data, 0o700)
	os.WriteFile(filepath.Join(data, "store"), []byte("kept"), 0o600)
	if err := m.Remove(ctx, helper); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(data); err == nil {
		t.Error("remove kept the data directory")
	}
}
