package main

import (
	"context"
	"fmt"
	"maps"
	"os"
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/pflag"

	"github.com/pgq-dev/pgq/internal/pgcodec"
	"github.com/pgq-dev/pgq/pgq"
)

// database is the --database-url flag of the commands that connect. Its default is
// read from $DATABASE_URL when the command runs, never shown: help and usage errors
// would print the password in it.
type database struct {
	app *app
	url string
}

func newDatabase(a *app, fs *pflag.FlagSet) *database {
	d := &database{app: a}
	fs.StringVar(&d.url, "database-url", "", "PostgreSQL `URL` (default $DATABASE_URL)")
	return d
}

// connect opens a pool; maxConns > 0 caps its size, and params are session settings
// sent when each connection starts. It records the URL's password so that no error
// message shows it.
func (d *database) connect(ctx context.Context, maxConns int32, params map[string]string) (*pgxpool.Pool, error) {
	return d.connectURL(ctx, d.url, maxConns, params, false)
}

// connectURL is connect for url (the --database-url default when empty). pooled: the
// URL reaches a transaction pooler, so no statement is prepared by name (pgx's
// QueryExecModeExec): consecutive transactions may run on different server sessions.
func (d *database) connectURL(ctx context.Context, url string, maxConns int32, params map[string]string, pooled bool) (*pgxpool.Pool, error) {
	raw := url
	if raw == "" {
		raw = os.Getenv("DATABASE_URL")
	}
	if raw == "" {
		return nil, usagef("no database: set DATABASE_URL or pass --database-url")
	}
	d.app.urls = append(d.app.urls, raw)
	cfg, err := pgxpool.ParseConfig(raw)
	if err != nil {
		// pgx masks the password only as far as it can tell where it is in a malformed
		// string; exit masks the connection string wherever it appears, and the password
		// of whatever else looks like one.
		return nil, usagef("database url: %s", err)
	}
	if maxConns > 0 {
		cfg.MaxConns = maxConns
	}
	maps.Copy(cfg.ConnConfig.RuntimeParams, params)
	if pooled {
		cfg.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeExec
	}
	cfg.AfterConnect = func(_ context.Context, conn *pgx.Conn) error {
		pgcodec.Register(conn.TypeMap()) // uuids as bytes: the worker's heartbeats and failures too
		return nil
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		if len(params) > 0 && strings.Contains(err.Error(), "unsupported startup parameter") {
			// A pooler (PgBouncer) refuses the settings it does not track: connect
			// without them; the worker sets them on each session instead.
			fmt.Fprintf(d.app.stderr, "pgq-worker: the server refused startup parameters (a pooler?); they are set on each session instead: %v\n", err)
			return d.connectURL(ctx, url, maxConns, nil, pooled)
		}
		return nil, err // a *pgconn.ConnectError: host, port, user and database, no password
	}
	return pool, nil
}

// client connects and checks that the database is migrated: the start of every command
// but migrate and work. Close the client's pool when done. Its sessions' search_path is
// pg_catalog alone: every name the commands use is schema-qualified, and so is every
// function name PostgreSQL prints for them (a SQL handler's).
func (d *database) client(ctx context.Context) (*pgq.Client, error) {
	pool, err := d.connect(ctx, 0, map[string]string{"search_path": "pg_catalog"})
	if err != nil {
		return nil, err
	}
	client, err := pgq.NewClient(pool)
	if err == nil {
		err = client.CheckSchema(ctx)
	}
	if err != nil {
		pool.Close()
		return nil, err
	}
	return client, nil
}

var (
	// keywordPassword is a password=… value: of the keyword/value form, or a URL's query
	// parameter; quoted or not.
	keywordPassword = regexp.MustCompile(`(password\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s&'"]*)`)
	// userinfoPassword is the password of a URL's user info. User info runs to the last
	// @ before the path: a password may hold an unescaped / or @.
	userinfoPassword = regexp.MustCompile(`([a-zA-Z][a-zA-Z0-9+.-]*://[^:/@\s]*:)(\S*)@`)
)

// maskConnString masks the passwords of the connection strings in s: a URL's user info
// password and every password=… value become xxxxx. It errs towards masking too much,
// but touches nothing else.
func maskConnString(s string) string {
	s = userinfoPassword.ReplaceAllString(s, "${1}xxxxx@")
	return keywordPassword.ReplaceAllString(s, "${1}xxxxx")
}
