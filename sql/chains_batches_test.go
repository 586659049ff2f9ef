package sql_test

// Chains and batches (S70-S76), driven through the worker protocol's SQL functions.

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/pgq-dev/pgq/internal/pgqtest"
)

// reserveAll reserves every ready job of the default queue.
func reserveAll(t *testing.T, db *pgqtest.DB) []reserved {
	t.Helper()
	return reserve(t, db, "w1", clock())
}

// jobsNamed counts live jobs named job.
func jobsNamed(t *testing.T, db *pgqtest.DB, job string) int {
	t.Helper()
	return pgqtest.Scalar[int](t, db, `SELECT count(*)::int FROM pgq.jobs WHERE job = $1`, job)
}

type batchRow struct {
	Total, Pending, Failed, Unfinished, Cancelled, Succeeded int
	Cancelled_                                               bool
	Finished                                                 bool
}

func batchState(t *testing.T, db *pgqtest.DB, id uuid.UUID) batchRow {
	t.Helper()
	var b batchRow
	err := db.Pool.QueryRow(ctx, `
		SELECT total_jobs, pending_jobs, failed_jobs, unfinished_jobs, cancelled_jobs, succeeded_jobs,
		       cancelled_at IS NOT NULL, finished_at IS NOT NULL
		FROM pgq.batches WHERE id = $1`, id).Scan(&b.Total, &b.Pending, &b.Failed, &b.Unfinished, &b.Cancelled,
		&b.Succeeded, &b.Cancelled_, &b.Finished)
	require.NoError(t, err)
	return b
}

// A chain of three: step 2 is queued only by step 1's committed completion; step 2's
// retry keeps the chain; its failure for good stops it (step 3 never queued) and queues
// on_failure once with the chain, the step and the exception; retry_failed resumes it.
func TestS70S71ChainRunsInOrderAndStopsAtFailure(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	chain := pgqtest.Scalar[uuid.UUID](t, db, `SELECT pgq.dispatch_chain(
		'[{"job": "one", "payload": {"n": 1}}, {"job": "two", "payload": {"n": 2}, "tries": 2}, {"job": "three"}]',
		on_failure => 'chain_failed')`)
	require.Equal(t, 1, jobsNamed(t, db, "one"))
	require.Equal(t, 0, jobsNamed(t, db, "two"))

	j := reserveOne(t, db, clock())
	// A completion that rolls back queues nothing (S70).
	tx, err := db.Pool.Begin(ctx)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `SELECT pgq.complete(ARRAY[$1::uuid], ARRAY[$2::uuid])`, j.UUID, j.Token)
	require.NoError(t, err)
	require.NoError(t, tx.Rollback(ctx))
	require.Equal(t, 0, jobsNamed(t, db, "two"))
	require.True(t, complete(t, db, j))
	require.Equal(t, 1, jobsNamed(t, db, "two"))
	require.Equal(t, `{"n": 2}`, pgqtest.Scalar[string](t, db, `SELECT payload::text FROM pgq.jobs WHERE job = 'two'`))

	// Step 2: a retry is the same job, still in the chain.
	j2 := reserveOne(t, db, clock())
	r := fail(t, db, j2, "vendor 500", false, clock())
	require.False(t, r.Final)
	require.Equal(t, "running", pgqtest.Scalar[string](t, db, `SELECT state FROM pgq.chains WHERE id = $1`, chain))
	j2 = reserveOne(t, db, clock())
	r = fail(t, db, j2, "vendor 500 again", false, clock())
	require.True(t, r.Final)

	require.Equal(t, 0, jobsNamed(t, db, "three"))
	var state, exception string
	var step int
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT state, step, exception FROM pgq.chains WHERE id = $1`, chain).
		Scan(&state, &step, &exception))
	require.Equal(t, "failed", state)
	require.Equal(t, 2, step)
	require.Equal(t, "vendor 500 again", exception)
	var payload map[string]any
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT payload FROM pgq.jobs WHERE job = 'chain_failed'`).Scan(&payload))
	require.Equal(t, chain.String(), payload["chain_id"])
	require.EqualValues(t, 2, payload["step"])
	require.Equal(t, "two", payload["job"])
	require.Equal(t, j2.UUID.String(), payload["job_uuid"])
	require.Equal(t, "vendor 500 again", payload["exception"])
	db.Exec(t, `DELETE FROM pgq.jobs WHERE job = 'chain_failed'`)

	// retry_failed resumes the chain at step 2; its success queues step 3.
	db.Exec(t, `SELECT pgq.retry_failed($1)`, j2.UUID)
	require.Equal(t, "running", pgqtest.Scalar[string](t, db, `SELECT state FROM pgq.chains WHERE id = $1`, chain))
	require.True(t, complete(t, db, reserveOne(t, db, clock())))
	require.Equal(t, 1, jobsNamed(t, db, "three"))
	require.True(t, complete(t, db, reserveOne(t, db, clock())))
	require.Equal(t, "succeeded", pgqtest.Scalar[string](t, db, `SELECT state FROM pgq.chains WHERE id = $1`, chain))
	require.Equal(t, 0, pgqtest.Scalar[int](t, db, `SELECT count(*)::int FROM pgq.jobs`))
}

// A step dropped as a unique duplicate fails its chain and queues on_failure (S72),
// whether it is the first step or a later one.
func TestS72DuplicateStepFailsTheChain(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, `SELECT pgq.define_job('sync', unique_for => '1 hour', unique_by => '{account}')`)
	holder := dispatch(t, db, `'sync', '{"account": 7}'`)
	require.NotEqual(t, uuid.Nil, holder)

	first := pgqtest.Scalar[uuid.UUID](t, db, `SELECT pgq.dispatch_chain('[{"job": "sync", "payload": {"account": 7}}, {"job": "b"}]', 'oops')`)
	require.Equal(t, "failed", pgqtest.Scalar[string](t, db, `SELECT state FROM pgq.chains WHERE id = $1`, first))
	require.Contains(t, pgqtest.Scalar[string](t, db, `SELECT exception FROM pgq.chains WHERE id = $1`, first), "DroppedAsDuplicate")

	later := pgqtest.Scalar[uuid.UUID](t, db, `SELECT pgq.dispatch_chain('[{"job": "a"}, {"job": "sync", "payload": {"account": 7}}, {"job": "c"}]', 'oops')`)
	var a reserved
	for _, j := range reserveAll(t, db) {
		if pgqtest.Scalar[string](t, db, `SELECT job FROM pgq.jobs WHERE uuid = $1`, j.UUID) == "a" {
			a = j
		}
	}
	require.True(t, complete(t, db, a))
	var state string
	var step int
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT state, step FROM pgq.chains WHERE id = $1`, later).Scan(&state, &step))
	require.Equal(t, "failed", state)
	require.Equal(t, 2, step)
	require.Equal(t, 0, jobsNamed(t, db, "c"))
	require.Equal(t, 2, pgqtest.Scalar[int](t, db, `SELECT count(*)::int FROM pgq.jobs WHERE job = 'oops'`))
	require.Equal(t, 1, pgqtest.Scalar[int](t, db,
		`SELECT count(*)::int FROM pgq.jobs WHERE job = 'oops' AND payload->>'chain_id' = $1 AND payload->>'exception' LIKE 'DroppedAsDuplicate%'`,
		later.String()))
}

// A batch and a chain dispatched in a transaction that rolls back leave nothing (S73).
func TestS73RolledBackDispatchLeavesNothing(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	tx, err := db.Pool.Begin(ctx)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `SELECT pgq.dispatch_batch('[{"job": "a"}, {"chain": [{"job": "b"}, {"job": "c"}]}]', 'rb', then_job => 'done')`)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `SELECT pgq.dispatch_chain('[{"job": "x"}]')`)
	require.NoError(t, err)
	require.NoError(t, tx.Rollback(ctx))
	require.Equal(t, 0, pgqtest.Scalar[int](t, db, `SELECT (SELECT count(*) FROM pgq.jobs) + (SELECT count(*) FROM pgq.job_batches)
		+ (SELECT count(*) FROM pgq.batch_counts) + (SELECT count(*) FROM pgq.job_chains)`))

	// Bad entries raise 22023 and write nothing.
	for _, bad := range []string{`'[]'`, `'{}'`, `'[{"payload": {}}]'`, `'[{"job": "a", "tries": 2, "colour": "red"}]'`, `'[{"chain": []}]'`} {
		_, err := db.Pool.Exec(ctx, `SELECT pgq.dispatch_batch(`+bad+`)`)
		require.Equal(t, "22023", pgCode(err), bad)
	}
	_, err = db.Pool.Exec(ctx, `SELECT pgq.dispatch_chain('[{"job": "a"}, {"job": ""}]')`)
	require.Equal(t, "22023", pgCode(err))
	require.Equal(t, 0, pgqtest.Scalar[int](t, db, `SELECT count(*)::int FROM pgq.jobs`))
}

// A batch with allow_failures: counters move with every end, catch runs at the first
// failure only, finally once at the end, then not (a member failed); retry_failed
// counts the member pending again, and its success then runs then_job (S73, S75, S76).
// A chain counts as one member. Pruning removes the batch once it is old.
func TestS73S75S76BatchCountersAndCallbacks(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	entries := []string{`{"job": "fails", "payload": {"i": 0}}`, `{"job": "fails", "payload": {"i": 1}}`,
		`{"chain": [{"job": "s1"}, {"job": "s2"}]}`}
	for i := 0; i < 7; i++ {
		entries = append(entries, fmt.Sprintf(`{"job": "ok", "payload": {"i": %d}}`, i))
	}
	batch := pgqtest.Scalar[uuid.UUID](t, db, `SELECT pgq.dispatch_batch($1::jsonb, 'ten', then_job => 'then',
		catch_job => 'catch', finally_job => 'finally', allow_failures => true)`, "["+strings.Join(entries, ",")+"]")
	require.Equal(t, batchRow{Total: 10, Pending: 10, Unfinished: 10}, batchState(t, db, batch))

	var failedJobs []uuid.UUID
	for round := 0; round < 3; round++ {
		for _, j := range reserveAll(t, db) {
			switch pgqtest.Scalar[string](t, db, `SELECT job FROM pgq.jobs WHERE uuid = $1`, j.UUID) {
			case "fails":
				require.True(t, fail(t, db, j, "boom", false, clock()).Final)
				failedJobs = append(failedJobs, j.UUID)
			case "then", "catch", "finally":
			default:
				require.True(t, complete(t, db, j))
			}
		}
	}
	b := batchState(t, db, batch)
	require.Equal(t, batchRow{Total: 10, Pending: 2, Failed: 2, Succeeded: 8, Finished: true}, b)
	require.Equal(t, 1, jobsNamed(t, db, "catch"))
	require.Equal(t, 1, jobsNamed(t, db, "finally"))
	require.Equal(t, 0, jobsNamed(t, db, "then"))
	require.ElementsMatch(t, failedJobs, pgqtest.Scalar[[]uuid.UUID](t, db, `SELECT failed_job_ids FROM pgq.batches WHERE id = $1`, batch))
	var finally map[string]any
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT payload FROM pgq.jobs WHERE job = 'finally'`).Scan(&finally))
	require.Equal(t, batch.String(), finally["batch_id"])
	require.Equal(t, "ten", finally["name"])
	require.EqualValues(t, 2, finally["failed_jobs"])

	// add_to_batch refuses a finished batch.
	_, err := db.Pool.Exec(ctx, `SELECT pgq.add_to_batch($1, '[{"job": "ok"}]')`, batch)
	require.Equal(t, "PQ003", pgCode(err))

	db.Exec(t, `DELETE FROM pgq.jobs WHERE job IN ('catch', 'finally')`)
	for _, id := range failedJobs {
		db.Exec(t, `SELECT pgq.retry_failed($1)`, id)
	}
	require.Equal(t, batchRow{Total: 10, Pending: 2, Unfinished: 2, Succeeded: 8}, batchState(t, db, batch))
	db.Exec(t, `UPDATE pgq.jobs SET job = 'ok' WHERE job = 'fails'`)
	for _, j := range reserveAll(t, db) {
		require.True(t, complete(t, db, j))
	}
	require.Equal(t, batchRow{Total: 10, Succeeded: 10, Finished: true}, batchState(t, db, batch))
	require.Equal(t, 1, jobsNamed(t, db, "then"))
	require.Equal(t, 0, jobsNamed(t, db, "catch")+jobsNamed(t, db, "finally"), "catch and finally ran once already")

	// Retention: a batch that ended long ago goes, with its counters and chains.
	db.Exec(t, `UPDATE pgq.job_batches SET finished_at = now() - interval '30 days'`)
	db.Exec(t, `UPDATE pgq.job_chains SET finished_at = now() - interval '30 days'`)
	db.Exec(t, `SELECT pgq.prune_all('14 days')`)
	require.Equal(t, 0, pgqtest.Scalar[int](t, db, `SELECT (SELECT count(*) FROM pgq.job_batches) + (SELECT count(*) FROM pgq.batch_counts)
		+ (SELECT count(*) FROM pgq.job_chains)`))
}

// Without allow_failures the first failure runs catch and cancels the batch: waiting
// jobs are cancelled, a job reserved later is cancelled at pickup, running ones finish;
// finally runs once, then never (S74, S75).
func TestS74S75FailureCancelsTheBatch(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, `SELECT pgq.define_queue('later')`)
	batch := pgqtest.Scalar[uuid.UUID](t, db, `SELECT pgq.dispatch_batch(
		'[{"job": "fails"}, {"job": "ok"}, {"job": "ok"}, {"job": "ok"}, {"chain": [{"job": "ok"}, {"job": "never"}]}]',
		then_job => 'then', catch_job => 'catch', finally_job => 'finally')`)
	running := reserveAll(t, db)
	require.Len(t, running, 5)
	// A sixth job, waiting when the batch is cancelled, is kept locked by a reserve in
	// flight: the cancel skips it, and its pickup cancels it.
	db.Exec(t, `SELECT pgq.add_to_batch($1, '[{"job": "late"}]')`, batch)
	var failed reserved
	for _, j := range running {
		if pgqtest.Scalar[string](t, db, `SELECT job FROM pgq.jobs WHERE uuid = $1`, j.UUID) == "fails" {
			failed = j
		}
	}
	lock, err := db.Pool.Begin(ctx)
	require.NoError(t, err)
	_, err = lock.Exec(ctx, `SELECT FROM pgq.jobs WHERE job = 'late' FOR UPDATE`)
	require.NoError(t, err)
	require.True(t, fail(t, db, failed, "boom", false, clock()).Final)
	require.NoError(t, lock.Rollback(ctx))
	require.Equal(t, 1, jobsNamed(t, db, "catch"))
	b := batchState(t, db, batch)
	require.True(t, b.Cancelled_)
	require.Equal(t, 1, b.Failed)
	require.Equal(t, 5, b.Unfinished) // 4 running, 1 late waiting

	picked, err := db.Pool.Query(ctx, `SELECT job, pickup::text FROM pgq.reserve('w2', '{default}', 100) WHERE job = 'late'`)
	require.NoError(t, err)
	var job, pickup string
	require.True(t, picked.Next())
	require.NoError(t, picked.Scan(&job, &pickup))
	picked.Close()
	require.Equal(t, "cancelled", pickup)

	for _, j := range running {
		if j != failed {
			require.True(t, complete(t, db, j))
		}
	}
	require.Equal(t, 0, jobsNamed(t, db, "never"), "a cancelled batch queues no next step")
	b = batchState(t, db, batch)
	require.Equal(t, batchRow{Total: 6, Pending: 1, Failed: 1, Cancelled: 2, Succeeded: 3, Cancelled_: true, Finished: true}, b)
	require.Equal(t, 1, jobsNamed(t, db, "finally"))
	require.Equal(t, 0, jobsNamed(t, db, "then"))
	require.Equal(t, "cancelled", pgqtest.Scalar[string](t, db, `SELECT state FROM pgq.chains WHERE batch_id = $1`, batch))
}

// S74: a member failed for good at pickup (its deadline passed) cancels its batch's
// waiting members, among them one picked by the same reserve: that one ends once,
// cancelled, and the batch counts it once.
func TestS74S12MemberFailedAtPickupCancelsASiblingOfItsPickOnce(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	batch := pgqtest.Scalar[uuid.UUID](t, db, `SELECT pgq.dispatch_batch('[{"job": "x"}, {"job": "y"}]', finally_job => 'finally')`)
	y := pgqtest.Scalar[uuid.UUID](t, db, `SELECT uuid FROM pgq.jobs WHERE job = 'y'`)
	db.Exec(t, `UPDATE pgq.jobs SET retry_until = now() - interval '1 hour' WHERE job = 'x'`)
	require.Empty(t, reserveAll(t, db), "x failed for good, y cancelled")
	require.Equal(t, []string{"cancelled"}, pgqtest.Scalar[[]string](t, db,
		`SELECT coalesce(array_agg(outcome ORDER BY id), '{}') FROM pgq.job_ends WHERE job_uuid = $1`, y))
	require.Equal(t, []string{"cancelled"}, outcomes(t, db, y))
	require.Equal(t, batchRow{Total: 2, Pending: 1, Failed: 1, Cancelled: 1, Cancelled_: true, Finished: true}, batchState(t, db, batch),
		"pending counts the failed member, as Laravel's pendingJobs does")
	require.Equal(t, 1, jobsNamed(t, db, "finally"))
}

// S74, S67: a member whose middleware cannot be evaluated fails for good at admission and
// cancels its batch's waiting members, among them others of the same admission: the one
// admitted before it gives back its overlap lease and does not run, the one after it is
// not failed a second time; each ends once.
func TestS74S67MemberFailedAtAdmissionEndsEachSiblingOnce(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	batch := pgqtest.Scalar[uuid.UUID](t, db, `SELECT pgq.dispatch_batch('[
		{"job": "a", "payload": {"k": 1}, "middleware": [{"without_overlapping": {"by": ["k"]}}]},
		{"job": "b", "payload": {"k": 2}, "middleware": [{"without_overlapping": {"by": ["k"]}}]},
		{"job": "c", "payload": {"k": 3}, "middleware": [{"without_overlapping": {"by": ["k"]}}]}]')`)
	db.Exec(t, `UPDATE pgq.jobs SET payload = '{}', middleware_keys = NULL WHERE job IN ('b', 'c')`) // no key: b fails
	require.Empty(t, reserveAll(t, db), "b failed, a and c cancelled with its batch")
	require.Equal(t, []string{"a cancelled", "b failed", "c cancelled"}, pgqtest.Scalar[[]string](t, db, `
		SELECT array_agg(j.job || ' ' || e.outcome ORDER BY j.job)
		FROM pgq.job_ends e JOIN (SELECT DISTINCT job_uuid, job FROM pgq.attempts) j ON j.job_uuid = e.job_uuid
		WHERE e.batch_id = $1`, batch))
	require.Equal(t, 1, count(t, db, `pgq.failed_jobs`), "b only")
	require.Zero(t, count(t, db, `pgq.overlap_locks`), "a's lease given back")
	require.Equal(t, batchRow{Total: 3, Pending: 1, Failed: 1, Cancelled: 2, Cancelled_: true, Finished: true}, batchState(t, db, batch))
}

// pgq.cancel_batch: waiting jobs are cancelled now, running ones finish, then never
// runs and finally runs once at the end (S74). A running job of the batch adds to it
// through the worker role, with its uuid and lease token (S93); an admin cancels.
func TestS74S93CancelBatch(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	batch := pgqtest.Scalar[uuid.UUID](t, db, `SELECT pgq.dispatch_batch('[{"job": "a"}, {"job": "a"}]', then_job => 'then', finally_job => 'finally')`)
	j := reserve(t, db, "w1", clock())
	require.Len(t, j, 2)
	_, err := db.WorkerPool.Exec(ctx, `SELECT pgq.add_to_batch($1, '[{"job": "a"}, {"job": "a"}, {"job": "a"}]', $2, $3)`,
		batch, j[0].UUID, j[0].Token)
	require.NoError(t, err)
	_, err = db.WorkerPool.Exec(ctx, `SELECT pgq.cancel_batch($1)`, batch)
	require.Equal(t, "42501", pgCode(err), "cancel_batch is for admins")

	j = append(j, reserve(t, db, "w1", clock())...)
	require.Len(t, j, 5)
	db.Exec(t, `SELECT pgq.release($1, $2, 0)`, j[1].UUID, j[1].Token)
	db.Exec(t, `SELECT pgq.release($1, $2, 0)`, j[2].UUID, j[2].Token)
	require.Equal(t, 2, pgqtest.Scalar[int](t, db, `SELECT pgq.cancel_batch($1)`, batch))
	require.Equal(t, 3, batchState(t, db, batch).Unfinished)
	require.Equal(t, "cancel", pgqtest.Scalar[string](t, db, `SELECT action FROM pgq.actions ORDER BY id DESC LIMIT 1`))
	for _, r := range []reserved{j[0], j[3], j[4]} {
		require.True(t, complete(t, db, r))
	}
	require.Equal(t, batchRow{Total: 5, Cancelled: 2, Succeeded: 3, Cancelled_: true, Finished: true}, batchState(t, db, batch))
	require.Equal(t, 1, jobsNamed(t, db, "finally"))
	require.Equal(t, 0, jobsNamed(t, db, "then"))
	require.Nil(t, pgqtest.Scalar[*int](t, db, `SELECT pgq.cancel_batch($1)`, uuid.New()))
}

// Eight sessions complete one batch's jobs at the same moment, in many small
// transactions: then and finally are queued exactly once and the counters are exact (S76).
func TestS76ConcurrentCompletionsRunThenOnce(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	const n = 400
	entries := make([]string, n)
	for i := range entries {
		entries[i] = `{"job": "a"}`
	}
	batch := pgqtest.Scalar[uuid.UUID](t, db, `SELECT pgq.dispatch_batch($1::jsonb, then_job => 'then', finally_job => 'finally')`,
		"["+strings.Join(entries, ",")+"]")
	jobs := reserve(t, db, "w1", clock())
	for len(jobs) < n {
		jobs = append(jobs, reserve(t, db, "w1", clock())...)
	}
	start := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			<-start
			for i := w; i < n; i += 8 * 2 {
				uuids := []uuid.UUID{jobs[i].UUID}
				tokens := []uuid.UUID{jobs[i].Token}
				if i+8 < n {
					uuids = append(uuids, jobs[i+8].UUID)
					tokens = append(tokens, jobs[i+8].Token)
				}
				_, err := db.WorkerPool.Exec(ctx, `SELECT pgq.complete($1, $2)`, uuids, tokens)
				if err != nil {
					t.Error(err)
					return
				}
			}
		}(w)
	}
	close(start)
	wg.Wait()
	require.Equal(t, batchRow{Total: n, Succeeded: n, Finished: true}, batchState(t, db, batch))
	require.Equal(t, 1, jobsNamed(t, db, "then"))
	require.Equal(t, 1, jobsNamed(t, db, "finally"))
	var payload json.RawMessage
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT payload FROM pgq.jobs WHERE job = 'then'`).Scan(&payload))
	require.Contains(t, string(payload), `"total_jobs": 400`)
}

// A step that ends without running ends its chain as cancelled, no on_failure, and its
// batch counts it cancelled: superseded by a newer debounced dispatch (S72, S74), or
// cancelled by an operator (S74).
func TestS72S74StepEndingWithoutRunningCancelsTheChain(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	debounced := pgqtest.Scalar[uuid.UUID](t, db, `SELECT pgq.dispatch_chain(
		'[{"job": "push", "payload": {"v": 1}, "debounce_key": "p", "debounce_for": 1}, {"job": "after"}]', 'oops')`)
	dispatch(t, db, `'push', '{"v": 2}', debounce_key => 'p', debounce_for => '1 second'`)
	picked, err := db.Pool.Query(ctx, `SELECT payload::text, pickup::text FROM pgq.reserve('w1', '{default}', 10, 1, now() + interval '5 seconds')`)
	require.NoError(t, err)
	var seen []string
	for picked.Next() {
		var payload string
		var pickup *string
		require.NoError(t, picked.Scan(&payload, &pickup))
		seen = append(seen, fmt.Sprintf("%s %v", payload, pickup != nil && *pickup == "debounced"))
	}
	require.NoError(t, picked.Err())
	require.ElementsMatch(t, []string{`{"v": 1} true`, `{"v": 2} false`}, seen)
	var state, exception string
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT state, exception FROM pgq.chains WHERE id = $1`, debounced).Scan(&state, &exception))
	require.Equal(t, "cancelled", state)
	require.Contains(t, exception, "superseded")

	batch := pgqtest.Scalar[uuid.UUID](t, db, `SELECT pgq.dispatch_batch('[{"chain": [{"job": "x"}, {"job": "y"}]}, {"job": "z"}]',
		finally_job => 'finally', then_job => 'then')`)
	for _, job := range []string{"x", "z"} {
		require.Equal(t, "cancelled", pgqtest.Scalar[string](t, db, `SELECT pgq.cancel(uuid) FROM pgq.jobs WHERE job = $1`, job))
	}
	require.Equal(t, "cancelled", pgqtest.Scalar[string](t, db, `SELECT state FROM pgq.chains WHERE batch_id = $1`, batch))
	require.Equal(t, batchRow{Total: 2, Cancelled: 2, Finished: true}, batchState(t, db, batch))
	require.Equal(t, 1, jobsNamed(t, db, "finally"))
	require.Equal(t, 0, jobsNamed(t, db, "then")+jobsNamed(t, db, "oops")+jobsNamed(t, db, "y")+jobsNamed(t, db, "after"))
}

// A later step that pgq.dispatch would refuse is refused when the chain is dispatched;
// one that can no longer be queued when its turn comes (its class changed) fails the
// chain at that step instead of failing the completion again and again (S72).
func TestS72StepThatCannotBeQueued(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	_, err := db.Pool.Exec(ctx, `SELECT pgq.dispatch_chain('[{"job": "a"}, {"job": "b", "timeout": 0}]')`)
	require.Equal(t, "22023", pgCode(err))
	_, err = db.Pool.Exec(ctx, `SELECT pgq.dispatch_chain('[{"job": "a"}, {"job": "b", "tries": "many"}]')`)
	require.Equal(t, "22P02", pgCode(err))
	require.Equal(t, 0, pgqtest.Scalar[int](t, db, `SELECT (SELECT count(*) FROM pgq.jobs) + (SELECT count(*) FROM pgq.job_chains)`))

	chain := pgqtest.Scalar[uuid.UUID](t, db, `SELECT pgq.dispatch_chain('[{"job": "a"}, {"job": "b", "payload": {}}]', 'oops')`)
	db.Exec(t, `SELECT pgq.define_job('b', middleware => '[{"without_overlapping": {"by": ["k"]}}]')`)
	require.True(t, complete(t, db, reserveOne(t, db, clock())))
	var state, exception string
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT state, exception FROM pgq.chains WHERE id = $1`, chain).Scan(&state, &exception))
	require.Equal(t, "failed", state)
	require.Contains(t, exception, "StepNotQueued: step 2 (b)")
	require.Equal(t, 1, jobsNamed(t, db, "oops"))
	require.Equal(t, 0, jobsNamed(t, db, "b"))
}
