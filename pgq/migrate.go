package pgq

import (
	"context"
	"fmt"
	"io/fs"
	"path"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

	"github.com/pgq-dev/pgq/internal/dbsqlc"
	pgqsql "github.com/pgq-dev/pgq/sql"
)

// Migrate brings the pgq schema up to date with the SQL embedded in this module: first
// the goose migrations (tables, indexes, types), then every function and view of
// sql/functions, re-created in file-name order in one transaction. Concurrent migrators
// are safe: a session advisory lock held across both steps serialises them. It returns
// the number of migrations applied; the functions are applied every time.
func Migrate(ctx context.Context, pool *pgxpool.Pool) (int, error) {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return 0, fmt.Errorf("migrate: %w", err)
	}
	defer conn.Release()
	q := dbsqlc.New(conn)
	if err := q.MigrateLock(ctx); err != nil {
		return 0, fmt.Errorf("migrate: lock: %w", err)
	}
	defer func() { _ = q.MigrateUnlock(context.WithoutCancel(ctx)) }()

	n, err := migrateTables(ctx, pool)
	if err != nil {
		return n, fmt.Errorf("migrate: %w", err)
	}
	if err := applyFunctions(ctx, conn.Conn()); err != nil {
		return n, fmt.Errorf("migrate: %w", err)
	}
	return n, nil
}

// migrateTables runs the goose migrations not yet applied.
func migrateTables(ctx context.Context, pool *pgxpool.Pool) (int, error) {
	fsys, err := fs.Sub(pgqsql.Files, "migrations")
	if err != nil {
		return 0, err
	}
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	provider, err := goose.NewProvider(goose.DialectPostgres, db, fsys, goose.WithTableName("pgq_goose_version"))
	if err != nil {
		return 0, err
	}
	results, err := provider.Up(ctx)
	return len(results), err
}

// applyFunctions creates or replaces every function and view, file by file in name
// order, in one transaction: a migrate that fails here changes none of them.
func applyFunctions(ctx context.Context, conn *pgx.Conn) error {
	files, err := fs.Glob(pgqsql.Files, "functions/*.sql")
	if err != nil {
		return err
	}
	return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		for _, name := range files { // fs.Glob returns them sorted
			body, err := fs.ReadFile(pgqsql.Files, name)
			if err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, string(body)); err != nil {
				return fmt.Errorf("%s: %w", path.Base(name), err)
			}
		}
		return nil
	})
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
