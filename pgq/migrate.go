package pgq

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"strings"
	"text/template"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

	"github.com/pgq-dev/pgq/internal/dbsqlc"
	pgqsql "github.com/pgq-dev/pgq/sql"
)

// Roles names the roles pgq grants to (see sql/privileges.sql and the README's
// Security section). Migrate creates each one NOLOGIN when it is missing; applications
// grant them to their login roles.
type Roles struct {
	Owner         string // owns the schema and every object in it; NOLOGIN
	Producer      string // dispatches jobs
	Worker        string // runs the worker protocol; its login role runs SQL handlers
	Reader        string // reads the views and history, payloads hidden
	PayloadReader string // may also read payloads
	Admin         string // defines job classes, queues and limits; operates jobs; a reader
}

// DefaultRoles returns the roles' default names, each with prefix before it (for
// installations that keep several pgq schemas, or a naming rule, on one cluster).
func DefaultRoles(prefix string) Roles {
	return Roles{Owner: prefix + "pgq_owner", Producer: prefix + "pgq_producer", Worker: prefix + "pgq_worker",
		Reader: prefix + "pgq_reader", PayloadReader: prefix + "pgq_payload_reader", Admin: prefix + "pgq_admin"}
}

var roleName = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

func (r Roles) check() error {
	for _, n := range []string{r.Owner, r.Producer, r.Worker, r.Reader, r.PayloadReader, r.Admin} {
		if !roleName.MatchString(n) {
			return fmt.Errorf("%w: role name %q: use lower-case letters, digits and _ (at most 63)", ErrInvalidArgument, n)
		}
	}
	return nil
}

// MigrateOption configures Migrate.
type MigrateOption func(*Roles)

// WithRoles sets the names of the roles Migrate creates and grants to. Default:
// DefaultRoles("").
func WithRoles(r Roles) MigrateOption { return func(c *Roles) { *c = r } }

// Migrate brings the pgq schema up to date with the SQL embedded in this module: first
// the schema itself and goose's version table in it (VersionTable; an earlier release's
// public.pgq_goose_version is moved there with its history), then the goose migrations
// (tables, indexes, types), then, in one transaction, the roles
// (created NOLOGIN when missing, which needs CREATEROLE), the ownership of every object
// by the owner role, every function and view of sql/functions re-created as the owner in
// file-name order, and the grants of sql/privileges.sql. Concurrent migrators are safe:
// a session advisory lock held across both steps serialises them. It returns the number
// of migrations applied; the rest is applied every time. Errors wrap ErrInvalidArgument
// for a bad role name.
func Migrate(ctx context.Context, pool *pgxpool.Pool, opts ...MigrateOption) (int, error) {
	roles := DefaultRoles("")
	for _, o := range opts {
		o(&roles)
	}
	if err := roles.check(); err != nil {
		return 0, fmt.Errorf("migrate: %w", err)
	}
	privileges, err := privilegeSections(roles)
	if err != nil {
		return 0, fmt.Errorf("migrate: %w", err)
	}
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

	bootstrap, err := fs.ReadFile(pgqsql.Files, "bootstrap.sql")
	if err != nil {
		return 0, fmt.Errorf("migrate: %w", err)
	}
	if _, err := conn.Exec(ctx, string(bootstrap)); err != nil {
		return 0, fmt.Errorf("migrate: bootstrap.sql: %w", err)
	}
	n, err := migrateTables(ctx, pool)
	if err != nil {
		return n, fmt.Errorf("migrate: %w", err)
	}
	if err := applyFunctions(ctx, conn.Conn(), roles, privileges); err != nil {
		return n, fmt.Errorf("migrate: %w", err)
	}
	return n, nil
}

// VersionTable is where goose records the migrations applied: in schema pgq. Migrate
// moves the table of earlier releases, public.pgq_goose_version, there (bootstrap.sql).
const VersionTable = "pgq.goose_version"

// migrateTables runs the goose migrations not yet applied.
func migrateTables(ctx context.Context, pool *pgxpool.Pool) (int, error) {
	fsys, err := fs.Sub(pgqsql.Files, "migrations")
	if err != nil {
		return 0, err
	}
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	provider, err := goose.NewProvider(goose.DialectPostgres, db, fsys, goose.WithTableName(VersionTable))
	if err != nil {
		return 0, err
	}
	results, err := provider.Up(ctx)
	return len(results), err
}

// applyFunctions, in one transaction (a migrate that fails here changes nothing of it):
// the roles and ownership as the migrator, then, as the owner, every function and view,
// file by file in name order, then the grants.
func applyFunctions(ctx context.Context, conn *pgx.Conn, roles Roles, privileges map[string]string) error {
	files, err := fs.Glob(pgqsql.Files, "functions/*.sql")
	if err != nil {
		return err
	}
	return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		q := dbsqlc.New(tx)
		for _, section := range []string{"roles", "ownership"} {
			if _, err := tx.Exec(ctx, privileges[section]); err != nil {
				return fmt.Errorf("privileges.sql, %s: %w", section, err)
			}
		}
		if err := q.MigrateSetRole(ctx, roles.Owner); err != nil {
			return fmt.Errorf("set role %s: %w", roles.Owner, err)
		}
		for _, name := range files { // fs.Glob returns them sorted
			body, err := fs.ReadFile(pgqsql.Files, name)
			if err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, string(body)); err != nil {
				return fmt.Errorf("%s: %w", path.Base(name), err)
			}
		}
		if _, err := tx.Exec(ctx, privileges["grants"]); err != nil {
			return fmt.Errorf("privileges.sql, grants: %w", err)
		}
		return q.MigrateResetRole(ctx)
	})
}

// privilegeSections fills sql/privileges.sql with the role names and splits it at its
// "-- section: NAME" lines.
func privilegeSections(roles Roles) (map[string]string, error) {
	text, err := fs.ReadFile(pgqsql.Files, "privileges.sql")
	if err != nil {
		return nil, err
	}
	tmpl, err := template.New("privileges.sql").Funcs(template.FuncMap{
		"ident": func(s string) string { return pgx.Identifier{s}.Sanitize() },
		"lit":   func(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" },
	}).Parse(string(text))
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := tmpl.Execute(&b, roles); err != nil {
		return nil, err
	}
	sections := map[string]string{}
	name := ""
	for _, line := range strings.SplitAfter(b.String(), "\n") {
		if rest, ok := strings.CutPrefix(line, "-- section: "); ok {
			name = strings.Fields(rest)[0]
		}
		sections[name] += line
	}
	for _, want := range []string{"roles", "ownership", "grants"} {
		if strings.TrimSpace(sections[want]) == "" {
			return nil, fmt.Errorf("privileges.sql has no section %q", want)
		}
	}
	return sections, nil
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
