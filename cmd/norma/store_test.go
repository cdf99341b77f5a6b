package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseStoreLocation(t *testing.T) {
	wd, _ := os.Getwd()
	for _, c := range []struct {
		in, sqlite, url, err string
	}{
		{in: "/srv/norma/shared.db", sqlite: "/srv/norma/shared.db"},
		{in: "rel/norma.db", sqlite: filepath.Join(wd, "rel/norma.db")},
		{in: "sqlite:/srv/a.db", sqlite: "/srv/a.db"},
		{in: "sqlite:rel.db", sqlite: filepath.Join(wd, "rel.db")},
		{in: "file:/srv/a.db", sqlite: "/srv/a.db"},
		{in: "file:///srv/a.db", sqlite: "/srv/a.db"},
		{in: "sqlite:///srv/a.db", sqlite: "/srv/a.db"},
		{in: "./x:y.db", sqlite: filepath.Join(wd, "x:y.db")},
		{in: "postgres://n@db/norma?tenant=ci", url: "postgres://n@db/norma?tenant=ci"},
		{in: "postgresql://n:pw@db/norma", url: "postgresql://n:pw@db/norma"},
		{in: "sqlite:", err: "empty SQLite path"},
		{in: "file://otherhost/a.db", err: "want file:///ABSOLUTE/PATH"},
		{in: "postgres:norma", err: "not a valid postgres:// URL"},
		{in: "postgres://n:s3cret@db:bad/x", err: "not a valid postgres:// URL"},
		{in: "mysql://n:s3cret@db/x", err: `unknown store scheme "mysql"`},
		{in: "host=db user=n password=s3cret dbname=x", err: "postgres:// URL"},
		// A keyword/value string with a colon after the password is no
		// scheme: not quoted as one.
		{in: "host=db user=n password=s3cret:x dbname=x", err: "postgres:// URL"},
		{in: "host=db password=s3cret options=-csearch_path=a:b", err: "postgres:// URL"},
		// libpq allows spaces around "=": not a SQLite path.
		{in: "host=db user=n password = s3cret dbname=x", err: "postgres:// URL"},
		{in: "host=db PASSWORD\t=s3cret", err: "postgres:// URL"},
		{in: "pg+ssl://n:s3cret@db/x", err: `unknown store scheme "pg+ssl"`},
	} {
		loc, err := parseStoreLocation(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: err = %v, want %q", c.in, err, c.err)
			} else if strings.Contains(err.Error(), "s3cret") {
				t.Errorf("%q: the error quotes the password: %v", c.in, err)
			}
			continue
		}
		if err != nil || loc.sqlite != c.sqlite || loc.url != c.url {
			t.Errorf("%q = %+v, %v; want sqlite %q url %q", c.in, loc, err, c.sqlite, c.url)
		}
	}
}

// TestResolveStore: --store beats $NORMA_STORE beats the user's settings
// beats norma.db in the state directory; a workspace's settings file
// cannot move the store (settings refuses the key there).
func TestResolveStore(t *testing.T) {
	home, cfg := t.TempDir(), t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", cfg)
	t.Setenv(storeEnv, "")
	resolve := func(args ...string) storeLocation {
		t.Helper()
		root := newRoot()
		if err := root.PersistentFlags().Parse(args); err != nil {
			t.Fatal(err)
		}
		loc, err := resolveStore(root, home)
		if err != nil {
			t.Fatal(err)
		}
		return loc
	}
	if l := resolve(); l.sqlite != filepath.Join(home, "norma.db") || l.from != "" {
		t.Fatalf("default = %+v", l)
	}
	os.MkdirAll(filepath.Join(cfg, "norma"), 0o700)
	os.WriteFile(filepath.Join(cfg, "norma", "settings.yaml"), []byte("store: /srv/user.db\n"), 0o600)
	if l := resolve(); l.sqlite != "/srv/user.db" || !strings.Contains(l.from, "settings.yaml") {
		t.Fatalf("user settings = %+v", l)
	}
	t.Setenv(storeEnv, "sqlite:/srv/env.db")
	if l := resolve(); l.sqlite != "/srv/env.db" || l.from != "$NORMA_STORE" {
		t.Fatalf("env = %+v", l)
	}
	if l := resolve("--store", "postgres://db/x"); l.url != "postgres://db/x" || l.from != "--store" {
		t.Fatalf("flag = %+v", l)
	}
}
