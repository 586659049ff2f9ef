package main

// Chains and batches through the binary (S70-S76): SQL handlers run by pgq-worker work,
// batches read and cancelled with pgq-worker batches.

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgq-dev/pgq/internal/pgqtest"
)

// batchSchema: app.item(p) records p.n, raising when p.fail; app.slow_item also sleeps
// p.secs; app.callback records each callback's job name and payload.
const batchSchema = `
CREATE SCHEMA app;
CREATE TABLE app.items (n int, at timestamptz DEFAULT clock_timestamp());
CREATE TABLE app.callbacks (job text, payload jsonb);
CREATE FUNCTION app.item(p jsonb) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    IF (p->>'fail')::boolean THEN
        RAISE EXCEPTION 'item % failed', p->>'n';
    END IF;
    PERFORM pg_sleep(coalesce((p->>'secs')::float, 0));
    INSERT INTO app.items (n) VALUES ((p->>'n')::int);
END
$$;
DO $$
DECLARE
    j text;
BEGIN
    FOREACH j IN ARRAY '{then, catch, finally, chain_failed}'::text[] LOOP
        EXECUTE format('CREATE FUNCTION app.cb_%s(p jsonb) RETURNS void LANGUAGE sql AS $f$ INSERT INTO app.callbacks VALUES (%L, p) $f$', j, j);
        PERFORM pgq.define_job(j, handler => 'app.cb_' || j);
    END LOOP;
END
$$;
SELECT pgq.define_job(j, handler => 'app.item') FROM unnest('{item, one, two, three}'::text[]) j;
`

func callbacks(t *testing.T, db *pgqtest.DB, job string) int {
	t.Helper()
	return scalar[int](t, db, `SELECT count(*)::int FROM app.callbacks WHERE job = $1`, job)
}

// A chain of three SQL jobs whose second step fails for good: the first runs, the third
// never does, and on_failure runs once with the chain, the step and the exception (S70,
// S71).
func TestS70S71E2EChainOfThreeSQLJobs(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, batchSchema)
	chain := dispatch(t, db, `pgq.dispatch_chain('[{"job": "one", "payload": {"n": 1}},
		{"job": "two", "payload": {"n": 2, "fail": true}, "tries": 2}, {"job": "three", "payload": {"n": 3}}]',
		on_failure => 'chain_failed')`)
	w := startWorker(t, db, "chain", "--stop-when-empty", "--sleep", "1")
	require.Equal(t, 0, w.waitExit(t, 30*time.Second))

	require.Equal(t, []int{1}, scalar[[]int](t, db, `SELECT array_agg(n ORDER BY at) FROM app.items`))
	require.Equal(t, 1, callbacks(t, db, "chain_failed"))
	var payload map[string]any
	require.NoError(t, db.Pool.QueryRow(context.Background(), `SELECT payload FROM app.callbacks`).Scan(&payload))
	require.Equal(t, chain, payload["chain_id"])
	require.EqualValues(t, 2, payload["step"])
	require.Equal(t, "two", payload["job"])
	require.Contains(t, payload["exception"], "item 2 failed")
	require.Equal(t, 2, scalar[int](t, db, `SELECT attempts FROM pgq.failed_jobs WHERE job = 'two'`), "its retry kept the chain")
	require.Equal(t, "failed", scalar[string](t, db, `SELECT state FROM pgq.chains WHERE id = $1::uuid`, chain))
}

// A batch of 1,000 SQL jobs of which 3 fail, drained by the binary (S73, S75, S76):
// with allow_failures the other 997 run, catch and finally run once each and then never;
// without, the first failure cancels the batch, and catch and finally still run once
// each. The counters equal what happened.
func TestS73S75S76E2EBatchOf1000With3Failures(t *testing.T) {
	t.Parallel()
	for _, allow := range []bool{true, false} {
		t.Run(map[bool]string{true: "AllowFailures", false: "WithoutAllowFailures"}[allow], func(t *testing.T) {
			t.Parallel()
			db := pgqtest.New(t)
			db.Exec(t, batchSchema)
			batch := dispatch(t, db, `pgq.dispatch_batch(
				(SELECT jsonb_agg(jsonb_build_object('job', 'item', 'payload', jsonb_build_object('n', i, 'fail', i IN (100, 500, 900))))
				 FROM generate_series(1, 1000) i),
				'thousand', then_job => 'then', catch_job => 'catch', finally_job => 'finally', allow_failures => $1)`, allow)
			w := startWorker(t, db, "drain", "--stop-when-empty", "--sleep", "1")
			require.Equal(t, 0, w.waitExit(t, 60*time.Second))

			var total, pending, failed, cancelled, succeeded int
			var finished bool
			require.NoError(t, db.Pool.QueryRow(context.Background(), `
				SELECT total_jobs, pending_jobs, failed_jobs, cancelled_jobs, succeeded_jobs, finished_at IS NOT NULL
				FROM pgq.batches WHERE id = $1::uuid`, batch).Scan(&total, &pending, &failed, &cancelled, &succeeded, &finished))
			require.Equal(t, 1000, total)
			require.True(t, finished)
			require.Equal(t, scalar[int](t, db, `SELECT count(*)::int FROM app.items`), succeeded)
			require.Equal(t, scalar[int](t, db, `SELECT count(*)::int FROM pgq.failed_jobs WHERE batch_id = $1::uuid`, batch), failed)
			require.Equal(t, scalar[int](t, db, `SELECT count(DISTINCT job_uuid)::int FROM pgq.attempts WHERE outcome = 'cancelled'`), cancelled)
			require.Equal(t, 1000, succeeded+failed+cancelled)
			require.Equal(t, failed, pending, "Laravel's pending_jobs keeps the failed ones")
			require.Equal(t, 1, callbacks(t, db, "catch"))
			require.Equal(t, 1, callbacks(t, db, "finally"))
			require.Equal(t, 0, callbacks(t, db, "then"))
			if allow {
				require.Equal(t, 997, succeeded)
				require.Equal(t, 3, failed)
				require.Zero(t, cancelled)
			} else {
				require.GreaterOrEqual(t, failed, 1)
				require.Positive(t, cancelled, "the first failure cancelled the jobs still waiting")
				require.True(t, scalar[bool](t, db, `SELECT cancelled_at IS NOT NULL FROM pgq.batches WHERE id = $1::uuid`, batch))
			}
			var fin map[string]any
			require.NoError(t, db.Pool.QueryRow(context.Background(), `SELECT payload FROM app.callbacks WHERE job = 'finally'`).Scan(&fin))
			require.Equal(t, batch, fin["batch_id"])
			require.Equal(t, "thousand", fin["name"])
			require.EqualValues(t, failed, fin["failed_jobs"])
		})
	}
}

// pgq-worker batches cancel mid-batch: the jobs still waiting never run, running ones
// finish, then never runs and finally runs once; batches list and show tell (S74).
func TestS74E2ECancelMidBatch(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, batchSchema)
	batch := dispatch(t, db, `pgq.dispatch_batch(
		(SELECT jsonb_agg(jsonb_build_object('job', 'item', 'payload', jsonb_build_object('n', i, 'secs', 0.05)))
		 FROM generate_series(1, 300) i),
		'slow', then_job => 'then', finally_job => 'finally')`)
	w := startWorker(t, db, "slow", "--concurrency", "2", "--sleep", "1")
	waitUntil(t, 20*time.Second, "ten items ran", func() bool {
		n, _ := try[int](db, `SELECT count(*)::int FROM app.items`)
		return n >= 10
	})
	out, errOut, code := cli(t, db, "batches", "cancel", batch)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "cancelled")
	waitUntil(t, 20*time.Second, "finally ran", func() bool {
		n, _ := try[int](db, `SELECT count(*)::int FROM app.callbacks WHERE job = 'finally'`)
		return n == 1
	})
	w.signal(t, syscall.SIGTERM)
	require.Equal(t, 0, w.waitExit(t, 20*time.Second))

	ran := scalar[int](t, db, `SELECT count(*)::int FROM app.items`)
	require.Less(t, ran, 300)
	require.Zero(t, callbacks(t, db, "then"))
	require.Equal(t, 1, callbacks(t, db, "finally"))
	require.Zero(t, scalar[int](t, db, `SELECT count(*)::int FROM pgq.jobs WHERE job = 'item'`))
	var succeeded, cancelled int
	require.NoError(t, db.Pool.QueryRow(context.Background(),
		`SELECT succeeded_jobs, cancelled_jobs FROM pgq.batches WHERE id = $1::uuid`, batch).Scan(&succeeded, &cancelled))
	require.Equal(t, ran, succeeded)
	require.Equal(t, 300, succeeded+cancelled)

	out, errOut, code = cli(t, db, "batches", "list")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, batch)
	require.Contains(t, out, "cancelled, finished")
	out, errOut, code = cli(t, db, "batches", "show", batch)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, fmt.Sprintf("cancelled:    %d", cancelled))
	require.Contains(t, out, "name:         slow")
	_, _, code = cli(t, db, "batches", "show", "not-a-uuid")
	require.Equal(t, 2, code)
	_, errOut, code = cli(t, db, "batches", "cancel", "00000000-0000-0000-0000-000000000001")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "not found")
}

// A batch and a chain dispatched in a transaction that rolls back leave nothing for a
// worker to run and nothing in pgq.batches or pgq.chains (S73).
func TestS73E2ERolledBackDispatchLeavesNothing(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, batchSchema)
	tx, err := db.Pool.Begin(context.Background())
	require.NoError(t, err)
	_, err = tx.Exec(context.Background(), `SELECT pgq.dispatch_batch('[{"job": "item", "payload": {"n": 1}}]', finally_job => 'finally'),
		pgq.dispatch_chain('[{"job": "one", "payload": {"n": 2}}]')`)
	require.NoError(t, err)
	require.NoError(t, tx.Rollback(context.Background()))
	w := startWorker(t, db, "nothing", "--stop-when-empty", "--sleep", "1")
	require.Equal(t, 0, w.waitExit(t, 20*time.Second))
	require.Zero(t, scalar[int](t, db, `SELECT (SELECT count(*) FROM app.items) + (SELECT count(*) FROM app.callbacks)
		+ (SELECT count(*) FROM pgq.batches) + (SELECT count(*) FROM pgq.chains)`))
}

// Eight worker processes complete one batch's jobs at once: then and finally run exactly
// once each (S76).
func TestS76E2EEightWorkersRunThenOnce(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, batchSchema)
	batch := dispatch(t, db, `pgq.dispatch_batch(
		(SELECT jsonb_agg(jsonb_build_object('job', 'item', 'payload', jsonb_build_object('n', i))) FROM generate_series(1, 2000) i),
		then_job => 'then', finally_job => 'finally')`)
	var workers []*proc
	for i := range 8 {
		workers = append(workers, startWorker(t, db, fmt.Sprintf("w%d", i), "--concurrency", "4", "--sleep", "1"))
	}
	waitUntil(t, 60*time.Second, "the batch finished and its callbacks ran", func() bool {
		n, _ := try[int](db, `SELECT count(*)::int FROM app.callbacks`)
		return n >= 2
	})
	time.Sleep(500 * time.Millisecond) // a second run of a callback would show by now
	for _, w := range workers {
		w.signal(t, syscall.SIGTERM)
	}
	busy := 0
	for _, w := range workers {
		require.Equal(t, 0, w.waitExit(t, 20*time.Second))
		if strings.Contains(w.logs(), "job=item") {
			busy++
		}
	}
	require.Equal(t, 2000, scalar[int](t, db, `SELECT count(*)::int FROM app.items`))
	require.Equal(t, 1, callbacks(t, db, "then"))
	require.Equal(t, 1, callbacks(t, db, "finally"))
	require.Equal(t, 2000, scalar[int](t, db, `SELECT succeeded_jobs FROM pgq.batches WHERE id = $1::uuid`, batch))
	require.GreaterOrEqual(t, busy, 2, "several workers completed the batch's jobs")
}

// pgq-worker batches retry puts a batch's failed jobs back on their queues (S96) and
// exits 1 for a cancelled or unknown batch; pgq-worker check flags a batch that stalled
// (S95) and exits 1.
func TestS95S96E2EBatchesRetryAndCheck(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	batch := dispatch(t, db, `pgq.dispatch_batch('[{"job": "a"}, {"job": "b"}]', 'nightly', allow_failures => true, queue => 'q')`)
	failOne := func(queue string) string {
		var id, token string
		require.NoError(t, db.Pool.QueryRow(context.Background(),
			`SELECT uuid::text, lease_token::text FROM pgq.reserve('w:1', ARRAY[$1], 1)`, queue).Scan(&id, &token))
		db.Exec(t, `SELECT pgq.fail($1::uuid, $2::uuid, 'boom')`, id, token)
		return id
	}
	failed := failOne("q")

	out, errOut, code := cli(t, db, "batches", "retry", batch)
	require.Equal(t, 0, code, errOut)
	require.Equal(t, failed+"\nbatch "+batch+": 1 failed jobs retried\n", out)
	require.Zero(t, scalar[int](t, db, `SELECT count(*)::int FROM pgq.failed_jobs`))
	out, errOut, code = cli(t, db, "batches", "retry", batch)
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "batch "+batch+": 0 failed jobs retried\n", out, "nothing failed now")

	cancelled := dispatch(t, db, `pgq.dispatch_batch('[{"job": "a"}, {"job": "b"}]', queue => 'c')`)
	failOne("c")
	_, errOut, code = cli(t, db, "batches", "retry", cancelled)
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "was cancelled")
	_, errOut, code = cli(t, db, "batches", "retry", "00000000-0000-0000-0000-000000000001")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "no batch 00000000-0000-0000-0000-000000000001")

	// A live worker serves q and handles a and b, so check finds nothing else to flag.
	db.Exec(t, `SELECT pgq.worker_seen('w:1', '{q,c}', '{a,b}')`)
	out, errOut, code = cli(t, db, "check", "--timeout", "10")
	require.Equal(t, 0, code, out+errOut)
	db.Exec(t, `UPDATE pgq.jobs SET available_at = now() - interval '10 minutes' WHERE batch_id = $1::uuid`, batch)
	out, _, code = cli(t, db, "check", "--timeout", "10")
	require.Equal(t, 0, code, "a job of the batch failed just now: it moved lately\n%s", out)
	db.Exec(t, `UPDATE pgq.job_ends SET ended_at = now() - interval '10 minutes' WHERE batch_id = $1::uuid`, batch)
	out, _, code = cli(t, db, "check", "--timeout", "10")
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "batch "+batch+" (nightly): batch_stalled")
	require.Contains(t, out, "fix: run a worker on queue q")
}
