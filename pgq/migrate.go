package pgq

import (
	"context"
	"fmt"
	"io/fs"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	pgqsql "github.com/pgq-dev/pgq/sql"
)

// Migrate brings the pgq schema up to date with the migrations embedded in this
// module. Concurrent migrators are safe: a session advisory lock serialises them.
// It returns the number of migrations applied.
func Migrate(ctx context.Context, pool *pgxpool.Pool) (int, error) {
	fsys, err := fs.Sub(pgqsql.Migrations, "migrations")
	if err != nil {
		return 0, fmt.Errorf("migrate: %w", err)
	}
	locker, err := lock.NewPostgresSessionLocker(lock.WithLockTimeout(1, 120))
	if err != nil {
		return 0, fmt.Errorf("migrate: %w", err)
	}
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	provider, err := goose.NewProvider(goose.DialectPostgres, db, fsys,
		goose.WithSessionLocker(locker), goose.WithTableName("pgq_goose_version"))
	if err != nil {
		return 0, fmt.Errorf("migrate: %w", err)
	}
	results, err := provider.Up(ctx)
	if err != nil {
		return 0, fmt.Errorf("migrate: %w", err)
	}
	return len(results), nil
}

// CheckSchema returns ErrNotMigrated when the database has no pgq schema, so a program
// can say "run Migrate" once instead of failing every query. It does not compare
// migration versions: Migrate brings an older schema up to date.
func (c *Client) CheckSchema(ctx context.Context) error {
	ok, err := c.q.SchemaExists(ctx)
	if err != nil {
		return fmt.Errorf("check schema: %w", MapError(err))
	}
	if !ok {
		return ErrNotMigrated
	}
	return nil
}
