package pgcluster

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Replication says how a standby's commits are acknowledged.
type Replication int

const (
	// Async: the primary reports a commit once its own WAL has it; the standby follows
	// as fast as streaming goes, and a failover loses what it had not received.
	Async Replication = iota
	// Sync: the primary names the standby in synchronous_standby_names and reports a
	// commit only once the standby has flushed its WAL (synchronous_commit = on), so a
	// commit reported to a client survives the primary's loss.
	Sync
)

func (r Replication) String() string {
	if r == Sync {
		return "sync"
	}
	return "async"
}

// StartStandby starts a hot standby of c (pg_basebackup -R, streaming replication) on a
// free port, stopped and removed at cleanup, and returns it once it streams. With Sync
// the primary waits for it from then on. name is the standby's cluster_name, which is
// its application_name on the primary (pg_stat_replication, synchronous_standby_names).
// Only one Sync standby per primary.
func (c *Cluster) StartStandby(t testing.TB, name string, r Replication) *Cluster {
	t.Helper()
	s := newCluster(t, c.bin, c.cfg)
	if out, err := s.run("pg_basebackup", "-D", s.DataDir, "-h", "127.0.0.1", "-p", fmt.Sprint(c.Port),
		"-U", Superuser, "-X", "stream", "-R", "-c", "fast", "--no-sync"); err != nil {
		t.Fatalf("pgcluster: pg_basebackup: %v\n%s", err, out)
	}
	// postgresql.conf came with the backup: the lines added here override its socket
	// directory and name the standby.
	s.configure(t, []string{"hot_standby = on", fmt.Sprintf("cluster_name = '%s'", name)})
	s.startOnFreePort(t)
	if r == Sync {
		c.Exec(t, fmt.Sprintf(`ALTER SYSTEM SET synchronous_standby_names = '"%s"'`, name))
		c.Exec(t, `SELECT pg_reload_conf()`)
	}
	state := map[Replication]string{Sync: "sync", Async: "async"}[r]
	c.waitPrimary(t, "the standby "+name+" streams ("+state+")", `SELECT EXISTS (SELECT FROM pg_stat_replication
		WHERE application_name = $1 AND state = 'streaming' AND sync_state = $2)`, name, state)
	return s
}

// waitPrimary polls the boolean query q on c's database postgres until it is true, for
// up to a minute.
func (c *Cluster) waitPrimary(t testing.TB, what, q string, args ...any) {
	t.Helper()
	conn := c.connect(t, "postgres")
	defer conn.Close(context.Background())
	deadline := time.Now().Add(time.Minute)
	for {
		var ok bool
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := conn.QueryRow(ctx, q, args...).Scan(&ok)
		cancel()
		if err != nil {
			t.Fatalf("pgcluster: waiting until %s: %v", what, err)
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("pgcluster: timed out waiting until %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// WaitReplayed waits until every standby of c has replayed the WAL c has written so far.
func (c *Cluster) WaitReplayed(t testing.TB) {
	t.Helper()
	c.waitPrimary(t, "the standbys replayed the primary's WAL", `SELECT count(*) > 0 AND
		bool_and(replay_lsn >= pg_current_wal_lsn()) FROM pg_stat_replication`)
}

// Promote promotes a standby (pg_ctl promote) and returns once it accepts writes.
func (c *Cluster) Promote(t testing.TB) {
	t.Helper()
	if out, err := c.pgctl("promote"); err != nil {
		t.Fatalf("pgcluster: pg_ctl promote: %v\n%s\nserver log:\n%s", err, out, c.Log())
	}
	conn := c.connect(t, "postgres")
	defer conn.Close(context.Background())
	deadline := time.Now().Add(time.Minute)
	for {
		var recovering bool
		if err := conn.QueryRow(context.Background(), `SELECT pg_is_in_recovery()`).Scan(&recovering); err != nil {
			t.Fatalf("pgcluster: after promote: %v", err)
		}
		if !recovering {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("pgcluster: the standby is still in recovery a minute after pg_ctl promote")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// MultiHostURL returns a URL of database db as role user naming every cluster, in order,
// with target_session_attrs=read-write: a client connects to the first that accepts
// writes, the primary, and after a failover to the promoted standby.
func MultiHostURL(user, db string, cs ...*Cluster) string {
	hosts := make([]string, len(cs))
	for i, c := range cs {
		hosts[i] = fmt.Sprintf("127.0.0.1:%d", c.Port)
	}
	return fmt.Sprintf("postgres://%s@%s/%s?sslmode=disable&target_session_attrs=read-write",
		url.PathEscape(user), strings.Join(hosts, ","), url.PathEscape(db))
}

// Across returns db as reached through a multi-host URL naming its cluster and then the
// standbys (MultiHostURL): URL for the workers as WorkerLogin, and a pool of the test's
// own, reset by a restart of any of them. Use it for a database that is to outlive a
// failover.
func (db *DB) Across(t testing.TB, standbys ...*Cluster) *DB {
	t.Helper()
	cs := append([]*Cluster{db.C}, standbys...)
	cfg, err := pgxpool.ParseConfig(MultiHostURL(Superuser, db.Name, cs...))
	if err != nil {
		t.Fatalf("pgcluster: %v", err)
	}
	for k, v := range runtimeParams {
		cfg.ConnConfig.RuntimeParams[k] = v
	}
	cfg.MaxConns = 20
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatalf("pgcluster: %v", err)
	}
	for _, c := range cs {
		c.mu.Lock()
		c.pools = append(c.pools, pool)
		c.mu.Unlock()
	}
	t.Cleanup(pool.Close)
	return &DB{Name: db.Name, URL: MultiHostURL(WorkerLogin, db.Name, cs...), Pool: pool, C: db.C}
}

// On returns db as found on another cluster of its replication group, a standby say:
// URL as WorkerLogin and a pool of the test's own on that cluster only.
func (db *DB) On(t testing.TB, c *Cluster) *DB {
	t.Helper()
	return &DB{Name: db.Name, URL: strings.Replace(c.URL(db.Name), "://"+Superuser+"@", "://"+WorkerLogin+"@", 1),
		Pool: c.Pool(t, db.Name, 10), C: c}
}
