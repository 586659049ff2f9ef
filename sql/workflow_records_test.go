package sql_test

// What chains and batches keep of their jobs (S97), the retry of a batch's failed jobs
// (S96) and the stalled check (S95), through the worker protocol's SQL functions.

import (
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/pgq-dev/pgq/internal/pgqtest"
)

// reserveJob reserves every ready job of the default queue and returns the one named job.
func reserveJob(t *testing.T, db *pgqtest.DB, job string) reserved {
	t.Helper()
	for _, j := range reserveAll(t, db) {
		if pgqtest.Scalar[string](t, db, `SELECT job FROM pgq.jobs WHERE uuid = $1`, j.UUID) == job {
			return j
		}
	}
	t.Fatalf("no ready job %s", job)
	return reserved{}
}

type callbackRow struct {
	Kind, Job         string
	JobUUID           *uuid.UUID
	Error, Outcome    *string
	Exception         *string
	Ended             bool
	ChainID, ChainJob *uuid.UUID
}

func callbacksOf(t *testing.T, db *pgqtest.DB, owner uuid.UUID) []callbackRow {
	t.Helper()
	rows, err := db.Pool.Query(ctx, `SELECT kind, job, job_uuid, error, outcome, exception, ended_at IS NOT NULL
		FROM pgq.callbacks WHERE batch_id = $1 OR chain_id = $1 ORDER BY id`, owner)
	require.NoError(t, err)
	defer rows.Close()
	var out []callbackRow
	for rows.Next() {
		var c callbackRow
		require.NoError(t, rows.Scan(&c.Kind, &c.Job, &c.JobUUID, &c.Error, &c.Outcome, &c.Exception, &c.Ended))
		out = append(out, c)
	}
	require.NoError(t, rows.Err())
	return out
}

func str(s string) *string { return &s }

// A chain keeps each step's job; its on_failure is recorded with its job, and how that
// job ended; retried, it waits again. A batch's then, catch and finally are recorded
// the same way, and one that cannot be queued says why. The jobs a batch's cancel
// deletes while they wait end in pgq.job_ends like any other, so pgq.batch_jobs lists
// every job of the batch in its state.
func TestS97CallbacksStepsAndEndsAreRecorded(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)

	t.Run("Chain", func(t *testing.T) {
		chain := pgqtest.Scalar[uuid.UUID](t, db, `SELECT pgq.dispatch_chain(
			'[{"job": "c1"}, {"job": "c2"}, {"job": "c3"}]', on_failure => 'c_failed', queue => 'chains')`)
		one := reserve(t, db, "w", clock(), "chains")[0]
		require.True(t, complete(t, db, one))
		two := reserve(t, db, "w", clock(), "chains")[0]
		require.True(t, fail(t, db, two, "step two broke", false, clock()).Final)
		require.Equal(t, []uuid.UUID{one.UUID, two.UUID},
			pgqtest.Scalar[[]uuid.UUID](t, db, `SELECT job_uuids FROM pgq.chains WHERE id = $1`, chain))
		require.Equal(t, []string{"c1", "c2", "c3"}, pgqtest.Scalar[[]string](t, db, `SELECT step_jobs FROM pgq.chains WHERE id = $1`, chain))

		cbs := callbacksOf(t, db, chain)
		require.Len(t, cbs, 1)
		require.Equal(t, "on_failure", cbs[0].Kind)
		require.Equal(t, "c_failed", cbs[0].Job)
		require.NotNil(t, cbs[0].JobUUID)
		require.Nil(t, cbs[0].Outcome, "queued, not ended")
		onFailure := *cbs[0].JobUUID
		require.Equal(t, 0, pgqtest.Scalar[int](t, db, `SELECT chain_step FROM pgq.jobs WHERE uuid = $1`, onFailure))
		require.Equal(t, chain, pgqtest.Scalar[uuid.UUID](t, db, `SELECT chain_id FROM pgq.jobs WHERE uuid = $1`, onFailure))

		// The on_failure job fails; retried it waits again, and its success is recorded.
		cb := reserve(t, db, "w", clock(), "chains")[0]
		require.Equal(t, onFailure, cb.UUID)
		require.True(t, fail(t, db, cb, "alert service down", false, clock()).Final)
		cbs = callbacksOf(t, db, chain)
		require.Equal(t, str("failed"), cbs[0].Outcome)
		require.Equal(t, str("alert service down"), cbs[0].Exception)
		require.Equal(t, "failed", pgqtest.Scalar[string](t, db, `SELECT state FROM pgq.chains WHERE id = $1`, chain),
			"the callback's end does not move its chain")
		db.Exec(t, `SELECT pgq.retry_failed($1)`, onFailure)
		cbs = callbacksOf(t, db, chain)
		require.Nil(t, cbs[0].Outcome)
		require.False(t, cbs[0].Ended)
		require.Equal(t, "failed", pgqtest.Scalar[string](t, db, `SELECT state FROM pgq.chains WHERE id = $1`, chain))
		require.True(t, complete(t, db, reserve(t, db, "w", clock(), "chains")[0]))
		cbs = callbacksOf(t, db, chain)
		require.Equal(t, str("succeeded"), cbs[0].Outcome)
		require.True(t, cbs[0].Ended)

		// The failed step, retried, runs on: step 3's job is kept too, and the chain's
		// on_failure is not queued again.
		db.Exec(t, `SELECT pgq.retry_failed($1)`, two.UUID)
		require.True(t, complete(t, db, reserve(t, db, "w", clock(), "chains")[0]))
		three := reserve(t, db, "w", clock(), "chains")[0]
		require.True(t, complete(t, db, three))
		require.Equal(t, []uuid.UUID{one.UUID, two.UUID, three.UUID},
			pgqtest.Scalar[[]uuid.UUID](t, db, `SELECT job_uuids FROM pgq.chains WHERE id = $1`, chain))
		require.Len(t, callbacksOf(t, db, chain), 1)
	})

	t.Run("Batch", func(t *testing.T) {
		db.Exec(t, `SELECT pgq.define_job('b_finally', middleware => '[{"without_overlapping": {"by": ["k"]}}]')`)
		batch := pgqtest.Scalar[uuid.UUID](t, db, `SELECT pgq.dispatch_batch(
			'[{"job": "b_ok"}, {"job": "b_bad"}, {"job": "b_wait", "delay": 3600}, {"chain": [{"job": "b_step"}, {"job": "b_never"}]}]',
			name => 'nightly', then_job => 'b_then', catch_job => 'b_catch', finally_job => 'b_finally', queue => 'batches')`)
		jobs := reserve(t, db, "w", clock(), "batches")
		require.Len(t, jobs, 3)
		byName := map[string]reserved{}
		for _, j := range jobs {
			byName[pgqtest.Scalar[string](t, db, `SELECT job FROM pgq.jobs WHERE uuid = $1`, j.UUID)] = j
		}
		require.True(t, complete(t, db, byName["b_ok"]))
		// The failure queues catch and cancels the batch: b_wait, still waiting, ends
		// cancelled; b_step runs on and finishes.
		require.True(t, fail(t, db, byName["b_bad"], "bad input", false, clock()).Final)
		require.True(t, complete(t, db, byName["b_step"]))

		cbs := callbacksOf(t, db, batch)
		require.Len(t, cbs, 2, "catch, and finally, which could not be queued; then never runs")
		require.Equal(t, "catch", cbs[0].Kind)
		require.NotNil(t, cbs[0].JobUUID)
		require.Equal(t, "finally", cbs[1].Kind)
		require.Nil(t, cbs[1].JobUUID)
		require.NotNil(t, cbs[1].Error)
		require.Contains(t, *cbs[1].Error, "SQLSTATE")
		require.True(t, complete(t, db, reserve(t, db, "w", clock(), "batches")[0]))
		require.Equal(t, str("succeeded"), callbacksOf(t, db, batch)[0].Outcome)

		wait := pgqtest.Scalar[uuid.UUID](t, db, `SELECT job_uuid FROM pgq.job_ends WHERE batch_id = $1 AND outcome = 'cancelled'`, batch)
		require.Equal(t, "b_wait", pgqtest.Scalar[string](t, db, `SELECT job FROM pgq.attempts WHERE job_uuid = $1`, wait))

		rows, err := db.Pool.Query(ctx, `SELECT state, job, coalesce(exception, '') FROM pgq.batch_jobs WHERE batch_id = $1 ORDER BY job`, batch)
		require.NoError(t, err)
		var got [][3]string
		for rows.Next() {
			var r [3]string
			require.NoError(t, rows.Scan(&r[0], &r[1], &r[2]))
			got = append(got, r)
		}
		require.NoError(t, rows.Err())
		require.Equal(t, [][3]string{
			{"failed", "b_bad", "bad input"},
			{"succeeded", "b_ok", ""},
			{"succeeded", "b_step", ""},
			{"cancelled", "b_wait", "cancelled: batch " + batch.String() + " failed at job " + byName["b_bad"].UUID.String() + " and does not allow failures"},
		}, got, "the callbacks are not the batch's jobs; b_never never ran")
		require.Equal(t, "failed", pgqtest.Scalar[string](t, db, `SELECT state FROM pgq.batches WHERE id = $1`, batch))

		// The callbacks, and the ends of their jobs, go when the batch is pruned.
		db.Exec(t, `UPDATE pgq.job_batches SET finished_at = now() - interval '30 days' WHERE id = $1`, batch)
		db.Exec(t, `DELETE FROM pgq.failed_jobs WHERE batch_id = $1`, batch)
		db.Exec(t, `SELECT pgq.prune_all('14 days')`)
		require.Empty(t, callbacksOf(t, db, batch))
		require.Zero(t, pgqtest.Scalar[int](t, db, `SELECT count(*)::int FROM pgq.job_ends WHERE batch_id = $1 OR chain_id = $1`, batch))
	})

	t.Run("States", func(t *testing.T) {
		db.Exec(t, `SELECT pgq.define_queue('states')`)
		batch := pgqtest.Scalar[uuid.UUID](t, db, `SELECT pgq.dispatch_batch(
			'[{"job": "s_run"}, {"job": "s_retry", "tries": 3, "backoff": 600}, {"job": "s_ready", "delay": 3600}, {"job": "s_sched", "delay": 3600}]',
			queue => 'states', allow_failures => true)`)
		for _, j := range reserve(t, db, "w", clock(), "states") {
			if pgqtest.Scalar[string](t, db, `SELECT job FROM pgq.jobs WHERE uuid = $1`, j.UUID) == "s_retry" {
				require.False(t, fail(t, db, j, "later", false, clock()).Final)
			}
		}
		db.Exec(t, `UPDATE pgq.jobs SET available_at = now() WHERE job = 's_ready'`)
		require.Equal(t, map[string]string{"s_run": "running", "s_retry": "retrying", "s_ready": "ready", "s_sched": "scheduled"},
			pgqtest.Scalar[map[string]string](t, db, `SELECT jsonb_object_agg(job, state) FROM pgq.batch_jobs WHERE batch_id = $1`, batch))
		require.Equal(t, "running", pgqtest.Scalar[string](t, db, `SELECT state FROM pgq.batches WHERE id = $1`, batch))
		require.Equal(t, 3, pgqtest.Scalar[int](t, db, `SELECT pgq.cancel_batch($1)`, batch))
		require.Equal(t, "cancelling", pgqtest.Scalar[string](t, db, `SELECT state FROM pgq.batches WHERE id = $1`, batch))
		require.Equal(t, 3, pgqtest.Scalar[int](t, db, `SELECT count(*)::int FROM pgq.batch_jobs WHERE batch_id = $1 AND state = 'cancelled'`, batch))
	})
}

// pgq.retry_batch_failed retries every failed job of a batch, a chain's failed step
// too: the batch counts them pending again, the chain resumes, then runs once they all
// succeed; each retry is recorded with the batch. An unknown batch is P0002, a
// cancelled one PQ003, also when the cancel commits while the retry waits for it.
func TestS96RetryBatchFailed(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	batch := pgqtest.Scalar[uuid.UUID](t, db, `SELECT pgq.dispatch_batch(
		'[{"job": "r_ok"}, {"job": "r_bad"}, {"chain": [{"job": "r_step"}, {"job": "r_last"}]}]',
		then_job => 'r_then', catch_job => 'r_catch', allow_failures => true, queue => 'r')`)
	require.Empty(t, pgqtest.Scalar[[]uuid.UUID](t, db, `SELECT coalesce(array_agg(u), '{}') FROM pgq.retry_batch_failed($1) u`, batch),
		"nothing failed: nothing to retry")
	var bad, step reserved
	for _, j := range reserve(t, db, "w", clock(), "r") {
		switch pgqtest.Scalar[string](t, db, `SELECT job FROM pgq.jobs WHERE uuid = $1`, j.UUID) {
		case "r_ok":
			require.True(t, complete(t, db, j))
		case "r_bad":
			bad = j
		case "r_step":
			step = j
		}
	}
	require.True(t, fail(t, db, bad, "boom", false, clock()).Final)
	require.True(t, fail(t, db, step, "boom too", false, clock()).Final)
	require.Equal(t, batchRow{Total: 3, Pending: 2, Failed: 2, Succeeded: 1, Finished: true}, batchState(t, db, batch))
	require.Equal(t, "failed", pgqtest.Scalar[string](t, db, `SELECT state FROM pgq.batches WHERE id = $1`, batch))

	retried := pgqtest.Scalar[[]uuid.UUID](t, db, `SELECT array_agg(u) FROM pgq.retry_batch_failed($1) u`, batch)
	require.ElementsMatch(t, []uuid.UUID{bad.UUID, step.UUID}, retried)
	require.Equal(t, batchRow{Total: 3, Pending: 2, Unfinished: 2, Succeeded: 1}, batchState(t, db, batch))
	require.Equal(t, "running", pgqtest.Scalar[string](t, db, `SELECT state FROM pgq.chains WHERE batch_id = $1`, batch))
	require.Equal(t, 2, pgqtest.Scalar[int](t, db,
		`SELECT count(*)::int FROM pgq.actions WHERE action = 'retry' AND detail = 'with batch ' || $1::text`, batch))

	for range 3 { // the two retried jobs, then the chain's last step
		for _, j := range reserve(t, db, "w", clock(), "r") {
			require.True(t, complete(t, db, j))
		}
	}
	require.Equal(t, "succeeded", pgqtest.Scalar[string](t, db, `SELECT state FROM pgq.batches WHERE id = $1`, batch))
	kinds := []string{}
	for _, c := range callbacksOf(t, db, batch) {
		kinds = append(kinds, c.Kind)
	}
	require.Equal(t, []string{"catch", "then"}, kinds, "catch once, at the first failure; then once every member succeeded")

	_, err := db.Pool.Exec(ctx, `SELECT pgq.retry_batch_failed($1)`, uuid.New())
	require.Equal(t, "P0002", pgCode(err))

	// A cancelled batch refuses; a cancel that commits while the retry waits for the
	// batch's shards rolls the retry back.
	cancelled := pgqtest.Scalar[uuid.UUID](t, db, `SELECT pgq.dispatch_batch('[{"job": "x"}, {"job": "x"}]', allow_failures => true, queue => 'c')`)
	js := reserve(t, db, "w", clock(), "c")
	require.True(t, fail(t, db, js[0], "boom", false, clock()).Final)
	tx, err := db.Pool.Begin(ctx)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `SELECT pgq.cancel_batch($1)`, cancelled)
	require.NoError(t, err)
	var wg sync.WaitGroup
	var retryErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, retryErr = db.Pool.Exec(ctx, `SELECT pgq.retry_batch_failed($1)`, cancelled)
	}()
	require.Eventually(t, func() bool {
		return pgqtest.Scalar[int](t, db, `SELECT count(*)::int FROM pg_stat_activity
			WHERE query LIKE '%retry_batch_failed%' AND wait_event_type = 'Lock'`) == 1
	}, 10*time.Second, 20*time.Millisecond, "the retry waits for the cancel's locks")
	require.NoError(t, tx.Commit(ctx))
	wg.Wait()
	require.Equal(t, "PQ003", pgCode(retryErr), "%v", retryErr)
	require.True(t, pgqtest.Scalar[bool](t, db, `SELECT EXISTS (SELECT FROM pgq.failed_jobs WHERE uuid = $1)`, js[0].UUID),
		"the retry rolled back")
	_, err = db.Pool.Exec(ctx, `SELECT pgq.retry_batch_failed($1)`, cancelled)
	require.Equal(t, "PQ003", pgCode(err))

	_, err = db.WorkerPool.Exec(ctx, `SELECT pgq.retry_batch_failed($1)`, batch)
	require.Equal(t, "42501", pgCode(err), "retry_batch_failed is for admins")
}

// A batch is stalled when a job of it has been ready for longer than its queue's
// retry_after while none of its jobs runs or ended in that time; a chain outside a
// batch when its step's job has. pgq.check reports both, with the fix.
func TestS95StalledChainsAndBatches(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, `SELECT pgq.define_queue('slow', retry_after => 60)`)
	batch := pgqtest.Scalar[uuid.UUID](t, db, `SELECT pgq.dispatch_batch('[{"job": "a"}, {"job": "a"}, {"job": "a"}]', name => 'import', queue => 'slow')`)
	chain := pgqtest.Scalar[uuid.UUID](t, db, `SELECT pgq.dispatch_chain('[{"job": "c"}, {"job": "d"}]', queue => 'slow')`)
	inBatch := pgqtest.Scalar[uuid.UUID](t, db, `SELECT pgq.dispatch_batch('[{"chain": [{"job": "e"}]}]', queue => 'other')`)
	stalled := func() []string {
		return pgqtest.Scalar[[]string](t, db, `SELECT coalesce(array_agg(kind || ' ' || id ORDER BY kind), '{}') FROM pgq.stalled`)
	}
	require.Empty(t, stalled(), "ready for less than retry_after")
	back := func(d string) {
		db.Exec(t, `UPDATE pgq.jobs SET available_at = available_at - $1::interval WHERE reserved_at IS NULL`, d)
	}
	back("50 seconds")
	require.Empty(t, stalled())
	back("20 seconds")
	require.Equal(t, []string{"batch " + batch.String(), "chain " + chain.String()}, stalled(),
		"70 s ready on a queue whose retry_after is 60; the chain in a batch of queue other (90 s) not yet")

	// A live worker serves both queues and handles every name, so check flags only what stalled.
	db.Exec(t, `SELECT pgq.worker_seen('w:1', '{slow,other}', '{a,c,d,e}')`)
	findings := pgqtest.Scalar[[]string](t, db, `SELECT array_agg(object || ' ' || rule || ': ' || detail || ' / ' || fix ORDER BY 1) FROM pgq.check(10)`)
	require.Len(t, findings, 2)
	require.Contains(t, findings[0], "batch "+batch.String()+" (import) batch_stalled: job ")
	require.Contains(t, findings[0], "longer than its retry_after of 60 s, and no job of the batch ran since / run a worker on queue slow")
	require.Contains(t, findings[1], "chain "+chain.String()+" chain_stalled")

	db.Exec(t, `SELECT pgq.pause_queue('slow')`)
	require.Contains(t, pgqtest.Scalar[string](t, db, `SELECT fix FROM pgq.check(10) WHERE rule = 'batch_stalled'`), "pgq.resume_queue('slow')")
	db.Exec(t, `SELECT pgq.resume_queue('slow')`)

	// The batch's jobs run: it moves. Released, they ran but did not end, and wait
	// again; one of them ends: the batch moved lately, and stalls only once its queue's
	// retry_after has passed since.
	js := reserve(t, db, "w", clock(), "slow")
	require.Len(t, js, 4, "the batch's three jobs and the chain's step")
	require.Empty(t, stalled())
	var done reserved
	for _, j := range js {
		if done.UUID == uuid.Nil && pgqtest.Scalar[*uuid.UUID](t, db, `SELECT chain_id FROM pgq.jobs WHERE uuid = $1`, j.UUID) == nil {
			done = j
			continue
		}
		release(t, db, j, 0, clock())
	}
	back("70 seconds")
	require.NotContains(t, stalled(), "batch "+batch.String(), "one of its jobs runs")
	require.Contains(t, stalled(), "chain "+chain.String())
	require.True(t, complete(t, db, done))
	require.NotContains(t, stalled(), "batch "+batch.String(), "a job of it ended just now")
	db.Exec(t, `UPDATE pgq.job_ends SET ended_at = ended_at - interval '61 seconds' WHERE batch_id = $1`, batch)
	require.Contains(t, stalled(), "batch "+batch.String())

	require.Contains(t, stalled(), "batch "+inBatch.String(), "the batch of queue other, after 90 s")
	require.Len(t, stalled(), 3, "its chain stalls with it, not on its own")
}
