package pgtest_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/norma-run/norma/internal/pgtest"
)

func execSQL(t *testing.T, url, sql string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func query(t *testing.T, url, sql string) int {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, sql).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// TestURL: each call is a fresh, empty database, gone once its test ends.
func TestURL(t *testing.T) {
	var name string
	t.Run("create", func(t *testing.T) {
		a, b := pgtest.URL(t), pgtest.URL(t)
		if a == b {
			t.Fatalf("two databases share one URL %s", a)
		}
		execSQL(t, a, "CREATE TABLE x (v int)")
		if n := query(t, b, "SELECT count(*) FROM pg_tables WHERE tablename = 'x'"); n != 0 {
			t.Fatalf("the second database sees the first's table")
		}
		conn, err := pgx.Connect(t.Context(), a)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(context.Background())
		conn.QueryRow(t.Context(), "SELECT current_database()").Scan(&name)
	})
	if n := query(t, pgtest.ServerURL(t), "SELECT count(*) FROM pg_database WHERE datname = '"+name+"'"); name == "" || n != 0 {
		t.Fatalf("database %q still exists after its test (%d)", name, n)
	}
}

// TestClusterKill: a private server killed with SIGKILL (postmaster and
// backends) keeps what was committed and starts again.
func TestClusterKill(t *testing.T) {
	s := pgtest.Cluster(t)
	db := s.Database(t)
	execSQL(t, db, "CREATE TABLE x (v int); INSERT INTO x SELECT generate_series(1, 100)")
	s.Kill()
	ctx := context.Background()
	if conn, err := pgx.Connect(ctx, db); err == nil {
		conn.Close(ctx)
		t.Fatal("the killed server still accepts connections")
	}
	s.Start()
	if n := query(t, db, "SELECT count(*) FROM x"); n != 100 {
		t.Fatalf("after kill -9 and restart: %d rows, want 100", n)
	}
}
