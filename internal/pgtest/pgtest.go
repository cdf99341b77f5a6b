// Package pgtest gives tests a real PostgreSQL: a fresh database in the
// server that $NORMA_TEST_POSTGRES names ([URL]), or a private server of
// their own that they may kill -9 and start again ([Cluster]).
//
// $NORMA_TEST_POSTGRES is a superuser URL of a running server, such as
// postgres://postgres@127.0.0.1:5433/postgres?sslmode=disable; .ci/run
// starts one. Without it the tests that need PostgreSQL skip, except
// under NORMA_REQUIRE_SANDBOX=1 (CI), where a skip would hide that the
// PostgreSQL store went untested, so they fail.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Env names the server the tests use.
const Env = "NORMA_TEST_POSTGRES"

// Require skips t (or fails it under NORMA_REQUIRE_SANDBOX=1) when
// PostgreSQL cannot be had, for the reason why.
func Require(t testing.TB, why string) {
	t.Helper()
	if os.Getenv("NORMA_REQUIRE_SANDBOX") == "1" {
		t.Fatalf("PostgreSQL is required (NORMA_REQUIRE_SANDBOX=1): %s", why)
	}
	t.Skipf("no PostgreSQL: %s", why)
}

// ServerURL returns $NORMA_TEST_POSTGRES, skipping t when it is unset.
func ServerURL(t testing.TB) string {
	t.Helper()
	s := os.Getenv(Env)
	if s == "" {
		Require(t, "$"+Env+" is not set (a superuser URL of a running server)")
	}
	return s
}

// URL creates a fresh, empty database in the server of
// $NORMA_TEST_POSTGRES, dropped when t ends, and returns its URL.
func URL(t testing.TB) string {
	t.Helper()
	return CreateDatabase(t, ServerURL(t))
}

// CreateDatabase creates a fresh database in the server of superuser URL
// server, dropped (with whoever is still connected) when t ends, and
// returns its URL: server's with the database name replaced.
func CreateDatabase(t testing.TB, server string) string {
	t.Helper()
	u, err := url.Parse(server)
	if err != nil {
		t.Fatalf("pgtest: the server URL does not parse")
	}
	var b [6]byte
	rand.Read(b[:])
	name := "norma_test_" + hex.EncodeToString(b[:])
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := execOn(ctx, server, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("pgtest: create database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := execOn(ctx, server, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("pgtest: drop database %s: %v", name, err)
		}
	})
	u.Path = "/" + name
	return u.String()
}

// execOn runs one statement on its own connection to server.
func execOn(ctx context.Context, server, sql string) error {
	conn, err := pgx.Connect(ctx, server)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, sql)
	return err
}
