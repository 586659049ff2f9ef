package sql_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/pgq-dev/pgq/internal/pgqtest"
)

// pgError is err's PostgreSQL error, failing the test when there is none.
func pgError(t *testing.T, err error) *pgconn.PgError {
	t.Helper()
	var pgErr *pgconn.PgError
	require.True(t, errors.As(err, &pgErr), "want a PostgreSQL error, got %v", err)
	return pgErr
}

// runSQLJob reserves the one job of the default queue and runs its SQL handler as the
// worker's login (pgq.run_sql_job), returning the handler's error.
func runSQLJob(t *testing.T, db *pgqtest.DB) error {
	t.Helper()
	_, err := runSQLJobHeld(t, db)
	return err
}

// runSQLJobHeld is runSQLJob, returning the reservation too.
func runSQLJobHeld(t *testing.T, db *pgqtest.DB) (reserved, error) {
	t.Helper()
	j := reserveOne(t, db, clock())
	_, err := db.WorkerPool.Exec(ctx, `SELECT pgq.run_sql_job($1, $2)`, j.UUID, j.Token)
	return j, err
}

// S86: a SQL handler whose function pins no search_path runs with the schemas of the
// search_path pgq.define_job was called with (the admin's, by default), pg_catalog
// first and pg_temp last, so a table it names without its schema is found; a function
// that pins its own runs with that one; a schema anyone may create in is left out; and
// a handler that finds no table or function gets a HINT that names its search_path and
// the fix, while pgq.check lists the handlers that run with none.
func TestS86HandlerSearchPathIsPinnedAtDefinition(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, `CREATE SCHEMA app; CREATE SCHEMA other; CREATE SCHEMA open; GRANT CREATE ON SCHEMA open TO PUBLIC;
		CREATE TABLE app.reports (account_id int PRIMARY KEY);
		CREATE TABLE other.reports (account_id int PRIMARY KEY);
		CREATE FUNCTION app.refresh(payload jsonb) RETURNS void LANGUAGE plpgsql AS
			$$ BEGIN INSERT INTO reports VALUES ((payload->>'account_id')::int); END $$;
		CREATE FUNCTION app.pinned(payload jsonb) RETURNS void LANGUAGE plpgsql SET search_path = other AS
			$$ BEGIN INSERT INTO reports VALUES ((payload->>'account_id')::int); END $$`)

	// The admin's session: its search_path is what the handler gets.
	admin, err := db.Pool.Acquire(ctx)
	require.NoError(t, err)
	defer admin.Release()
	_, err = admin.Exec(ctx, `SET search_path = open, app, public`)
	require.NoError(t, err)
	var said string
	require.NoError(t, admin.QueryRow(ctx, `SELECT pgq.define_job('refresh', handler => 'app.refresh')`).Scan(&said))
	require.Contains(t, said, "run with search_path pg_catalog, app, public, pg_temp", "open is left out: anyone may create in it")
	_, err = admin.Exec(ctx, `RESET search_path`)
	require.NoError(t, err)

	dispatch(t, db, `'refresh', '{"account_id": 7}'`)
	require.NoError(t, runSQLJob(t, db), "reports is app.reports")
	require.Equal(t, 1, count(t, db, "app.reports"))

	// A function that pins its own search_path keeps it, whatever the definition's.
	db.Exec(t, `SELECT pgq.define_job('pinned', handler => 'app.pinned', search_path => '{app}')`)
	require.Zero(t, count(t, db, "pgq.handler_search_paths WHERE handler = 'app.pinned(jsonb)'::regprocedure"), "nothing pinned for it")
	dispatch(t, db, `'pinned', '{"account_id": 8}'`)
	require.NoError(t, runSQLJob(t, db))
	require.Equal(t, 1, count(t, db, "other.reports"), "its own search_path")
	require.Equal(t, 1, count(t, db, "app.reports"), "not the definition's")
	// Nor does a path pinned for it before it pinned its own.
	db.Exec(t, `ALTER FUNCTION app.refresh(jsonb) SET search_path = other`)
	dispatch(t, db, `'refresh', '{"account_id": 9}'`)
	require.NoError(t, runSQLJob(t, db))
	require.Equal(t, 2, count(t, db, "other.reports"))
	db.Exec(t, `ALTER FUNCTION app.refresh(jsonb) RESET search_path`)

	// Defined with no schema to pin: the handler runs with pg_catalog, pg_temp; the
	// table is not found, and the exception says why and what to do.
	db.Exec(t, `SELECT pgq.define_job('bare', handler => 'app.refresh', search_path => '{}')`)
	findings := pgqtest.Scalar[[]string](t, db, `SELECT array_agg(object || ' ' || rule || ': ' || fix) FROM pgq.check() WHERE rule = 'handler_without_search_path'`)
	require.Len(t, findings, 2, "both classes that name the handler")
	require.Contains(t, findings[0], "job bare handler_without_search_path: ALTER FUNCTION app.refresh(jsonb) SET search_path = app")
	dispatch(t, db, `'bare', '{"account_id": 10}'`)
	e := pgError(t, runSQLJob(t, db))
	require.Equal(t, "PQ100", e.Code)
	require.Equal(t, `relation "reports" does not exist`, e.Message)
	require.Equal(t, "handlers run with search_path = pg_catalog, pg_temp: name reports with its schema (app.reports), "+
		"or pin a search_path on the handler: ALTER FUNCTION app.refresh(jsonb) SET search_path = app", e.Hint)
}

// S87: each worker records the queues it serves and its Go handlers' job names in
// pgq.workers, and counts as live for a minute after it last did. pgq.check finds jobs
// waiting in a queue no live worker serves and jobs whose name no class defines and no
// live worker handles; asked about some queues, it says nothing of the others.
// pgq.dispatch_warnings tells a dispatcher the same before the job waits or fails, with
// the nearest known names. pgq.worker_stopped removes the row.
func TestS87WorkersRecordWhatTheyServe(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, `CREATE FUNCTION public.noop(payload jsonb) RETURNS void LANGUAGE sql AS $$ SELECT $$`)
	db.Exec(t, `SELECT pgq.define_job('refresh_report', handler => 'public.noop')`)
	dispatch(t, db, `'refresh_reprot', '{}'`)
	dispatch(t, db, `'mail', '{}', queue => 'mail'`)
	rules := func(queues ...string) []string {
		var only []string // nil: every queue
		if len(queues) > 0 {
			only = queues
		}
		return pgqtest.Scalar[[]string](t, db, `SELECT coalesce(array_agg(object || ' ' || rule ORDER BY object), '{}')
			FROM pgq.check(queues => $1::text[]) WHERE rule IN ('queue_unserved', 'job_unhandled')`, only)
	}
	require.Equal(t, []string{"job mail job_unhandled", "job refresh_reprot job_unhandled", "queue default queue_unserved", "queue mail queue_unserved"}, rules())
	require.Equal(t, []string{"job mail job_unhandled", "queue mail queue_unserved"}, rules("mail"), "only what is about mail")
	require.Equal(t, []string{
		`no job class defines refresh_reprot, and no live worker has a handler for it: the job fails with "no handler" unless one comes (did you mean refresh_report?)`,
		"no live worker serves queue default (no worker was seen in the last 60 s): the job waits until one does (pgq-worker work --queue default)",
	}, pgqtest.Scalar[[]string](t, db, `SELECT array_agg(w) FROM pgq.dispatch_warnings('refresh_reprot') w`))

	// A worker of the worker role records itself: it serves default and has a Go handler for mail.
	_, err := db.WorkerPool.Exec(ctx, `SELECT pgq.worker_seen('host:1', '{default}', '{mail}', 'v1.2.3', starting => true)`)
	require.NoError(t, err)
	require.Equal(t, []string{"job refresh_reprot job_unhandled", "queue mail queue_unserved"}, rules())
	require.Empty(t, pgqtest.Scalar[[]string](t, db, `SELECT coalesce(array_agg(w), '{}') FROM pgq.dispatch_warnings('refresh_report') w`))
	require.Equal(t, []string{"no live worker serves queue mail (1 live workers serve default): the job waits until one does (pgq-worker work --queue mail)"},
		pgqtest.Scalar[[]string](t, db, `SELECT array_agg(w) FROM pgq.dispatch_warnings('mail', 'mail') w`))
	require.Equal(t, "host:1 {default} {mail} v1.2.3", pgqtest.Scalar[string](t, db,
		`SELECT name || ' ' || queues::text || ' ' || handlers::text || ' ' || version FROM pgq.live_workers`))
	reader := db.ConnAs(t, pgqtest.ReaderRole)
	var live int
	require.NoError(t, reader.QueryRow(ctx, `SELECT count(*) FROM pgq.live_workers`).Scan(&live))
	require.Equal(t, 1, live, "readers see the workers")

	// A worker not seen for a minute is dead: it serves nothing.
	db.Exec(t, `UPDATE pgq.workers SET seen_at = now() - interval '61 seconds'`)
	require.Zero(t, count(t, db, "pgq.live_workers"))
	require.Len(t, rules(), 4)
	_, err = db.WorkerPool.Exec(ctx, `SELECT pgq.worker_seen('host:1', '{default,mail}', '{mail}')`)
	require.NoError(t, err)
	require.Equal(t, []string{"job refresh_reprot job_unhandled"}, rules())
	_, err = db.WorkerPool.Exec(ctx, `SELECT pgq.worker_stopped('host:1')`)
	require.NoError(t, err)
	require.Zero(t, count(t, db, "pgq.workers"))

	// A worker that died without a word is pruned a day later.
	_, err = db.WorkerPool.Exec(ctx, `SELECT pgq.worker_seen('gone:1', '{default}', '{}')`)
	require.NoError(t, err)
	db.Exec(t, `UPDATE pgq.workers SET seen_at = now() - interval '25 hours'`)
	db.Exec(t, `SELECT pgq.prune_all('14 days')`)
	require.Zero(t, count(t, db, "pgq.workers"))
}

// S88: an exception's DETAIL and HINT stay with the attempt (pgq.attempts), the failed
// job (pgq.failed_jobs) and the views, as a SQL handler raised them or as a worker
// reports them to pgq.fail and pgq.fail_many.
func TestS88DetailAndHintAreKept(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, `CREATE FUNCTION public.charge(payload jsonb) RETURNS void LANGUAGE plpgsql AS $$
		BEGIN RAISE EXCEPTION 'card declined' USING DETAIL = 'issuer said 05', HINT = 'ask for another card'; END $$`)
	db.Exec(t, `SELECT pgq.define_job('charge', handler => 'public.charge', tries => 2)`)
	dispatch(t, db, `'charge', '{}', tries => 1`)
	j, err := runSQLJobHeld(t, db)
	e := pgError(t, err)
	require.Equal(t, []string{"PQ100", "card declined", "issuer said 05", "ask for another card"}, []string{e.Code, e.Message, e.Detail, e.Hint})

	// What the worker reports with it: the job fails for good.
	db.Exec(t, `SELECT pgq.fail($1, $2, 'card declined', detail => 'issuer said 05', hint => 'ask for another card')`, j.UUID, j.Token)
	dispatch(t, db, `'charge', '{}', tries => 1`)
	j = reserveOne(t, db, clock().Add(time.Minute))
	db.Exec(t, `SELECT pgq.fail_many(ARRAY[$1::uuid], ARRAY[$2::uuid], '{declined}', '{f}', details => '{""}', hints => '{"call the bank"}')`, j.UUID, j.Token)
	require.Equal(t, []string{"card declined|issuer said 05|ask for another card", "declined||call the bank"},
		pgqtest.Scalar[[]string](t, db, `SELECT array_agg(exception || '|' || coalesce(exception_detail, '') || '|' || coalesce(exception_hint, '') ORDER BY id)
			FROM pgq.attempts WHERE exception IS NOT NULL`))
	require.Equal(t, []string{"card declined|issuer said 05|ask for another card", "declined||call the bank"},
		pgqtest.Scalar[[]string](t, db, `SELECT array_agg(exception || '|' || coalesce(exception_detail, '') || '|' || coalesce(exception_hint, '') ORDER BY failed_at)
			FROM pgq.failed`))
	require.Equal(t, "ask for another card", pgqtest.Scalar[string](t, db,
		`SELECT history -> 0 ->> 'hint' FROM pgq.failed WHERE exception = 'card declined'`), "each attempt of the history too")
	require.Equal(t, "call the bank", pgqtest.Scalar[string](t, db, `SELECT exception_hint FROM pgq.failed_job_settings WHERE exception = 'declined'`))
}

// S89: pausing a queue that nothing knows (no pgq.queues row, class, schedule or job
// names it, and not default) is refused with the nearest names and the way to create a
// paused queue on purpose; running a schedule that does not exist raises P0002.
func TestS89UnknownNamesAreRefused(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	_, err := db.Pool.Exec(ctx, `SELECT pgq.pause_queue('defualt')`)
	e := pgError(t, err)
	require.Equal(t, "22023", e.Code)
	require.Equal(t, "pgq: no queue 'defualt': no pgq.queues row, job class, schedule or job names it", e.Message)
	require.Equal(t, "Did you mean default? To create it paused: SELECT pgq.define_queue('defualt', paused => true)", e.Hint)
	require.Zero(t, count(t, db, "pgq.queues WHERE name = 'defualt'"), "nothing created")
	require.Zero(t, count(t, db, "pgq.actions"))

	require.True(t, pgqtest.Scalar[bool](t, db, `SELECT pgq.pause_queue('default')`))
	db.Exec(t, `SELECT pgq.define_job('report', queue => 'reports')`)
	require.True(t, pgqtest.Scalar[bool](t, db, `SELECT pgq.pause_queue('reports')`), "a class names it")
	db.Exec(t, `SELECT pgq.schedule('nightly', '@daily', 'x', queue => 'nightly')`)
	require.True(t, pgqtest.Scalar[bool](t, db, `SELECT pgq.pause_queue('nightly')`), "a schedule names it")
	dispatch(t, db, `'x', '{}', queue => 'adhoc'`)
	require.True(t, pgqtest.Scalar[bool](t, db, `SELECT pgq.pause_queue('adhoc')`), "a job is in it")
	require.Equal(t, "queue held: retry_after 90 s, paused (pgq.resume_queue starts it)",
		pgqtest.Scalar[string](t, db, `SELECT pgq.define_queue('held', paused => true)`))

	_, err = db.Pool.Exec(ctx, `SELECT pgq.run_schedule('nope')`)
	e = pgError(t, err)
	require.Equal(t, []string{"P0002", "pgq: no schedule 'nope'", "SELECT name FROM pgq.schedules lists them."}, []string{e.Code, e.Message, e.Hint})
}

// The definitions return a line of text that says what was defined, which psql shows as
// it is, not an unlabelled row.
func TestDefinitionsReturnWhatTheyDefined(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, `CREATE FUNCTION public.noop(payload jsonb) RETURNS void LANGUAGE sql SET search_path = public AS $$ SELECT $$`)
	for _, tc := range []struct{ sql, want string }{
		{`SELECT pgq.define_queue('mail', retry_after => 30)`, "queue mail: retry_after 30 s"},
		{`SELECT pgq.define_limit('vendor_api', 60, '1 minute')`, "limit vendor_api: 60 per 00:01:00, shared by every worker"},
		{`SELECT pgq.define_job('sync', queue => 'mail', handler => 'public.noop', tries => 3, backoff => '{10,60}',
			timeout => 30, unique_for => '1 hour', unique_by => '{account}', middleware => '[{"rate_limited": {"limit": "vendor_api"}}]')`,
			"job class sync: queue mail, handler public.noop(jsonb), run with search_path public, tries 3, backoff {10,60}, timeout 30 s, " +
				"unique until processed for 01:00:00 by {account}, middleware rate_limited"},
		{`SELECT pgq.define_job('go_job')`, "job class go_job: queue default, no SQL handler (a Go worker's handler runs it)"},
		{`SELECT pgq.schedule('nightly', '30 2 * * *', 'sync', timezone => 'Europe/Berlin', paused => true)`,
			"schedule nightly: job sync at 30 2 * * * in Europe/Berlin, catch_up latest, paused (pgq.resume_schedule starts it)"},
	} {
		require.Equal(t, tc.want, pgqtest.Scalar[string](t, db, tc.sql), tc.sql)
	}
}

// goose keeps its version table in schema pgq: a new installation has
// pgq.goose_version and nothing of pgq's in public (an upgraded one: TestUpgradeFromRelease7).
func TestVersionTableLivesInSchemaPGQ(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	require.True(t, pgqtest.Scalar[bool](t, db, `SELECT to_regclass('public.pgq_goose_version') IS NULL`))
	require.Greater(t, count(t, db, "pgq.goose_version WHERE version_id >= 7"), 10)
	var n int
	err := db.ConnAs(t, pgqtest.ReaderRole).QueryRow(context.Background(), `SELECT count(*) FROM pgq.goose_version`).Scan(&n)
	require.NoError(t, err, "pgq-worker status reads it as a reader")
	_, err = db.ConnAs(t, pgqtest.ReaderRole).Exec(context.Background(), `DELETE FROM pgq.goose_version`)
	require.Error(t, err)
}
