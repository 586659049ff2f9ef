package pgcluster_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pgq-dev/pgq/internal/pgcluster"
	"github.com/pgq-dev/pgq/internal/pgqtest"
)

// One cluster through its life: settings applied, a migrated database, data kept across
// a fast and an immediate restart and a stop/start, backends terminated by filter.
func TestCluster(t *testing.T) {
	t.Parallel()
	start := time.Now()
	c := pgcluster.Start(t, pgcluster.MaxConnections(150), pgcluster.Setting("idle_in_transaction_session_timeout", "7s"))
	t.Logf("initdb and start took %s (port %d)", time.Since(start).Round(time.Millisecond), c.Port)

	db := c.CreateDB(t, "app")
	require.Equal(t, 150, pgcluster.Scalar[int](t, db, `SELECT current_setting('max_connections')::int`))
	require.Equal(t, "7s", pgcluster.Scalar[string](t, db, `SELECT setting FROM pg_file_settings
		WHERE name = 'idle_in_transaction_session_timeout' AND applied`), "Setting is in postgresql.conf")
	require.Equal(t, "0", pgcluster.Scalar[string](t, db, `SELECT current_setting('idle_in_transaction_session_timeout')`),
		"the test's own connections override it")
	require.Equal(t, pgcluster.AppName, pgcluster.Scalar[string](t, db, `SELECT current_setting('application_name')`))
	require.True(t, pgcluster.Scalar[bool](t, db, `SELECT to_regclass('pgq.jobs') IS NOT NULL`), "migrated")
	db.Exec(t, `CREATE TABLE kept (n int)`)
	db.Exec(t, `INSERT INTO kept VALUES (1)`)

	t.Run("RoleSettingsDoNotReachTheTestsConnections", func(t *testing.T) {
		c.Exec(t, `ALTER ROLE postgres SET statement_timeout = '1ms'`)
		defer c.Exec(t, `ALTER ROLE postgres RESET statement_timeout`)
		other, err := pgx.Connect(context.Background(), c.URL(db.Name))
		require.NoError(t, err)
		defer other.Close(context.Background())
		require.Equal(t, "1ms", pgqtest.Setting(t, other, "statement_timeout"), "a plain connection gets the role's setting")
		pool := c.Pool(t, "app", 2)
		var v string
		require.NoError(t, pool.QueryRow(context.Background(), `SELECT current_setting('statement_timeout'), pg_sleep(0.01)::text`).Scan(&v, new(string)))
		require.Equal(t, "0", v)
	})

	t.Run("TerminateBackends", func(t *testing.T) {
		other, err := pgx.Connect(context.Background(), db.URL)
		require.NoError(t, err)
		defer other.Close(context.Background())
		require.Equal(t, 1, c.TerminateBackends(t, "datname = $1 AND application_name <> $2", "app", pgcluster.AppName))
		require.Error(t, other.Ping(context.Background()), "the other connection was terminated")
		require.Equal(t, 1, pgcluster.Scalar[int](t, db, `SELECT 1`), "the test's pool was left alone")
	})

	for _, mode := range []string{"fast", "immediate"} {
		t.Run("Restart"+strings.ToUpper(mode[:1])+mode[1:], func(t *testing.T) {
			pid := pgcluster.Scalar[int](t, db, `SELECT pg_backend_pid()`)
			start := time.Now()
			c.Restart(t, mode)
			t.Logf("restart -m %s took %s", mode, time.Since(start).Round(time.Millisecond))
			require.NotEqual(t, pid, pgcluster.Scalar[int](t, db, `SELECT pg_backend_pid()`), "a new connection after the reset")
			require.Equal(t, 1, pgcluster.Scalar[int](t, db, `SELECT count(*)::int FROM kept`))
		})
	}

	t.Run("StopStart", func(t *testing.T) {
		c.Stop(t, "fast")
		_, err := pgcluster.Try[int](db, `SELECT 1`)
		require.Error(t, err, "stopped")
		c.Start(t)
		require.Equal(t, 1, pgcluster.Scalar[int](t, db, `SELECT count(*)::int FROM kept`))
	})
}

// Two clusters at once are independent: their own ports and data.
func TestClustersAreIndependent(t *testing.T) {
	t.Parallel()
	a, b := pgcluster.Start(t), pgcluster.Start(t)
	require.NotEqual(t, a.Port, b.Port)
	a.Exec(t, `CREATE DATABASE only_in_a`)
	dbB := b.CreateDB(t, "x")
	require.False(t, pgcluster.Scalar[bool](t, dbB, `SELECT EXISTS (SELECT FROM pg_database WHERE datname = 'only_in_a')`))
}

// A primary and a hot standby through a failover: the standby reads what the primary
// committed, refuses writes, and once the primary is gone and the standby promoted, a
// pool on the multi-host URL writes to it.
func TestStandbyFailover(t *testing.T) {
	t.Parallel()
	for _, r := range []pgcluster.Replication{pgcluster.Sync, pgcluster.Async} {
		t.Run(r.String(), func(t *testing.T) {
			t.Parallel()
			c := pgcluster.Start(t)
			s := c.StartStandby(t, "standby1", r)
			db := c.CreateDB(t, "app")
			across := db.Across(t, s)
			across.Exec(t, `CREATE TABLE kept (n int); INSERT INTO kept VALUES (1)`)
			c.WaitReplayed(t)
			onStandby := db.On(t, s)
			require.Equal(t, 1, pgcluster.Scalar[int](t, onStandby, `SELECT count(*)::int FROM kept`))
			require.True(t, pgcluster.Scalar[bool](t, onStandby, `SELECT pg_is_in_recovery()`))
			_, err := onStandby.Pool.Exec(t.Context(), `INSERT INTO kept VALUES (2)`)
			require.ErrorContains(t, err, "read-only")

			c.Stop(t, "immediate")
			s.Promote(t)
			var err2 error
			require.Eventually(t, func() bool {
				_, err2 = across.Pool.Exec(t.Context(), `INSERT INTO kept VALUES (3)`)
				return err2 == nil
			}, 30*time.Second, 50*time.Millisecond, "a write through the multi-host URL after the promotion: %v", err2)
			require.Equal(t, 2, pgcluster.Scalar[int](t, onStandby, `SELECT count(*)::int FROM kept`))
		})
	}
}
