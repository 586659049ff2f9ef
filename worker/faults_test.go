package worker_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/pgq-dev/pgq/internal/pgqtest"
	"github.com/pgq-dev/pgq/worker"
)

// S37: the worker sets its own timeouts on every connection it uses, whatever the
// database (or role) says: with a database-level statement_timeout and lock_timeout of
// 1 ms, which no protocol call meets, a drain of Go and SQL jobs still completes; and a
// SQL handler's transaction carries the idle limit that ends a frozen worker's hold.
func TestS37WorkerSetsItsOwnTimeouts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.db.Exec(t, `CREATE TABLE public.seen (idle text, statement text)`)
	b.db.Exec(t, `CREATE FUNCTION public.record(p jsonb) RETURNS void LANGUAGE sql AS
		$$ INSERT INTO public.seen VALUES (current_setting('idle_in_transaction_session_timeout'), current_setting('statement_timeout')) $$`)
	b.db.Exec(t, `SELECT pgq.define_job('sql', handler => 'public.record', timeout => 7)`)
	b.dispatchOrders(t, "go", 200)
	for range 20 {
		b.db.Exec(t, `SELECT pgq.dispatch('sql')`)
	}
	b.db.Exec(t, `SELECT set_config('pgq.db', current_database(), false)`)
	b.db.Exec(t, `DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET statement_timeout = 1', current_database());
	                         EXECUTE format('ALTER DATABASE %I SET lock_timeout = 1', current_database()); END $$`)
	// A new pool: its connections start with the database's settings.
	pool, err := pgxpool.New(context.Background(), b.db.URL)
	require.NoError(t, err)
	defer pool.Close()
	require.Equal(t, "1ms", pgqtest.Setting(t, pool, "statement_timeout"), "the database's setting applies to connections that set none")

	w, err := worker.New(pool, worker.WithLogger(quiet), worker.WithStopWhenEmpty(), worker.WithConcurrency(20))
	require.NoError(t, err)
	worker.Handle(w, "go", worker.Handler[order]{Run: func(ctx context.Context, j *worker.Job[order]) error { return nil }})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, w.Run(ctx))
	require.Zero(t, pgqtest.Scalar[int](t, b.db, `SELECT count(*)::int FROM pgq.live_jobs`), "the drain completed")
	require.Zero(t, pgqtest.Scalar[int](t, b.db, `SELECT count(*)::int FROM pgq.failed_jobs`))
	require.Equal(t, 20, pgqtest.Scalar[int](t, b.db, `SELECT count(*)::int FROM public.seen WHERE idle = '10s' AND statement = '7s'`),
		"each SQL handler ran under the job's timeout and the idle limit")
}

// S13, S35: a SQL handler's timeout runs from its own start: the wait for its slot and
// its connection is infrastructure's, not the handler's. With one SQL slot (a pool of 4
// connections) and a concurrency of 2, the second of two 2.4 s handlers under a 4 s
// timeout waits about 2.4 s for the first, then runs: both succeed. One timeout from the
// reserve would cut it off 1.6 s into its run, as a restart's refused connections did to
// handlers at --tries 1 (the restart fault test). A third handler, of 6 s, still times
// out: its 4 s are its own. (Seconds, not less: on a loaded machine a handler's own
// statements around its sleep take a good part of a second.)
func TestS13S35SQLHandlerTimeoutRunsFromItsStart(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.db.Exec(t, `CREATE TABLE public.naps (n int, began timestamptz)`)
	b.db.Exec(t, `CREATE FUNCTION public.nap(p jsonb) RETURNS void LANGUAGE plpgsql AS $$
		BEGIN
		    INSERT INTO public.naps VALUES ((p->>'n')::int, clock_timestamp());
		    PERFORM pg_sleep((p->>'secs')::float8);
		END $$`)
	b.db.Exec(t, `SELECT pgq.define_job('nap', handler => 'public.nap', timeout => 4, tries => 1)`)
	var ids []uuid.UUID
	for _, payload := range []string{`{"n": 1, "secs": 2.4}`, `{"n": 2, "secs": 2.4}`, `{"n": 3, "secs": 6}`} {
		ids = append(ids, pgqtest.Scalar[uuid.UUID](t, b.db, `SELECT pgq.dispatch('nap', $1::jsonb)`, payload))
	}
	cfg, err := pgxpool.ParseConfig(b.db.WorkerURL)
	require.NoError(t, err)
	cfg.MaxConns = 4 // one SQL slot: MaxConns - 3
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	require.NoError(t, err)
	defer pool.Close()
	w, err := worker.New(pool, worker.WithLogger(quiet), worker.WithStopWhenEmpty(), worker.WithConcurrency(2))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, w.Run(ctx))

	require.Equal(t, []string{"succeeded"}, b.outcomes(t, ids[0]))
	require.Equal(t, []string{"succeeded"}, b.outcomes(t, ids[1]), "the second handler waited for the slot, then had its 4 s")
	require.Equal(t, []string{"timed_out"}, b.outcomes(t, ids[2]))
	require.Contains(t, b.failedException(t, ids[2]), "TimeoutExceeded: nap attempt 1 ran past its timeout")
	waited := pgqtest.Scalar[float64](t, b.db, `SELECT extract(epoch FROM max(began) - min(began))::float8 FROM public.naps`)
	require.Greater(t, waited, 2.35, "the second handler started after the first returned: its wait and its run outlast its timeout")
}

// S36: a completion that PostgreSQL refuses for the moment (here a trigger raises a
// serialization failure for the first three calls) is retried until it goes through:
// every job succeeds once. A completion refused for one job's own data (a trigger
// rejects job 7's first success) is isolated: the batch is split until that job alone
// fails, the others complete, and job 7 comes back through its lease.
func TestS36ReportsAreRetriedAndIsolated(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.db.Exec(t, `SELECT pgq.define_queue('default', retry_after => 2)`)
	const n = 200
	b.dispatchOrders(t, "job", n)
	bad := pgqtest.Scalar[string](t, b.db, `SELECT uuid::text FROM pgq.ready WHERE payload->>'order_id' = '7'`)
	b.db.Exec(t, `CREATE SEQUENCE public.refusals`)
	// SECURITY DEFINER: the trigger fires inside pgq.complete, which runs as pgq's owner.
	b.db.Exec(t, `CREATE FUNCTION public.refuse() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER AS $$
	BEGIN
	    IF NEW.outcome = 'succeeded' AND nextval('public.refusals') <= 3 THEN
	        RAISE EXCEPTION 'refused for now' USING ERRCODE = '40001';
	    END IF;
	    IF NEW.outcome = 'succeeded' AND NEW.job_uuid = '`+bad+`' AND NEW.attempt = 1 THEN
	        RAISE EXCEPTION 'bad data of job 7' USING ERRCODE = '22023';
	    END IF;
	    RETURN NEW;
	END $$`)
	b.db.Exec(t, `CREATE TRIGGER refuse BEFORE INSERT ON pgq.attempts FOR EACH ROW EXECUTE FUNCTION public.refuse()`)
	logs := &lockedBuffer{}
	w := b.worker(t, worker.WithConcurrency(50), worker.WithTries(2), worker.WithLogger(slog.New(slog.NewTextHandler(logs, nil))))
	worker.Handle(w, "job", worker.Handler[order]{Run: func(ctx context.Context, j *worker.Job[order]) error { return nil }})
	stop := start(t, w)
	require.Eventually(t, func() bool { return pgqtest.Scalar[int](t, b.db, `SELECT count(*)::int FROM pgq.live_jobs`) == 0 },
		30*time.Second, 50*time.Millisecond, "every job ended")
	require.NoError(t, stop())

	require.Zero(t, pgqtest.Scalar[int](t, b.db, `SELECT count(*)::int FROM pgq.failed_jobs`))
	require.Equal(t, n, pgqtest.Scalar[int](t, b.db, `SELECT count(*)::int FROM pgq.attempts WHERE outcome = 'succeeded'`),
		"each job succeeded once")
	require.Equal(t, []string{"lease_expired", "succeeded"}, b.outcomes(t, uuid.MustParse(bad)),
		"the job whose report failed on its own data came back through its lease")
	require.Equal(t, n+1, pgqtest.Scalar[int](t, b.db, `SELECT count(*)::int FROM pgq.attempts`), "no other job had a second attempt")
	require.GreaterOrEqual(t, strings.Count(logs.String(), "report failed; retrying"), 3, "the refusals were retried")
	require.Equal(t, 1, strings.Count(logs.String(), "outcome=complete_failed"), "only job 7's report was given up")
}
