// Package pgqtest gives tests their own migrated PostgreSQL database: the schema is
// migrated once into a template database (named by a hash of the embedded SQL, so a
// changed migration or function makes a new one), and each test clones it with CREATE DATABASE …
// TEMPLATE and drops it at cleanup. DATABASE_URL names the server (default
// postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable).
package pgqtest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgq-dev/pgq/pgq"
	pgqsql "github.com/pgq-dev/pgq/sql"
)

// AdminURL is the server tests run against.
func AdminURL() string {
	if u := os.Getenv("DATABASE_URL"); u != "" {
		return u
	}
	return "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
}

var counter atomic.Int64

// DB is a test's own database.
type DB struct {
	URL  string        // connection string of the test database, as the server's admin
	Pool *pgxpool.Pool // a pool on it, closed at cleanup

	// WorkerURL connects to the database as WorkerRole, a login member of pgq_worker:
	// workers in tests run with a worker's privileges, not the owner's (S43-S46). Set
	// for a migrated database; the tables, sequences and schemas a test creates are
	// granted to it by the template's default privileges, so SQL handlers can use them.
	WorkerURL  string
	WorkerPool *pgxpool.Pool // a pool on WorkerURL, closed at cleanup
}

// WorkerRole is the login role tests run workers as: a member of pgq_worker only.
const WorkerRole = "pgq_test_worker"

// New clones the migrated template into a new database for t and returns it.
func New(t testing.TB) *DB {
	t.Helper()
	return create(t, true, loadMinFromEnv(t))
}

// loadMinFromEnv is PGQ_TEST_LOAD_MIN, the pgq.load_min of every database New makes
// (-1, pgq's default, when unset): the whole suite can run with every dispatch of two
// jobs or more kept as loads (S85), or with none.
func loadMinFromEnv(t testing.TB) int {
	v := os.Getenv("PGQ_TEST_LOAD_MIN")
	if v == "" {
		return -1
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		t.Fatalf("pgqtest: PGQ_TEST_LOAD_MIN must be a whole number, got %q", v)
	}
	return n
}

// NewWithLoads is New with the setting pgq.load_min at min for every session of the
// database: dispatches of min payloads or more are kept as loads (S85); 0: never.
func NewWithLoads(t testing.TB, min int) *DB {
	t.Helper()
	return create(t, true, min)
}

// NewEmpty returns a new database for t with no pgq schema in it: for tests of what
// migrates it, or of what happens before it is migrated.
func NewEmpty(t testing.TB) *DB {
	t.Helper()
	return create(t, false, -1)
}

func create(t testing.TB, migrated bool, loadMin int) *DB {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin, err := pgx.Connect(ctx, AdminURL())
	if err != nil {
		t.Fatalf("pgqtest: connect %s: %v (is PostgreSQL running? .ci/run starts one)", AdminURL(), err)
	}
	defer admin.Close(ctx)
	name := fmt.Sprintf("pgq_test_%d_%d", os.Getpid(), counter.Add(1))
	stmt := "CREATE DATABASE " + name
	if migrated {
		tmpl, err := template(ctx, admin)
		if err != nil {
			t.Fatalf("pgqtest: template: %v", err)
		}
		stmt += " TEMPLATE " + tmpl
	}
	if _, err := admin.Exec(ctx, stmt); err != nil {
		t.Fatalf("pgqtest: create database: %v", err)
	}
	if migrated && loadMin >= 0 {
		if _, err := admin.Exec(ctx, fmt.Sprintf("ALTER DATABASE %s SET pgq.load_min = %d", name, loadMin)); err != nil {
			t.Fatalf("pgqtest: set pgq.load_min: %v", err)
		}
	}
	db := &DB{URL: withDatabase(AdminURL(), name)}
	cfg, err := pgxpool.ParseConfig(db.URL)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 30
	db.Pool, err = pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if migrated {
		db.WorkerURL = withUser(db.URL, WorkerRole)
		wcfg, err := pgxpool.ParseConfig(db.WorkerURL)
		if err != nil {
			t.Fatal(err)
		}
		wcfg.MaxConns = 30
		if db.WorkerPool, err = pgxpool.NewWithConfig(ctx, wcfg); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		if db.WorkerPool != nil {
			db.WorkerPool.Close()
		}
		db.Pool.Close()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		admin, err := pgx.Connect(ctx, AdminURL())
		if err != nil {
			t.Logf("pgqtest: drop %s: %v", name, err)
			return
		}
		defer admin.Close(ctx)
		if _, err := admin.Exec(ctx, fmt.Sprintf("DROP DATABASE IF EXISTS %s WITH (FORCE)", name)); err != nil {
			t.Logf("pgqtest: drop %s: %v", name, err)
		}
	})
	return db
}

// templateVersion changes the template's name when what grantTestRoles does changes.
const templateVersion = "3: a test login of every kind, a second producer, an admin that dispatches"

// template returns the name of the migrated template database, creating it under an
// advisory lock when no test process has yet.
func template(ctx context.Context, admin *pgx.Conn) (string, error) {
	h := sha256.New()
	h.Write([]byte(templateVersion))
	err := fs.WalkDir(pgqsql.Files, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(pgqsql.Files, path)
		h.Write([]byte(path))
		h.Write(b)
		return err
	})
	if err != nil {
		return "", err
	}
	sum := hex.EncodeToString(h.Sum(nil))[:12]
	name := "pgq_template_" + sum
	if _, err := admin.Exec(ctx, "SELECT pg_advisory_lock(hashtext($1))", name); err != nil {
		return "", err
	}
	defer admin.Exec(context.Background(), "SELECT pg_advisory_unlock(hashtext($1))", name)
	var exists bool
	if err := admin.QueryRow(ctx, "SELECT EXISTS (SELECT FROM pg_database WHERE datname = $1 AND datistemplate)", name).Scan(&exists); err != nil {
		return "", err
	}
	if exists {
		return name, nil
	}
	if _, err := admin.Exec(ctx, fmt.Sprintf("DROP DATABASE IF EXISTS %s WITH (FORCE)", name)); err != nil {
		return "", err
	}
	if _, err := admin.Exec(ctx, fmt.Sprintf("CREATE DATABASE %s", name)); err != nil {
		return "", err
	}
	pool, err := pgxpool.New(ctx, withDatabase(AdminURL(), name))
	if err != nil {
		return "", err
	}
	_, err = pgq.Migrate(ctx, pool)
	if err == nil {
		err = grantTestRoles(ctx, admin, pool)
	}
	pool.Close()
	if err != nil {
		return "", fmt.Errorf("migrate template: %w", err)
	}
	if _, err := admin.Exec(ctx, fmt.Sprintf("ALTER DATABASE %s IS_TEMPLATE true", name)); err != nil {
		return "", err
	}
	return name, nil
}

// Test logins, one per kind of pgq role, each a member of that role only (created by
// grantTestRoles): security tests connect as them with ConnAs.
const (
	ProducerRole      = "pgq_test_producer"
	ReaderRole        = "pgq_test_reader"
	PayloadReaderRole = "pgq_test_payload_reader" // pgq_reader and pgq_payload_reader
	AdminRole         = "pgq_test_admin"
	NobodyRole        = "pgq_test_nobody" // no pgq role at all
	// OtherProducerRole is a second producer: a batch one producer dispatched is not
	// the other's (S93).
	OtherProducerRole = "pgq_test_producer_other"
	// AdminProducerRole may define classes and dispatch: the ceilings of a producer's
	// dispatch are not its (S90).
	AdminProducerRole = "pgq_test_admin_producer"
)

var testLogins = map[string][]string{
	WorkerRole:        {"pgq_worker"},
	ProducerRole:      {"pgq_producer"},
	ReaderRole:        {"pgq_reader"},
	PayloadReaderRole: {"pgq_reader", "pgq_payload_reader"},
	AdminRole:         {"pgq_admin"},
	NobodyRole:        nil,
	OtherProducerRole: {"pgq_producer"},
	AdminProducerRole: {"pgq_admin", "pgq_producer"},
}

// grantTestRoles creates the test logins when the server has none (roles are the
// server's, shared by every test database), each a member of its pgq roles, and lets
// WorkerRole use what tests create in the template's clones: their schemas, tables and
// sequences, as an application grants its worker role what its SQL handlers touch.
func grantTestRoles(ctx context.Context, admin *pgx.Conn, template *pgxpool.Pool) error {
	if _, err := admin.Exec(ctx, "SELECT pg_advisory_lock(hashtext('pgqtest roles'))"); err != nil {
		return err
	}
	defer admin.Exec(context.Background(), "SELECT pg_advisory_unlock(hashtext('pgqtest roles'))")
	for login, groups := range testLogins {
		stmt := "DO $$ BEGIN IF to_regrole('" + login + "') IS NULL THEN CREATE ROLE " + login + " LOGIN; END IF; "
		for _, g := range groups {
			stmt += "GRANT " + g + " TO " + login + "; "
		}
		if _, err := admin.Exec(ctx, stmt+"END $$"); err != nil {
			return err
		}
	}
	_, err := template.Exec(ctx, `
		ALTER DEFAULT PRIVILEGES GRANT ALL ON TABLES TO `+WorkerRole+`;
		ALTER DEFAULT PRIVILEGES GRANT ALL ON SEQUENCES TO `+WorkerRole+`;
		ALTER DEFAULT PRIVILEGES GRANT USAGE ON SCHEMAS TO `+WorkerRole)
	return err
}

// ConnAs connects to the test database as login (one of the test logins above), closed
// at cleanup.
func (db *DB) ConnAs(t testing.TB, login string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), withUser(db.URL, login))
	if err != nil {
		t.Fatalf("pgqtest: connect as %s: %v", login, err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// PoolAs is ConnAs for a pool, closed at cleanup: for a client (pgq.NewClient) that
// runs as one of the test logins.
func (db *DB) PoolAs(t testing.TB, login string) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), withUser(db.URL, login))
	if err != nil {
		t.Fatalf("pgqtest: pool as %s: %v", login, err)
	}
	t.Cleanup(pool.Close)
	return pool
}

func withUser(raw, user string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" {
		return strings.TrimSpace(raw) + " user=" + user + " password="
	}
	u.User = url.User(user)
	return u.String()
}

func withDatabase(raw, name string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" {
		// keyword/value form
		return strings.TrimSpace(raw) + " dbname=" + name
	}
	u.Path = "/" + name
	return u.String()
}

// Exec runs SQL on the test database and fails the test on error.
func (db *DB) Exec(t testing.TB, sql string, args ...any) {
	t.Helper()
	if _, err := db.Pool.Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("exec %q: %v", sql, err)
	}
}

// Scalar returns the single value of a query, failing the test on error.
func Scalar[T any](t testing.TB, db *DB, sql string, args ...any) T {
	t.Helper()
	var v T
	if err := db.Pool.QueryRow(context.Background(), sql, args...).Scan(&v); err != nil {
		t.Fatalf("query %q: %v", sql, err)
	}
	return v
}

// Setting returns current_setting(name) on c. Under a statement_timeout of a
// millisecond, a new connection's first statement is cancelled about once in a hundred
// (SQLSTATE 57014), and not when sent again: a cancelled read is sent again, a few times.
func Setting(t testing.TB, c interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, name string) string {
	t.Helper()
	var v string
	var err error
	for range 5 {
		if err = c.QueryRow(context.Background(), `SELECT current_setting($1)`, name).Scan(&v); err == nil {
			return v
		}
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "57014" {
			break
		}
	}
	t.Fatalf("current_setting(%q): %v", name, err)
	return ""
}
