package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/spf13/cobra"

	"github.com/norma-run/norma/runtime"
	"github.com/norma-run/norma/settings"
	"github.com/norma-run/norma/store"
)

// storeEnv names the store when --store is not given.
const storeEnv = "NORMA_STORE"

// storeLocation is where the durable state lives, as chosen.
type storeLocation struct {
	// sqlite is the SQLite file's path; empty for PostgreSQL.
	sqlite string
	// url is the postgres:// URL (with its password, if any): never print
	// it, print printable.
	url string
	// from names what chose it: "--store", "$NORMA_STORE", a settings
	// file, or "" for the default.
	from string
}

// printable is the location with any password hidden (store.Redact).
func (l storeLocation) printable() string {
	if l.sqlite != "" {
		return l.sqlite
	}
	return store.Redact(l.url)
}

// resolveStore returns where the store of state directory home is:
// --store, else $NORMA_STORE, else the store key of the user's or the
// managed settings (never a workspace's: settings refuses it there),
// else norma.db in home. A bad location is a usage error.
func resolveStore(cmd *cobra.Command, home string) (storeLocation, error) {
	raw, from := "", ""
	if f := cmd.Flag("store"); f != nil && f.Value.String() != "" {
		raw, from = f.Value.String(), "--store"
	} else if v := os.Getenv(storeEnv); v != "" {
		raw, from = v, "$"+storeEnv
	} else {
		st, err := settings.Load(settingsFiles(""))
		if err != nil {
			return storeLocation{}, exitWith(exitUsage, err)
		}
		if st.Store != "" {
			raw, from = st.Store, "store in "+st.StoreSource.String()
		}
	}
	if raw == "" {
		return storeLocation{sqlite: filepath.Join(home, store.FileName)}, nil
	}
	loc, err := parseStoreLocation(raw)
	if err != nil {
		return storeLocation{}, exitWith(exitUsage, fmt.Errorf("%s: %w", from, err))
	}
	loc.from = from
	return loc, nil
}

// parseStoreLocation reads a store location: postgres://… or
// postgresql://… (PostgreSQL), sqlite:PATH, file:PATH or a bare PATH
// (SQLite at PATH; two state directories may share one file). Errors never
// quote raw, which may hold a password.
func parseStoreLocation(raw string) (storeLocation, error) {
	scheme, rest, hasScheme := strings.Cut(raw, ":")
	if !hasScheme || !urlScheme(scheme) || len(scheme) < 2 {
		// A path (a one-letter "scheme" would be a drive letter), or
		// something typed as one: never quoted, it may hold a password
		// ("host=db password=pw:x" has no scheme).
		return sqliteLocation(raw)
	}
	switch strings.ToLower(scheme) {
	case "postgres", "postgresql":
		u, err := url.Parse(raw)
		if err != nil || u.Opaque != "" || !strings.HasPrefix(rest, "//") {
			return storeLocation{}, errors.New("not a valid postgres:// URL (postgres://USER@HOST:PORT/DATABASE?sslmode=…&tenant=NAME)")
		}
		return storeLocation{url: raw}, nil
	case "sqlite", "file":
		if strings.HasPrefix(rest, "//") {
			u, err := url.Parse(raw)
			if err != nil || (u.Host != "" && u.Host != "localhost") {
				return storeLocation{}, fmt.Errorf("%s: URL: want %s:///ABSOLUTE/PATH or %s:PATH", scheme, scheme, scheme)
			}
			rest = u.Path
		}
		return sqliteLocation(rest)
	default:
		return storeLocation{}, fmt.Errorf("unknown store scheme %q: want a path, sqlite:PATH or postgres://…", scheme)
	}
}

// urlScheme reports whether s may be a URL's scheme (RFC 3986 without
// "."): only then is it quoted in an error.
func urlScheme(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || i > 0 && ('0' <= c && c <= '9' || c == '+' || c == '-')) {
			return false
		}
	}
	return s != ""
}

// kvPassword finds the password of a keyword/value connection string, as
// libpq reads it: spaces may surround the "=".
// kvPassword is compiled on first use (start-up cost of every command).
var kvPassword = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)password\s*=`) })

func sqliteLocation(path string) (storeLocation, error) {
	if path == "" {
		return storeLocation{}, errors.New("empty SQLite path")
	}
	if kvPassword().MatchString(path) {
		// A keyword/value connection string taken for a path.
		return storeLocation{}, errors.New("not a path, sqlite:PATH or postgres:// URL (a PostgreSQL store is named by a postgres:// URL)")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return storeLocation{}, err
	}
	return storeLocation{sqlite: abs}, nil
}

// openStore opens the store of state directory home (see resolveStore),
// migrated to the current schema. Every command that reads or writes
// durable state opens it here. Errors are exit errors: a bad location is a
// usage error, a store that does not open an internal one; neither prints
// a password.
func openStore(ctx context.Context, cmd *cobra.Command, home string) (store.Store, error) {
	loc, err := resolveStore(cmd, home)
	if err != nil {
		return nil, err
	}
	s, err := runtime.OpenStore(ctx, runtime.StoreLocation{SQLite: loc.sqlite, Postgres: loc.url})
	if err != nil && loc.sqlite != "" {
		return nil, exitWith(exitInternal, err)
	}
	if err != nil {
		// Its errors name the store with the password hidden already;
		// should a library have quoted it anyway, it is hidden here too.
		return nil, exitWith(exitInternal, &redactedError{redactIn(err.Error(), loc.url), err})
	}
	return s, nil
}

// redactedError is err printed as msg, err with the password removed.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// redactIn hides, in msg, the credentials of URL raw should a library have
// quoted them: raw itself, printed as [store.Redact] prints it, then the
// password of its user info and the value of every parameter of its query
// or fragment whose name is a credential's ([store.CredentialKey], the one
// answer to that question), as written, unescaped and escaped again.
func redactIn(msg, raw string) string {
	msg = strings.ReplaceAll(msg, raw, store.Redact(raw))
	u, err := url.Parse(raw)
	if err != nil {
		return msg
	}
	var secrets []string
	if pw, ok := u.User.Password(); ok {
		secrets = append(secrets, pw)
	}
	// Parameters as written, not as u.Query() has them: it drops a pair
	// that does not unescape, and CredentialKey reads a name as written.
	for _, params := range []string{u.RawQuery, u.EscapedFragment()} {
		for _, kv := range strings.Split(params, "&") {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || !store.CredentialKey(k) {
				continue
			}
			secrets = append(secrets, v, strings.TrimSpace(v))
			if uv, err := url.QueryUnescape(v); err == nil {
				secrets = append(secrets, uv, strings.TrimSpace(uv))
			}
		}
	}
	var forms []string
	for _, s := range secrets {
		if s != "" {
			forms = append(forms, s, url.QueryEscape(s), url.PathEscape(s), url.UserPassword("", s).String()[1:])
		}
	}
	// The longest first, so that a secret inside another is not replaced
	// first, leaving the rest of the longer one in msg.
	slices.SortFunc(forms, func(a, b string) int { return len(b) - len(a) })
	for _, f := range forms {
		msg = strings.ReplaceAll(msg, f, "xxxxx")
	}
	return msg
}

// openStoreOf is openStore for a command that has not resolved its state
// directory yet.
func openStoreOf(cmd *cobra.Command) (store.Store, error) {
	home, err := stateDir(cmd)
	if err != nil {
		return nil, exitWith(exitInternal, err)
	}
	return openStore(cmd.Context(), cmd, home)
}
