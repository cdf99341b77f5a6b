package store

import "context"

// OpenAt opens path migrated only up to version, for migration tests.
func OpenAt(ctx context.Context, path string, version int) (*DB, error) {
	return openAt(ctx, path, version, nil)
}

// Migrations is the number of migrations.
var Migrations = len(migrations)
