package main

// What a producer may choose (S90), what the server can run (S92) and who may add to a
// batch (S93), through the binary: the producer's own login dispatches, pgq-worker
// works as the worker's login.

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
