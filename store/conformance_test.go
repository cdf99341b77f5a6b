package store_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/norma-run/norma/store"
	"github.com/norma-run/norma/store/storetest"
)

// TestConformance runs the cases every store passes on SQLite: two
// stores on one file are two processes sharing it.
func TestConformance(t *testing.T) {
	storetest.Run(t, storetest.Backend{
		New: func(t *testing.T) string { return filepath.Join(t.TempDir(), store.FileName) },
		Open: func(ctx context.Context, path string) (store.Store, error) {
			db, err := store.Open(ctx, path)
			if err != nil {
				return nil, err // not a typed nil
			}
			return db, nil
		},
		SetVersion: func(t *testing.T, path string, v int) {
			raw, err := sql.Open("sqlite", "file:"+path)
			if err != nil {
				t.Fatal(err)
			}
			defer raw.Close()
			if _, err := raw.Exec(fmt.Sprintf("PRAGMA user_version = %d", v)); err != nil {
				t.Fatal(err)
			}
		},
	})
}
