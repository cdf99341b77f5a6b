package postgres_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/norma-run/norma/internal/pgtest"
	"github.com/norma-run/norma/store"
	"github.com/norma-run/norma/store/postgres"
	"github.com/norma-run/norma/store/storetest"
)

func execSQL(t *testing.T, url, sql string, args ...any) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func backend() storetest.Backend {
	return storetest.Backend{
		New: pgtestURL,
		Open: func(ctx context.Context, url string) (store.Store, error) {
			db, err := postgres.Open(ctx, url)
			if err != nil {
				return nil, err
			}
			return db, nil
		},
		SetVersion: func(t *testing.T, url string, v int) {
			execSQL(t, url, "INSERT INTO norma_schema_migrations (version, name) VALUES ($1, 'from a newer norma')", v)
		},
	}
}

func pgtestURL(t *testing.T) string { return pgtest.URL(t) }

// TestConformance runs the cases every store passes on PostgreSQL.
func TestConformance(t *testing.T) {
	storetest.Run(t, backend())
}

func openRaw(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}
