package sql_test

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/pgq-dev/pgq/internal/pgqtest"
)

// S40: pgq.cancel ends a waiting job at once, as cancelled, with its locks; a running job
// is marked for its worker (pgq.cancel_requests), which reports it with pgq.cancelled;
// a marked job whose worker is gone is cancelled at its next pickup. Neither is retried
// nor failed. S42: each cancel is recorded with who did it.
func TestS40S42Cancel(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	waiting := dispatch(t, db, `'mail', '{"to": 1}', unique_key => 'u1', unique_for => '1 hour', delay => '1 hour'`)
	require.Equal(t, "cancelled", pgqtest.Scalar[string](t, db, `SELECT pgq.cancel($1)`, waiting))
	require.Equal(t, []string{"cancelled"}, outcomes(t, db, waiting))
	require.Zero(t, count(t, db, "pgq.unique_locks"), "its unique lock went with it")
	require.Zero(t, count(t, db, "pgq.failed_jobs"))
	require.Nil(t, pgqtest.Scalar[*string](t, db, `SELECT pgq.cancel($1)`, waiting), "no such live job any more")

	running := dispatch(t, db, `'mail', '{"to": 2}', tries => 3`)
	now := clock()
	j := reserveOne(t, db, now)
	require.Equal(t, "cancelling", pgqtest.Scalar[string](t, db, `SELECT pgq.cancel($1)`, running))
	require.Equal(t, []uuid.UUID{j.Token}, pgqtest.Scalar[[]uuid.UUID](t, db, `SELECT array_agg(t) FROM pgq.cancel_requests('w1') t`))
	require.Empty(t, pgqtest.Scalar[[]uuid.UUID](t, db, `SELECT coalesce(array_agg(t), '{}') FROM pgq.cancel_requests('w2') t`))
	require.Equal(t, 1, count(t, db, "pgq.cancelled(ARRAY[$1::uuid], ARRAY[$2::uuid])", j.UUID, j.Token))
	require.Equal(t, []string{"cancelled"}, outcomes(t, db, running))
	require.NotNil(t, pgqtest.Scalar[*time.Time](t, db, `SELECT started_at FROM pgq.attempts WHERE job_uuid = $1`, running), "its handler had started")

	orphan := dispatch(t, db, `'mail', '{"to": 3}', tries => 3`)
	now = clock() // after the dispatch: its available_at is the real time
	j = reserveOne(t, db, now)
	db.Exec(t, `SELECT pgq.cancel($1)`, orphan)
	require.Empty(t, reserve(t, db, "w2", now.Add(91*time.Second)), "the lease ran out; the pickup cancels it instead of running it")
	require.Equal(t, []string{"lease_expired", "cancelled"}, outcomes(t, db, orphan))
	require.Zero(t, count(t, db, "pgq.jobs"))

	require.Equal(t, []string{"cancel", "cancel", "cancel"}, pgqtest.Scalar[[]string](t, db, `SELECT array_agg(action ORDER BY id) FROM pgq.actions`))
	require.Equal(t, "postgres", pgqtest.Scalar[string](t, db, `SELECT DISTINCT actor FROM pgq.actions`), "who did it: the login role")
}

// S41: a paused queue is not reserved from, running jobs aside, until it is resumed;
// S42: both are recorded, as are run now, retry, forget and flush.
func TestS41S42PauseResumeAndTheActionLog(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	dispatch(t, db, `'a', queue => 'mail'`)
	require.True(t, pgqtest.Scalar[bool](t, db, `SELECT pgq.pause_queue('mail')`))
	require.False(t, pgqtest.Scalar[bool](t, db, `SELECT pgq.pause_queue('mail')`), "already paused")
	require.Empty(t, reserve(t, db, "w", clock(), "mail"))
	require.True(t, pgqtest.Scalar[bool](t, db, `SELECT pgq.resume_queue('mail')`))
	j := reserve(t, db, "w", clock(), "mail")
	require.Len(t, j, 1)
	require.True(t, fail(t, db, j[0], "boom", false, clock()).Final)
	db.Exec(t, `SELECT pgq.retry_failed($1)`, j[0].UUID)
	later := dispatch(t, db, `'b', delay => '1 hour'`)
	db.Exec(t, `SELECT pgq.run_now($1)`, later)
	j = reserve(t, db, "w", clock(), "mail")
	require.True(t, fail(t, db, j[0], "boom", false, clock()).Final)
	db.Exec(t, `SELECT pgq.forget_failed($1)`, j[0].UUID)
	db.Exec(t, `SELECT pgq.flush_failed(queue => 'mail')`)
	require.Equal(t, []string{"pause", "pause", "resume", "retry", "run_now", "forget", "flush"},
		pgqtest.Scalar[[]string](t, db, `SELECT array_agg(action ORDER BY id) FROM pgq.actions`))
	require.Equal(t, "0 failed jobs deleted (job any, older than any age)",
		pgqtest.Scalar[string](t, db, `SELECT detail FROM pgq.actions WHERE action = 'flush'`))
}
