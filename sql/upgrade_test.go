package sql_test

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/stretchr/testify/require"

	"github.com/pgq-dev/pgq/internal/pgqtest"
	"github.com/pgq-dev/pgq/pgq"
)

// An installation of the last release whose functions lived in its migrations (version
// 7), holding jobs in every state, is migrated by the current code: every row of every
// table is kept, goose's version table moves from public into schema pgq with its
// history, the schema comes out as a new installation's, and the jobs go on.
func TestUpgradeFromRelease7(t *testing.T) {
	t.Parallel()
	db := pgqtest.NewEmpty(t)

	sqlDB := stdlib.OpenDBFromPool(db.Pool)
	defer sqlDB.Close()
	old, err := goose.NewProvider(goose.DialectPostgres, sqlDB, os.DirFS("../testdata/release-7/migrations"),
		goose.WithTableName("pgq_goose_version"))
	require.NoError(t, err)
	_, err = old.Up(ctx)
	require.NoError(t, err)

	// Jobs in every state, each in a queue of its own so that each reserve takes one.
	db.Exec(t, `SELECT pgq.define_limit('api', 100, '1 minute')`)
	db.Exec(t, `SELECT pgq.define_job('retried', queue => 'q_retrying', tries => 3, backoff => '{600}')`)
	db.Exec(t, `SELECT pgq.define_job('flaky', queue => 'q_failed', tries => 1)`)
	db.Exec(t, `SELECT pgq.define_job('uniq', queue => 'q_waiting', unique_for => '1 hour', unique_by => '{k}')`)
	db.Exec(t, `SELECT pgq.define_job('deb', queue => 'q_waiting', debounce_for => '1 hour', debounce_by => '{k}')`)
	db.Exec(t, `SELECT pgq.define_job('limited', queue => 'q_limited', middleware => '[{"rate_limited": {"limit": "api"}}]')`)
	ready := dispatch(t, db, `'ready', '{"n": 1}', queue => 'q_ready'`)
	dispatch(t, db, `'later', '{}', queue => 'q_waiting', delay => '1 hour'`)
	dispatch(t, db, `'uniq', '{"k": 1}'`)
	dispatch(t, db, `'deb', '{"k": 1}'`)
	running := dispatch(t, db, `'running', '{}', queue => 'q_running'`)
	retrying := dispatch(t, db, `'retried', '{}'`)
	dispatch(t, db, `'done', '{}', queue => 'q_done'`)
	failed := dispatch(t, db, `'flaky', '{"card": 4000}'`)
	dispatch(t, db, `'limited', '{}'`)
	reserveIn := func(queue string) reserved {
		t.Helper()
		jobs := reserve(t, db, "old-worker", clock(), queue)
		require.Len(t, jobs, 1, queue)
		return jobs[0]
	}
	held := reserveIn("q_running")
	fail(t, db, reserveIn("q_retrying"), "vendor 500", false, clock())
	require.True(t, complete(t, db, reserveIn("q_done")))
	require.True(t, fail(t, db, reserveIn("q_failed"), "card declined", false, clock()).Final)
	require.True(t, complete(t, db, reserveIn("q_limited")))

	columns := tableColumns(t, db)
	// Overlap locks are the one exception: migration 9 empties pgq.overlap_locks, whose
	// rows named session locks that no longer exist (workers are stopped to migrate).
	delete(columns, "overlap_locks")
	before := tableFingerprints(t, db, columns)
	require.Equal(t, "1", before["failed_jobs"][:1], "one failed job before the upgrade")

	oldVersions := pgqtest.Scalar[string](t, db, `SELECT string_agg(version_id || ' ' || is_applied || ' ' || tstamp, ', ' ORDER BY id) FROM public.pgq_goose_version`)
	_, err = pgq.Migrate(ctx, db.Pool)
	require.NoError(t, err)
	require.Equal(t, before, tableFingerprints(t, db, columns), "every row of every table is kept")
	// goose's version table moved into schema pgq with its history, and went on there.
	require.True(t, pgqtest.Scalar[bool](t, db, `SELECT to_regclass('public.pgq_goose_version') IS NULL`))
	require.Equal(t, oldVersions, pgqtest.Scalar[string](t, db,
		`SELECT string_agg(version_id || ' ' || is_applied || ' ' || tstamp, ', ' ORDER BY id) FROM pgq.goose_version WHERE version_id <= 7`))
	require.Equal(t, pgqtest.Scalar[int](t, db, `SELECT count(*)::int FROM (SELECT DISTINCT version_id FROM pgq.goose_version) v`),
		pgqtest.Scalar[int](t, db, `SELECT count(*)::int FROM pgq.goose_version`), "no migration applied twice")
	n, err := pgq.Migrate(ctx, db.Pool)
	require.NoError(t, err)
	require.Zero(t, n, "a second migrate finds every migration applied")
	require.Equal(t, schemaDump(t, pgqtest.New(t).URL), schemaDump(t, db.URL),
		"the upgraded schema is a new installation's")

	// The jobs go on under the new functions: the ready one is reserved, the running one
	// completes with the token the old functions gave it, the failed one comes back.
	got := reserve(t, db, "new-worker", clock(), "q_ready")
	require.Len(t, got, 1)
	require.Equal(t, ready, got[0].UUID)
	require.True(t, complete(t, db, held), "the old lease token still holds its job")
	require.Equal(t, []string{"succeeded"}, outcomes(t, db, running))
	require.Equal(t, []string{"failed"}, outcomes(t, db, retrying))
	require.Equal(t, []uuid.UUID{failed}, pgqtest.Scalar[[]uuid.UUID](t, db, `SELECT array_agg(u) FROM pgq.retry_failed(NULL) u`))
	require.Equal(t, []string{"failed"}, outcomes(t, db, failed), "history kept")
}

// tableFingerprints returns, per table of schema pgq, its row count and a hash of its
// rows, read through the columns it has before the upgrade (columns given, or all).
func tableFingerprints(t *testing.T, db *pgqtest.DB, columns map[string]string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for table, cols := range columns {
		out[table] = pgqtest.Scalar[string](t, db, `SELECT count(*) || ' ' || md5(coalesce(string_agg(r::text, '|' ORDER BY r::text), ''))
			FROM (SELECT `+cols+` FROM pgq.`+table+`) r`)
	}
	return out
}

// tableColumns returns the column list of each table of schema pgq.
func tableColumns(t *testing.T, db *pgqtest.DB) map[string]string {
	t.Helper()
	rows, err := db.Pool.Query(ctx, `SELECT table_name::text, string_agg(quote_ident(column_name), ', ' ORDER BY ordinal_position)
		FROM information_schema.columns WHERE table_schema = 'pgq' AND table_name IN (SELECT tablename FROM pg_tables WHERE schemaname = 'pgq')
		GROUP BY table_name`)
	require.NoError(t, err)
	out := map[string]string{}
	for rows.Next() {
		var table, cols string
		require.NoError(t, rows.Scan(&table, &cols))
		out[table] = cols
	}
	require.NoError(t, rows.Err())
	return out
}

// schemaDump is schema pgq as pg_dump prints it, without what varies between two dumps
// of the same schema (owners, pg_dump's per-run \restrict key).
func schemaDump(t *testing.T, url string) string {
	t.Helper()
	out, err := exec.Command("pg_dump", "--schema-only", "--schema=pgq", "--no-owner", url).Output()
	require.NoError(t, err, "pg_dump (PostgreSQL's client programs must be on PATH)")
	return regexp.MustCompile(`(?m)^\\(un)?restrict .*$`).ReplaceAllString(strings.TrimSpace(string(out)), "")
}
