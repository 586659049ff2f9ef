package main

// What a producer may choose (S90), what the server can run (S92), who may add to a
// batch (S93) and how much middleware a job may carry (S98), through the binary: the
// producer's own login dispatches, pgq-worker works as the worker's login.

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/pgq-dev/pgq/internal/pgqtest"
)

// S90: the retry storm. A class declared with tries 2 and max_tries 5, whose handler
// always raises. The producer's tries 0 with no backoff, its endless deadline and its
// tries 6 are refused; its tries 5 with no backoff, and its deadline of an hour with no
// backoff, are accepted, and each job stops at its fifth attempt. Then 100 plain jobs
// of the same queue, dispatched by the same producer, all run.
func TestS90E2ERetryStormStopsAtTheCeiling(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgqtest.New(t)
	db.Exec(t, `
CREATE SCHEMA app;
CREATE TABLE app.runs (n int);
CREATE FUNCTION app.failer(p jsonb) RETURNS void LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'vendor 500'; END $$;
CREATE FUNCTION app.rec(p jsonb) RETURNS void LANGUAGE sql AS $$ INSERT INTO app.runs VALUES ((p->>'n')::int) $$;
SELECT pgq.define_job('failer', handler => 'app.failer', tries => 2, max_tries => 5);
SELECT pgq.define_job('rec', handler => 'app.rec');
`)
	producer := db.ConnAs(t, pgqtest.ProducerRole)
	for _, opts := range []string{`tries => 0, backoff => '{0}'`, `retry_until => 'infinity'`, `tries => 6`} {
		_, err := producer.Exec(ctx, `SELECT pgq.dispatch('failer', '{}', `+opts+`)`)
		var pgErr *pgconn.PgError
		require.True(t, errors.As(err, &pgErr), "%s: %v", opts, err)
		require.Equal(t, "22023", pgErr.Code, opts)
	}
	var counted, windowed string
	require.NoError(t, producer.QueryRow(ctx, `SELECT pgq.dispatch('failer', '{}', tries => 5, backoff => '{0}')::text`).Scan(&counted))
	require.NoError(t, producer.QueryRow(ctx, `SELECT pgq.dispatch('failer', '{}', retry_for => '1 hour', backoff => '{0}')::text`).Scan(&windowed))

	w := startWorker(t, db, "W", "--sleep", "1", "--concurrency", "4", "--stop-when-empty")
	require.Equal(t, 0, w.waitExit(t, 60*time.Second))
	for _, id := range []string{counted, windowed} {
		require.Equal(t, 5, scalar[int](t, db, `SELECT attempts FROM pgq.failed_jobs WHERE uuid = $1::uuid`, id))
		require.Len(t, attemptsOf(t, db, id), 5)
	}
	require.Contains(t, scalar[string](t, db, `SELECT exception FROM pgq.failed_jobs WHERE uuid = $1::uuid`, windowed), "vendor 500")

	_, err := producer.Exec(ctx, `SELECT pgq.dispatch_many('rec', ARRAY(SELECT jsonb_build_object('n', i) FROM generate_series(1, 100) i))`)
	require.NoError(t, err)
	w = startWorker(t, db, "W2", "--sleep", "1", "--concurrency", "8", "--stop-when-empty")
	require.Equal(t, 0, w.waitExit(t, 60*time.Second))
	require.Equal(t, 100, scalar[int](t, db, `SELECT count(DISTINCT n)::int FROM app.runs`))
}

// S98: the hostile dispatch of 5,000 overlap keys is refused for the producer; the same
// middleware stored in a job's row (as by an older version) fails that job alone at its
// reserve, and the 100 plain jobs of its queue, dispatched after it by the producer, all
// run.
func TestS98E2EHostileMiddlewareStallsNoQueue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgqtest.New(t)
	db.Exec(t, appSchema+`SELECT pgq.define_job('rec', handler => 'app.rec');
SELECT pgq.define_job('h', handler => 'app.rec');`)
	hostile := `(SELECT jsonb_agg(jsonb_build_object('without_overlapping', jsonb_build_object('key', 'k' || g || repeat('z', 900))))
		FROM generate_series(1, 5000) g)`
	producer := db.ConnAs(t, pgqtest.ProducerRole)
	_, err := producer.Exec(ctx, `SELECT pgq.dispatch('h', '{"n": "h"}', middleware => `+hostile+`)`)
	var pgErr *pgconn.PgError
	require.True(t, errors.As(err, &pgErr), "%v", err)
	require.Equal(t, "22023", pgErr.Code)

	id := dispatch(t, db, `pgq.dispatch('h', '{"n": "h"}', middleware => '[{"without_overlapping": {"key": "a"}}]')`)
	db.Exec(t, `UPDATE pgq.jobs SET middleware = `+hostile+`, middleware_keys = NULL WHERE uuid = $1::uuid`, id)
	_, err = producer.Exec(ctx, `SELECT pgq.dispatch_many('rec', ARRAY(SELECT jsonb_build_object('n', i) FROM generate_series(1, 100) i))`)
	require.NoError(t, err)
	w := startWorker(t, db, "W", "--sleep", "1", "--concurrency", "8", "--stop-when-empty")
	require.Equal(t, 0, w.waitExit(t, 60*time.Second))
	require.Equal(t, 100, scalar[int](t, db, `SELECT count(DISTINCT n)::int FROM app.runs WHERE n <> 'h'`))
	require.Contains(t, scalar[string](t, db, `SELECT exception FROM pgq.failed_jobs WHERE uuid = $1::uuid`, id),
		"middleware could not be evaluated: 5000 entries, more than the 8 a job may carry")
	require.NotContains(t, w.logs(), "reserve failed")
}

// S92: a job whose timeout no statement_timeout can hold (written into its row, as a job
// dispatched before pgq refused such timeouts), with unlimited tries. The server refuses
// its attempt's setup, and the job fails for good at once with SetupFailed: its
// handler never ran, nothing looped, and the worker goes on to run the next job.
func TestS92E2ESetupFailureFailsTheJobOnce(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, appSchema+`SELECT pgq.define_job('rec', handler => 'app.rec', tries => 0);`)
	id := dispatch(t, db, `pgq.dispatch('rec', '{"n": "huge"}')`)
	db.Exec(t, `UPDATE pgq.jobs SET timeout = 3000000 WHERE uuid = $1::uuid`, id)
	w := startWorker(t, db, "W", "--sleep", "1", "--concurrency", "2")
	waitUntil(t, 10*time.Second, "the job failed", func() bool {
		n, _ := try[int](db, `SELECT count(*)::int FROM pgq.failed_jobs WHERE uuid = $1::uuid`, id)
		return n == 1
	})
	exc := scalar[string](t, db, `SELECT exception FROM pgq.failed_jobs WHERE uuid = $1::uuid`, id)
	require.Contains(t, exc, "SetupFailed: attempt 1 of rec could not be set up, so its handler never ran")
	require.Contains(t, exc, "statement_timeout")
	require.Equal(t, []attempt{{1, "W", "failed"}}, attemptsOf(t, db, id))
	require.False(t, jobLive(t, db, id))

	good := dispatch(t, db, `pgq.dispatch('rec', '{"n": "good"}')`)
	waitUntil(t, 10*time.Second, "the next job ran", func() bool { return !jobLive(t, db, good) })
	require.Equal(t, []string{"good"}, scalar[[]string](t, db, `SELECT array_agg(n) FROM app.runs`))
	require.Equal(t, []attempt{{1, "W", "failed"}}, attemptsOf(t, db, id), "still one attempt")
	require.Contains(t, w.logs(), "SetupFailed")
}

// S93: a SQL handler adds to its own batch with pgq.add_to_batch, its transaction
// showing its job and lease token, though a producer's login dispatched the batch and
// the handler runs as the worker's; the member it added runs, and the batch ends with
// both.
func TestS93E2ESQLHandlerAddsToItsBatch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgqtest.New(t)
	db.Exec(t, `
CREATE SCHEMA app;
CREATE TABLE app.items (n int);
CREATE FUNCTION app.part(p jsonb) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO app.items VALUES ((p->>'n')::int);
    IF (p->>'more')::boolean THEN
        PERFORM pgq.add_to_batch(pgq.job_batch(current_setting('pgq.job_uuid')::uuid), '[{"job": "part", "payload": {"n": 2}}]');
    END IF;
END
$$;
SELECT pgq.define_job('part', handler => 'app.part');
`)
	var batch string
	require.NoError(t, db.ConnAs(t, pgqtest.ProducerRole).QueryRow(ctx,
		`SELECT pgq.dispatch_batch('[{"job": "part", "payload": {"n": 1, "more": true}}]')::text`).Scan(&batch))
	w := startWorker(t, db, "W", "--sleep", "1", "--stop-when-empty")
	require.Equal(t, 0, w.waitExit(t, 30*time.Second))
	require.Equal(t, []int{1, 2}, scalar[[]int](t, db, `SELECT array_agg(n ORDER BY n) FROM app.items`))
	var total, succeeded int
	var finished bool
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT total_jobs, succeeded_jobs, finished_at IS NOT NULL FROM pgq.batches WHERE id = $1::uuid`,
		batch).Scan(&total, &succeeded, &finished))
	require.Equal(t, 2, total)
	require.Equal(t, 2, succeeded)
	require.True(t, finished)
}
