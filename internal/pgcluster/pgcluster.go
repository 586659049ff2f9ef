// Package pgcluster starts private PostgreSQL servers for tests that restart, stop or
// break the server: each test gets its own cluster (initdb into a temporary directory,
// a free TCP port on 127.0.0.1, its socket in that directory), so it never touches the
// shared server at DATABASE_URL or that server's configuration.
//
// Start skips the test when no initdb is found. As root, the server runs as the
// operating-system user postgres (PostgreSQL refuses to run as root); otherwise as the
// caller. A cluster is stopped (-m immediate) and its directory removed at cleanup; a
// cluster left behind by a test process that was killed is removed by the next Start.
//
// Connections the package opens itself (Exec, TerminateBackends, the pools of CreateDB
// and Pool) carry application_name AppName and override statement_timeout, lock_timeout
// and idle_in_transaction_session_timeout with 0, so a test may set those on a role or a
// database without its own queries being cut short.
package pgcluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgq-dev/pgq/pgq"
)

// AppName is the application_name of every connection this package opens, so a test can
// leave them out when it terminates the others.
const AppName = "pgcluster"

// Superuser is the role initdb creates and every URL connects as (trust authentication).
const Superuser = "postgres"

// Cluster is one private PostgreSQL server. Its methods may be called from the test's
// goroutine; Restart, Stop and Start must not run concurrently with each other.
type Cluster struct {
	Dir     string // temporary root: data/, the unix socket, log
	DataDir string
	Port    int

	bin  string
	cred *syscall.Credential // nil: run as ourselves
	cfg  config

	mu    sync.Mutex
	pools []*pgxpool.Pool // reset after a restart, closed at cleanup
}

type config struct {
	maxConnections int
	settings       [][2]string
}

// Option configures Start.
type Option func(*config)

// MaxConnections sets max_connections (default 100).
func MaxConnections(n int) Option { return func(c *config) { c.maxConnections = n } }

// Setting adds a line `name = 'value'` to postgresql.conf, after the package's own
// settings, so it wins over them.
func Setting(name, value string) Option {
	return func(c *config) { c.settings = append(c.settings, [2]string{name, value}) }
}

var (
	binOnce sync.Once
	binDir  string
	binErr  error

	sweepOnce sync.Once
)

// BinDir returns the directory holding initdb, pg_ctl and postgres: $PGCLUSTER_BINDIR,
// else `pg_config --bindir`, else the highest version under /usr/lib/postgresql, else
// the directory of initdb on $PATH.
func BinDir() (string, error) {
	binOnce.Do(func() { binDir, binErr = findBinDir() })
	return binDir, binErr
}

func findBinDir() (string, error) {
	has := func(dir string) bool {
		st, err := os.Stat(filepath.Join(dir, "initdb"))
		return err == nil && !st.IsDir()
	}
	if d := os.Getenv("PGCLUSTER_BINDIR"); d != "" {
		if has(d) {
			return d, nil
		}
		return "", fmt.Errorf("PGCLUSTER_BINDIR=%s holds no initdb", d)
	}
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		if d := strings.TrimSpace(string(out)); has(d) {
			return d, nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if has(d) {
			return d, nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	return "", errors.New("no initdb: not under pg_config --bindir, /usr/lib/postgresql/*/bin or $PATH (install PostgreSQL's server package, e.g. Debian's postgresql)")
}

// version is the major version in /usr/lib/postgresql/<version>/bin.
func version(binDir string) float64 {
	v, _ := strconv.ParseFloat(filepath.Base(filepath.Dir(binDir)), 64)
	return v
}

// Start creates and starts a private cluster for t, stopped and removed at cleanup. It
// skips t when PostgreSQL's server binaries are missing, or when running as root and no
// user postgres exists to run them.
func Start(t testing.TB, opts ...Option) *Cluster {
	t.Helper()
	cfg := config{maxConnections: 100}
	for _, o := range opts {
		o(&cfg)
	}
	bin, err := BinDir()
	if err != nil {
		t.Skipf("pgcluster: %v", err)
	}
	c := newCluster(t, bin, cfg)
	if out, err := c.run("initdb", "-D", c.DataDir, "-U", Superuser, "-A", "trust", "-E", "UTF8",
		"--locale=C", "--no-sync"); err != nil {
		t.Fatalf("pgcluster: initdb: %v\n%s", err, out)
	}
	conf := []string{
		"listen_addresses = '127.0.0.1'",
		fmt.Sprintf("max_connections = %d", cfg.maxConnections),
		"shared_buffers = '32MB'",
		// Durability against an OS crash is not tested here: a stopped or killed server
		// keeps every write that reached the kernel, and -m immediate recovers from WAL.
		// synchronous_commit stays on, so a commit reported to a client survives it.
		"fsync = off",
		"full_page_writes = off",
		"max_wal_size = '1GB'",
		"checkpoint_timeout = '30min'",
		"log_min_messages = 'warning'",
	}
	c.configure(t, conf)
	c.startOnFreePort(t)
	return c
}

// newCluster makes the cluster's temporary directory, to be removed at cleanup, and
// sets who runs its binaries.
func newCluster(t testing.TB, bin string, cfg config) *Cluster {
	t.Helper()
	c := &Cluster{bin: bin, cfg: cfg}
	if os.Geteuid() == 0 {
		u, err := user.Lookup(Superuser)
		if err != nil {
			t.Skipf("pgcluster: running as root and there is no user %q to run PostgreSQL as: %v", Superuser, err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		c.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	sweepOnce.Do(sweepOrphans)

	var err error
	c.Dir, err = os.MkdirTemp("", "pgcluster-")
	if err != nil {
		t.Fatalf("pgcluster: %v", err)
	}
	// Written first: a directory with an owner file is ours to sweep once that process is gone.
	if err := os.WriteFile(filepath.Join(c.Dir, "owner"), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		t.Fatalf("pgcluster: %v", err)
	}
	if c.cred != nil {
		if err := os.Chown(c.Dir, int(c.cred.Uid), int(c.cred.Gid)); err != nil {
			t.Fatalf("pgcluster: chown %s: %v", c.Dir, err)
		}
	}
	c.DataDir = filepath.Join(c.Dir, "data")
	t.Cleanup(func() { c.destroy(t) })
	return c
}

// configure appends conf, the cluster's socket directory and the Setting options to
// postgresql.conf, in that order, so that later lines win.
func (c *Cluster) configure(t testing.TB, conf []string) {
	t.Helper()
	conf = append(conf, fmt.Sprintf("unix_socket_directories = '%s'", c.Dir))
	for _, s := range c.cfg.settings {
		conf = append(conf, fmt.Sprintf("%s = '%s'", s[0], strings.ReplaceAll(s[1], "'", "''")))
	}
	f, err := os.OpenFile(filepath.Join(c.DataDir, "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatalf("pgcluster: %v", err)
	}
	_, err = f.WriteString("\n# pgcluster\n" + strings.Join(conf, "\n") + "\n")
	f.Close()
	if err != nil {
		t.Fatalf("pgcluster: %v", err)
	}
}

// startOnFreePort starts the server on a free port.
func (c *Cluster) startOnFreePort(t testing.TB) {
	t.Helper()
	// A port found free may be taken before the server binds it: try another.
	for i := 0; ; i++ {
		c.Port = freePort(t)
		out, err := c.pgctl("start")
		if err == nil {
			return
		}
		if i < 4 && strings.Contains(c.Log(), "could not bind") {
			continue
		}
		t.Fatalf("pgcluster: pg_ctl start: %v\n%s\nserver log:\n%s", err, out, c.Log())
	}
}

func freePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("pgcluster: find a free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// run runs one of the server's binaries as the cluster's operating-system user.
func (c *Cluster) run(name string, args ...string) ([]byte, error) {
	cmd := exec.Command(filepath.Join(c.bin, name), args...)
	cmd.Dir = c.Dir
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	if c.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
		cmd.Env = append(cmd.Env, "HOME="+c.Dir, "USER="+Superuser, "LOGNAME="+Superuser)
	}
	return cmd.CombinedOutput()
}

// pgctl runs pg_ctl ACTION on the data directory, waiting for it to finish; the port is
// given on every start, so a restart keeps it.
func (c *Cluster) pgctl(action string, args ...string) ([]byte, error) {
	full := append([]string{action, "-D", c.DataDir, "-w", "-t", "60"}, args...)
	if action == "start" || action == "restart" {
		full = append(full, "-l", filepath.Join(c.Dir, "log"), "-o", fmt.Sprintf("-p %d", c.Port))
	}
	return c.run("pg_ctl", full...)
}

// Log returns the server's log so far.
func (c *Cluster) Log() string {
	b, _ := os.ReadFile(filepath.Join(c.Dir, "log"))
	return string(b)
}

// URL returns the connection URL of database db as the superuser, over TCP.
func (c *Cluster) URL(db string) string {
	return fmt.Sprintf("postgres://%s@127.0.0.1:%d/%s?sslmode=disable", Superuser, c.Port, db)
}

// Restart restarts the server with pg_ctl restart -m mode: "fast" (clients disconnected,
// a clean shutdown) or "immediate" (every process killed, crash recovery at start). It
// returns once the server accepts connections again; the pools of CreateDB and Pool are
// then reset, so the test's next queries use new connections.
func (c *Cluster) Restart(t testing.TB, mode string) {
	t.Helper()
	checkMode(t, mode)
	if out, err := c.pgctl("restart", "-m", mode); err != nil {
		t.Fatalf("pgcluster: pg_ctl restart -m %s: %v\n%s\nserver log:\n%s", mode, err, out, c.Log())
	}
	c.resetPools()
}

// Stop stops the server with pg_ctl stop -m mode ("smart", "fast" or "immediate").
func (c *Cluster) Stop(t testing.TB, mode string) {
	t.Helper()
	checkMode(t, mode)
	if out, err := c.pgctl("stop", "-m", mode); err != nil {
		t.Fatalf("pgcluster: pg_ctl stop -m %s: %v\n%s", mode, err, out)
	}
}

// Start starts a stopped server on the same port and resets the pools.
func (c *Cluster) Start(t testing.TB) {
	t.Helper()
	if out, err := c.pgctl("start"); err != nil {
		t.Fatalf("pgcluster: pg_ctl start: %v\n%s\nserver log:\n%s", err, out, c.Log())
	}
	c.resetPools()
}

func checkMode(t testing.TB, mode string) {
	t.Helper()
	switch mode {
	case "smart", "fast", "immediate":
	default:
		t.Fatalf("pgcluster: shutdown mode must be smart, fast or immediate, got %q", mode)
	}
}

func (c *Cluster) resetPools() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range c.pools {
		p.Reset()
	}
}

// runtimeParams are set on every connection the package opens (see the package doc).
var runtimeParams = map[string]string{
	"application_name":                    AppName,
	"statement_timeout":                   "0",
	"lock_timeout":                        "0",
	"idle_in_transaction_session_timeout": "0",
}

func (c *Cluster) connConfig(t testing.TB, db string) *pgx.ConnConfig {
	t.Helper()
	cfg, err := pgx.ParseConfig(c.URL(db))
	if err != nil {
		t.Fatalf("pgcluster: %v", err)
	}
	for k, v := range runtimeParams {
		cfg.RuntimeParams[k] = v
	}
	return cfg
}

// connect opens one connection to db, retrying for up to 30 s while the server starts up
// or recovers.
func (c *Cluster) connect(t testing.TB, db string) *pgx.Conn {
	t.Helper()
	cfg := c.connConfig(t, db)
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		conn, err := pgx.ConnectConfig(ctx, cfg)
		cancel()
		if err == nil {
			return conn
		}
		if time.Now().After(deadline) {
			t.Fatalf("pgcluster: connect to %s: %v", db, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Exec runs sql (with args) on database postgres, on a connection of its own, failing
// the test on error: for ALTER ROLE, ALTER SYSTEM, CREATE DATABASE and the like.
func (c *Cluster) Exec(t testing.TB, sql string, args ...any) {
	t.Helper()
	conn := c.connect(t, "postgres")
	defer conn.Close(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := conn.Exec(ctx, sql, args...); err != nil {
		t.Fatalf("pgcluster: exec %q: %v", sql, err)
	}
}

// TerminateBackends calls pg_terminate_backend on every client backend of the cluster
// that matches the SQL condition where (on pg_stat_activity's columns, with args as $1,
// $2, …), except the calling connection, and returns how many it terminated. For
// instance, every connection to database d but the test's own:
//
//	c.TerminateBackends(t, "datname = $1 AND application_name <> $2", d, pgcluster.AppName)
func (c *Cluster) TerminateBackends(t testing.TB, where string, args ...any) int {
	t.Helper()
	conn := c.connect(t, "postgres")
	defer conn.Close(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var n int
	err := conn.QueryRow(ctx, `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid))::int
		FROM pg_stat_activity
		WHERE backend_type = 'client backend' AND pid <> pg_backend_pid() AND (`+where+`)`, args...).Scan(&n)
	if err != nil {
		t.Fatalf("pgcluster: terminate backends where %s: %v", where, err)
	}
	return n
}

// Pool returns a pool on database db (see the package doc for its settings), reset by
// Restart and Start and closed at cleanup.
func (c *Cluster) Pool(t testing.TB, db string, maxConns int32) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(c.URL(db))
	if err != nil {
		t.Fatalf("pgcluster: %v", err)
	}
	for k, v := range runtimeParams {
		cfg.ConnConfig.RuntimeParams[k] = v
	}
	if maxConns > 0 {
		cfg.MaxConns = maxConns
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatalf("pgcluster: %v", err)
	}
	c.mu.Lock()
	c.pools = append(c.pools, pool)
	c.mu.Unlock()
	t.Cleanup(pool.Close)
	return pool
}

// WorkerLogin is the login role workers connect as: a member of pgq_worker only, as in
// a least-privilege installation (S46), granted what the tests' SQL handlers touch.
const WorkerLogin = "pgq_faults_worker"

// DB is a database of a cluster, migrated with pgq.Migrate.
type DB struct {
	Name string
	URL  string        // for the workers: as WorkerLogin
	Pool *pgxpool.Pool // the test's own (see the package doc)
	C    *Cluster
}

// CreateDB creates database name, migrates it with pgq.Migrate and returns it.
func (c *Cluster) CreateDB(t testing.TB, name string) *DB {
	t.Helper()
	c.Exec(t, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
	db := &DB{Name: name, URL: strings.Replace(c.URL(name), "://"+Superuser+"@", "://"+WorkerLogin+"@", 1),
		Pool: c.Pool(t, name, 20), C: c}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := pgq.Migrate(ctx, db.Pool); err != nil {
		t.Fatalf("pgcluster: migrate %s: %v", name, err)
	}
	db.Exec(t, `DO $$ BEGIN
		IF to_regrole('`+WorkerLogin+`') IS NULL THEN CREATE ROLE `+WorkerLogin+` LOGIN; END IF;
		GRANT pgq_worker TO `+WorkerLogin+`;
	END $$`)
	db.Exec(t, `ALTER DEFAULT PRIVILEGES GRANT ALL ON TABLES TO `+WorkerLogin+`;
		ALTER DEFAULT PRIVILEGES GRANT ALL ON SEQUENCES TO `+WorkerLogin+`;
		ALTER DEFAULT PRIVILEGES GRANT USAGE ON SCHEMAS TO `+WorkerLogin)
	return db
}

// Exec runs sql on the database and fails the test on error.
func (db *DB) Exec(t testing.TB, sql string, args ...any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := db.Pool.Exec(ctx, sql, args...); err != nil {
		t.Fatalf("exec %q: %v", sql, err)
	}
}

// Scalar returns the single value of a query on db, failing the test on error.
func Scalar[T any](t testing.TB, db *DB, sql string, args ...any) T {
	t.Helper()
	v, err := Try[T](db, sql, args...)
	if err != nil {
		t.Fatalf("query %q: %v", sql, err)
	}
	return v
}

// Try returns the single value of a query on db: for polling, where an error (the
// server restarting, say) is not fatal.
func Try[T any](db *DB, sql string, args ...any) (T, error) {
	var v T
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := db.Pool.QueryRow(ctx, sql, args...).Scan(&v)
	return v, err
}

// destroy stops the server (-m immediate: nothing in it is kept) and removes its
// directory.
func (c *Cluster) destroy(t testing.TB) {
	c.mu.Lock()
	for _, p := range c.pools {
		p.Close()
	}
	c.pools = nil
	c.mu.Unlock()
	if _, err := os.Stat(filepath.Join(c.DataDir, "postmaster.pid")); err == nil {
		if out, err := c.pgctl("stop", "-m", "immediate"); err != nil {
			t.Logf("pgcluster: pg_ctl stop: %v\n%s", err, out)
		}
	}
	if t.Failed() {
		if log := c.Log(); log != "" {
			t.Logf("pgcluster: server log of %s:\n%s", c.Dir, tail(log, 4000))
		}
	}
	if err := os.RemoveAll(c.Dir); err != nil {
		t.Logf("pgcluster: remove %s: %v", c.Dir, err)
	}
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// sweepOrphans stops and removes the clusters of test processes that died without their
// cleanup (a test binary killed at its timeout, say): directories pgcluster-* in the
// temporary directory whose owner process is gone.
func sweepOrphans() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "pgcluster-*"))
	for _, dir := range dirs {
		b, err := os.ReadFile(filepath.Join(dir, "owner"))
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid <= 0 || syscall.Kill(pid, 0) != syscall.ESRCH {
			continue
		}
		data := filepath.Join(dir, "data")
		if pm, err := os.ReadFile(filepath.Join(data, "postmaster.pid")); err == nil {
			if lines := strings.SplitN(string(pm), "\n", 2); len(lines) > 0 {
				ppid, err := strconv.Atoi(strings.TrimSpace(lines[0]))
				// Only a postmaster of this data directory: the pid may have been reused.
				cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", ppid))
				if err == nil && ppid > 0 && strings.Contains(string(cmdline), data) {
					_ = syscall.Kill(ppid, syscall.SIGQUIT) // immediate shutdown
					for i := 0; i < 50 && syscall.Kill(ppid, 0) == nil; i++ {
						time.Sleep(100 * time.Millisecond)
					}
				}
			}
		}
		_ = os.RemoveAll(dir)
	}
}
