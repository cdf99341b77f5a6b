package main

import (
	"net/url"
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

// TestRedactIn: whatever a library quotes of a --store URL, the printed
// error hides every credential in it: the user info's password and the
// value of every parameter that store.CredentialKey names a credential's,
// in any case or spelling of the key (PASSWORD, Pwd, pass, sslpassword,
// an escaped name), as written, unescaped or escaped again; the rest of
// the message stays.
func TestRedactIn(t *testing.T) {
	tests := []struct {
		raw     string
		secrets []string // as the library may have decoded them
		keep    []string
	}{
		{"postgres://norma:pw-user1@db/x", []string{"pw-user1"}, []string{"norma", "db/x"}},
		{"postgres://norma:pw%40us%20er2@db/x", []string{"pw@us er2"}, []string{"norma"}},
		{"postgres://db/x?PASSWORD=pw-upper3", []string{"pw-upper3"}, []string{"db/x"}},
		{"postgres://db/x?Pwd=pw-pwd4&tenant=ci", []string{"pw-pwd4"}, []string{"tenant=ci"}},
		{"postgres://db/x?pass=pw-pass5&sslmode=disable", []string{"pw-pass5"}, []string{"sslmode=disable"}},
		{"postgres://db/x?pAssword0=pw-issue6", []string{"pw-issue6"}, nil}, // issue 32's minimized input
		{"postgres://db/x?sslpassword=pw-ssl7", []string{"pw-ssl7"}, nil},
		{"postgres://db/x?pass%77ord=pw-escaped-key8", []string{"pw-escaped-key8"}, nil},
		{"postgres://db/x?password=pw-bad%zz9", []string{"pw-bad%zz9"}, nil}, // u.Query() drops this pair
		{"postgres://db/x?password=%20pw-space10", []string{"pw-space10"}, nil},
		{"postgres://db/x#password=pw-fragment11", []string{"pw-fragment11"}, nil},
		{"postgres://u:pw-both12@db/x?PASS=pw-both13&Pwd=pw-both14", []string{"pw-both12", "pw-both13", "pw-both14"}, []string{"db/x"}},
	}
	for _, tt := range tests {
		msg := "failed to connect to " + tt.raw + ": server said:"
		for _, s := range tt.secrets {
			msg += " " + s + " " + url.QueryEscape(s) + " " + url.PathEscape(s)
		}
		out := (&redactedError{redactIn(msg, tt.raw), nil}).Error()
		for _, s := range tt.secrets {
			for _, f := range []string{s, url.QueryEscape(s), url.PathEscape(s), strings.TrimSpace(s)} {
				if strings.Contains(out, f) {
					t.Errorf("redactIn(%q) = %q, which quotes %q", tt.raw, out, f)
					break
				}
			}
		}
		for _, k := range append(tt.keep, "failed to connect to postgres://", "server said:", "xxxxx") {
			if !strings.Contains(out, k) {
				t.Errorf("redactIn(%q) = %q, want %q kept", tt.raw, out, k)
			}
		}
	}
}
