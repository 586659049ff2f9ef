package sql_test

import (
	"io/fs"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/stretchr/testify/require"

	"github.com/pgq-dev/pgq/internal/pgqtest"
	"github.com/pgq-dev/pgq/pgq"
	pgqsql "github.com/pgq-dev/pgq/sql"
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
	dump := regexp.MustCompile(`(?m)^\\(un)?restrict .*$`).ReplaceAllString(strings.TrimSpace(string(out)), "")
	// An object's grants come out in the order they were given: the same privileges,
	// granted in another order by an upgrade, are the same schema.
	lines := strings.Split(dump, "\n")
	for i := 0; i < len(lines); {
		j := i
		for j < len(lines) && strings.HasPrefix(lines[j], "GRANT ") {
			j++
		}
		slices.Sort(lines[i:j])
		i = j + 1
	}
	return strings.Join(lines, "\n")
}

// An installation at schema version 24, as the last release before the storage boundary
// left it (testdata/schema-24: its schema, functions and seed rows, dumped), holding
// jobs in every state, bulk dispatches kept as chunks among them (a chunk partly taken,
// a job taken out of the middle of one), is migrated by the current code: every row of
// every table is kept, the schema comes out as a new installation's, and every job goes
// on: the running ones complete with the tokens the old functions gave them, the
// waiting ones (rows and chunk jobs) are all reserved once, in the queue's order.
func TestUpgradeFromSchema24KeepsEveryJob(t *testing.T) {
	t.Parallel()
	pgqtest.New(t) // the roles the dump grants to exist once a template is migrated
	db := pgqtest.NewEmpty(t)
	c, err := pgx.Connect(ctx, db.URL)
	require.NoError(t, err)
	for _, f := range []string{"goose_version.sql", "pgq.sql", "data.sql"} {
		b, err := os.ReadFile("../testdata/schema-24/" + f)
		require.NoError(t, err)
		_, err = c.Exec(ctx, string(b))
		require.NoError(t, err, f)
	}
	require.NoError(t, c.Close(ctx))
	db.Exec(t, `DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET pgq.load_min = 100', current_database()); END $$`)
	db.Pool.Reset() // new sessions, with the setting

	db.Exec(t, `SELECT pgq.define_job('uniq', unique_for => '1 hour', unique_by => '{k}')`)
	db.Exec(t, `SELECT pgq.define_job('lone', middleware => '[{"without_overlapping": {"by": ["k"]}}]')`)
	bulk1 := pgqtest.Scalar[[]uuid.UUID](t, db, `SELECT array_agg(u) FROM pgq.dispatch_many('bulk', ARRAY(SELECT jsonb_build_object('n', i) FROM generate_series(1, 3000) i), tries => 3) u`)
	later := dispatch(t, db, `'later', '{}', delay => '1 hour'`)
	dispatch(t, db, `'uniq', '{"k": 1}'`)
	dispatch(t, db, `'lone', '{"k": 1}'`)
	require.True(t, pgqtest.Scalar[bool](t, db, `SELECT pgq.run_now($1)`, bulk1[2500]), "a job out of the middle of a chunk")
	at := clock()
	running := reserve(t, db, "old-worker", at) // the row jobs first, then the front of the load
	require.Len(t, running, 100)
	require.False(t, fail(t, db, running[1], "vendor 500", false, at).Final, "a retry, at a backoff of 0 s")
	require.True(t, complete(t, db, running[2]))
	bulk2 := pgqtest.Scalar[[]uuid.UUID](t, db, `SELECT array_agg(u) FROM pgq.dispatch_many('bulk', ARRAY(SELECT jsonb_build_object('n', -i) FROM generate_series(1, 500) i)) u`)
	require.Greater(t, pgqtest.Scalar[int](t, db, `SELECT count(*)::int FROM pgq.loads WHERE next > 0`), 0, "a chunk partly taken")

	columns := tableColumns(t, db)
	before := tableFingerprints(t, db, columns)
	live := pgqtest.Scalar[int](t, db, `SELECT ((SELECT count(*) FROM pgq.jobs) + (SELECT sum(n - next) FROM pgq.loads))::int`)
	_, err = pgq.Migrate(ctx, db.Pool)
	require.NoError(t, err)
	require.Equal(t, before, tableFingerprints(t, db, columns), "every row of every table is kept")
	require.Equal(t, schemaDump(t, pgqtest.New(t).URL), schemaDump(t, db.URL), "the upgraded schema is a new installation's")
	require.Equal(t, live, pgqtest.Scalar[int](t, db, `SELECT count(*)::int FROM pgq.live_jobs`), "pgq.live_jobs lists every live job")
	require.Equal(t, "running", pgqtest.Scalar[string](t, db, `SELECT state FROM pgq.live_job($1)`, running[50].UUID))
	require.Equal(t, "scheduled", pgqtest.Scalar[string](t, db, `SELECT state FROM pgq.live_job($1)`, later))

	for i, j := range running {
		if i != 1 && i != 2 { // the retry waits, and the third completed before the upgrade
			require.True(t, complete(t, db, j), "the old lease token still holds its job")
		}
	}
	waiting := pgqtest.Scalar[int](t, db, `SELECT count(*)::int FROM pgq.live_jobs WHERE state = 'ready'`)
	require.Equal(t, "cancelled", pgqtest.Scalar[string](t, db, `SELECT pgq.cancel($1)`, bulk2[250]), "a chunk job the old code wrote")
	seen := map[uuid.UUID]bool{}
	for js := reserve(t, db, "new-worker", at.Add(time.Second)); len(js) > 0; js = reserve(t, db, "new-worker", at.Add(time.Second)) {
		for _, j := range js {
			require.False(t, seen[j.UUID], "reserved twice: %s", j.UUID)
			seen[j.UUID] = true
			require.True(t, complete(t, db, j))
		}
	}
	require.Equal(t, waiting-1, len(seen), "every waiting job once, the cancelled one aside")
	require.True(t, seen[running[1].UUID], "the retry")
	require.True(t, seen[bulk1[2500]] && seen[bulk1[2999]] && seen[bulk2[499]])
	require.False(t, seen[bulk2[250]])
	require.Equal(t, 1, pgqtest.Scalar[int](t, db, `SELECT count(*)::int FROM pgq.live_jobs`), "the delayed job is left")
}

// S99: migration 45 gives each named concurrency limit its places from the leases
// there are, so that a limit lowered before the upgrade, with handlers still holding
// places above it, holds once it is applied: with two of them running, no job of its
// key starts under a limit of 1.
func TestS99UpgradePlacesCountHandlersAboveALoweredLimit(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, `SELECT pgq.define_concurrency('vendor', 3)`)
	db.Exec(t, `SELECT pgq.define_job('push', middleware => '[{"concurrency_limited": {"limit": "vendor"}}]')`)
	for i := 0; i < 4; i++ {
		dispatch(t, db, `'push'`)
	}
	running := runnable(reserveOn(t, db.Pool, "w1", clock()))
	require.Len(t, running, 3)

	fsys, err := fs.Sub(pgqsql.Files, "migrations")
	require.NoError(t, err)
	sqlDB := stdlib.OpenDBFromPool(db.Pool)
	defer sqlDB.Close()
	migrations, err := goose.NewProvider(goose.DialectPostgres, sqlDB, fsys, goose.WithTableName(pgq.VersionTable))
	require.NoError(t, err)
	_, err = migrations.DownTo(ctx, 44)
	require.NoError(t, err)
	db.Exec(t, `UPDATE pgq.concurrency_limits SET "limit" = 1`) // lowered as before places were kept
	_, err = pgq.Migrate(ctx, db.Pool)                          // the migrations Down undid, and the functions
	require.NoError(t, err)
	require.Equal(t, 3, pgqtest.Scalar[int](t, db, `SELECT places FROM pgq.concurrency_limits WHERE name = 'vendor'`))

	for _, r := range running {
		if r.Overlap[0] == "#@vendor#1" {
			require.True(t, complete(t, db, reserved{UUID: r.UUID, Token: *r.Token}))
		}
	}
	require.Empty(t, runnable(reserveOn(t, db.Pool, "w2", clock())), "two run under a limit of 1")
}
