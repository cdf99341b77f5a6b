// Package postgres is Norma's store on PostgreSQL (pgx, a pool of
// connections): the same [store.Store] as the embedded SQLite file, for a
// team whose runs on many machines share one approval inbox and one audit
// chain.
//
// A database holds any number of tenants: every row is keyed by tenant,
// named by the URL's tenant query parameter (default "default"), and each
// tenant has its own hash chain, approvals, ledger and run locks.
//
// The chain is ordered by the database: an append locks the tenant's head
// row (SELECT … FOR UPDATE), reads the head, inserts the rows and moves
// the head in one transaction, so appends from any number of processes
// (each batching its goroutines' events, see audit.Log) interleave into
// one chain. A transaction that returned is durable (synchronous_commit
// is the server's; PostgreSQL's default waits for the WAL flush).
//
// The schema is a list of migrations in code, recorded in the table
// norma_schema_migrations; each is applied in its own transaction under a
// transaction-scoped advisory lock, so processes migrating at once apply
// each once. A database migrated by a newer Norma is refused with
// [store.ErrTooNew].
//
// Changes are announced with NOTIFY in the transaction that makes them:
// [DB.WatchApprovals] wakes a waiting run at once when a request is
// decided, [DB.FollowAudit] tells a follower the new head.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/norma-run/norma/approval"
	"github.com/norma-run/norma/audit"
	"github.com/norma-run/norma/store"
)

// DefaultTenant is the tenant of a URL without a tenant parameter.
const DefaultTenant = "default"

// validTenant is compiled on first use: a counted repetition costs start-up
// time in every norma process, most of which never open PostgreSQL.
var validTenant = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$`)
})

// DB is a PostgreSQL store of one tenant. It is safe for concurrent use.
type DB struct {
	pool     *pgxpool.Pool
	tenant   string
	where    string // the URL, password hidden, for messages
	identity string
}

var (
	_ store.Store      = (*DB)(nil)
	_ approval.Watcher = (*DB)(nil)
	_ audit.Follower   = (*DB)(nil)
)

// Open connects to the database of rawURL (postgres://… or
// postgresql://…; its tenant parameter names the tenant) and migrates it
// to the current schema. Errors never hold the URL's password.
func Open(ctx context.Context, rawURL string) (*DB, error) {
	return openAt(ctx, rawURL, len(migrations))
}

func openAt(ctx context.Context, rawURL string, version int) (*DB, error) {
	where := store.Redact(rawURL)
	cfg, tenant, err := parseURL(rawURL)
	if err != nil {
		return nil, fmt.Errorf("store: %s: %w", where, err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("store: %s: %w", where, err)
	}
	c := cfg.ConnConfig
	d := &DB{pool: pool, tenant: tenant, where: where,
		identity: fmt.Sprintf("postgres://%s@%s:%d/%s?tenant=%s", c.User, c.Host, c.Port, c.Database, tenant)}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("store: %s: %w", where, err)
	}
	if err := d.migrate(ctx, version); err != nil {
		pool.Close()
		return nil, fmt.Errorf("store: %s: %w", where, err)
	}
	return d, nil
}

// parseURL splits the tenant off rawURL and parses the rest for pgx.
func parseURL(rawURL string) (*pgxpool.Config, string, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return nil, "", errors.New("not a postgres:// URL")
	}
	q := u.Query()
	tenant := DefaultTenant
	if q.Has("tenant") {
		tenant = q.Get("tenant")
		if !validTenant().MatchString(tenant) {
			return nil, "", fmt.Errorf("tenant %q: want 1 to 63 letters, digits, '_', '.' or '-'", tenant)
		}
		q.Del("tenant")
		u.RawQuery = q.Encode()
	}
	cfg, err := pgxpool.ParseConfig(u.String())
	if err != nil {
		return nil, "", err // pgconn hides the password in what it quotes
	}
	return cfg, tenant, nil
}

// Tenant is the tenant this DB reads and writes.
func (d *DB) Tenant() string { return d.tenant }

// Identity names the database and tenant (no credential): two DBs with
// one identity are one chain.
func (d *DB) Identity() string { return d.identity }

// String is where the database is, password hidden.
func (d *DB) String() string { return d.where }

// Close closes the pool.
func (d *DB) Close() error {
	d.pool.Close()
	return nil
}

// tx runs fn in one read-committed transaction; the row locks fn takes
// exclude other writers.
func (d *DB) tx(ctx context.Context, fn func(pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, d.pool, fn)
}

// placeholder is PostgreSQL's: argument n is "$n".
func placeholder(n int) string { return "$" + strconv.Itoa(n) }
