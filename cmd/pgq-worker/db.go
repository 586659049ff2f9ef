package main

import (
	"context"
	"maps"
	"net/url"
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
	raw := d.url
	if raw == "" {
		raw = os.Getenv("DATABASE_URL")
	}
	if raw == "" {
		return nil, usagef("no database: set DATABASE_URL or pass --database-url")
	}
	d.app.secrets = append(d.app.secrets, passwordsIn(raw)...)
	cfg, err := pgxpool.ParseConfig(raw)
	if err != nil {
		// pgx masks the password only as far as it can tell where it is in a malformed
		// string; exit also masks what passwordsIn found.
		return nil, usagef("database url: %s", err)
	}
	d.app.secrets = append(d.app.secrets, cfg.ConnConfig.Password) // also from a PGPASSWORD or a passfile
	if maxConns > 0 {
		cfg.MaxConns = maxConns
	}
	maps.Copy(cfg.ConnConfig.RuntimeParams, params)
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
		return nil, err // a *pgconn.ConnectError: host, port, user and database, no password
	}
	return pool, nil
}

// client connects and checks that the database is migrated: the start of every command
// but migrate and work. Close the client's pool when done.
func (d *database) client(ctx context.Context) (*pgq.Client, error) {
	pool, err := d.connect(ctx, 0, nil)
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

var keywordPassword = regexp.MustCompile(`password\s*=\s*('(?:[^'\\]|\\.)*'|[^\s&]*)`)

// passwordsIn returns what may be passwords in a connection string, parsable or not:
// the password of a URL's user info, and every password=… value (keyword/value form,
// or a URL query parameter), quoted and unquoted. It errs towards masking too much.
func passwordsIn(raw string) []string {
	var out []string
	add := func(s string) {
		if s != "" {
			out = append(out, s)
			if u, err := url.PathUnescape(s); err == nil && u != s {
				out = append(out, u)
			}
		}
	}
	if _, rest, ok := strings.Cut(raw, "://"); ok {
		// User info runs to the last @: a password may hold an unescaped / or @.
		if at := strings.LastIndex(rest, "@"); at >= 0 {
			if _, pw, ok := strings.Cut(rest[:at], ":"); ok {
				add(pw)
			}
		}
	}
	if u, err := url.Parse(raw); err == nil && u.User != nil {
		if pw, ok := u.User.Password(); ok {
			add(pw)
		}
	}
	for _, m := range keywordPassword.FindAllStringSubmatch(raw, -1) {
		add(m[1])
		add(strings.Trim(m[1], "'"))
	}
	return out
}
