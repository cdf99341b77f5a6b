package runtime

import (
	"context"
	"errors"

	"github.com/norma-run/norma/store"
	"github.com/norma-run/norma/store/postgres"
)

// StoreLocation names a store: exactly one of its fields is set. The
// command line resolves it from --store, NORMA_STORE or the state
// directory (a SQLite path is never mistaken for a URL there).
type StoreLocation struct {
	SQLite   string // the path of a SQLite file
	Postgres string // a postgres:// URL (package store/postgres)
}

// OpenStore opens the store at loc, migrated to the current schema: the
// one place a process opens its store. A PostgreSQL error names the
// server with the password hidden.
func OpenStore(ctx context.Context, loc StoreLocation) (store.Store, error) {
	switch {
	case (loc.SQLite == "") == (loc.Postgres == ""):
		return nil, errors.New("runtime: a store location names a SQLite path or a postgres:// URL, exactly one")
	case loc.Postgres != "":
		return postgres.Open(ctx, loc.Postgres)
	}
	return store.Open(ctx, loc.SQLite)
}
