package sql_test

// State-machine tests of the fault rules S35-S39, one state change at a time. The
// fault-injection tests that restart and break PostgreSQL are in faults/.

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/pgq-dev/pgq/internal/pgqtest"
)

// S35: a job whose SQL handler's transaction never committed is given back when its
// lease runs out, at most pgq._max_give_backs() times; a Go handler's job counts the
// attempt, and its exhausted message says why.
func TestS35LeaseExpiryGivesBackSQLAttempts(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, `SELECT pgq.define_queue('default', retry_after => 10)`)
	db.Exec(t, `CREATE FUNCTION public.noop(p jsonb) RETURNS void LANGUAGE sql AS ''`)
	db.Exec(t, `SELECT pgq.define_job('sql', handler => 'public.noop', tries => 1)`)
	sqlJob := dispatch(t, db, `'sql'`)
	goJob := dispatch(t, db, `'go', tries => 1`)
	now := clock()

	require.Len(t, reserve(t, db, "w", now), 2)
	for round := 1; round <= 3; round++ { // each lease runs out; the SQL job comes back as attempt 1
		got := reserve(t, db, "w", now.Add(time.Duration(round)*11*time.Second))
		require.Len(t, got, 1, "round %d", round)
		require.Equal(t, sqlJob, got[0].UUID)
		require.Equal(t, 1, got[0].Attempts, "given back")
	}
	require.Equal(t, 3, pgqtest.Scalar[int](t, db, `SELECT interruptions FROM pgq.jobs WHERE uuid = $1`, sqlJob))
	require.Empty(t, reserve(t, db, "w", now.Add(44*time.Second)), "the fourth expiry counts: exhausted")
	require.Contains(t, pgqtest.Scalar[string](t, db, `SELECT exception FROM pgq.attempts WHERE job_uuid = $1 ORDER BY id LIMIT 1`, sqlJob),
		"its SQL handler's transaction did not commit: attempt given back")
	require.Contains(t, pgqtest.Scalar[string](t, db, `SELECT exception FROM pgq.failed_jobs WHERE uuid = $1`, sqlJob),
		"4× lease expired (worker died or froze mid-job); 3× interrupted by infrastructure and given back")

	require.Equal(t, []string{"lease_expired", "exhausted"}, outcomes(t, db, goJob))
	require.Contains(t, pgqtest.Scalar[string](t, db, `SELECT exception FROM pgq.failed_jobs WHERE uuid = $1`, goJob),
		"1× lease expired (worker died or froze mid-job; a Go handler's outcome is then unknown, so the attempt counts)")
}

// S35: pgq.give_back returns interrupted attempts to wait, not counted, up to the cap;
// a stale token is rejected; pgq.unreserve gives back what a lost reserve call took.
func TestS35GiveBackAndUnreserve(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	id := dispatch(t, db, `'job', tries => 1`)
	now := clock()
	for i := 1; i <= 4; i++ {
		j := reserveOne(t, db, now)
		require.Equal(t, 1, j.Attempts)
		rows := pgqtest.Scalar[[]string](t, db, `SELECT array_agg(exception) FROM pgq.give_back(ARRAY[$1::uuid], ARRAY[$2::uuid], 'connection lost', as_of => $3)`,
			j.UUID, j.Token, now)
		if i <= 3 {
			require.Equal(t, []string{"connection lost; attempt given back"}, rows)
		} else {
			require.Equal(t, []string{"connection lost; counted: 3 attempts were given back already"}, rows)
		}
		require.Zero(t, count(t, db, "pgq.give_back(ARRAY[$1::uuid], ARRAY[$2::uuid], 'again', as_of => $3)", j.UUID, j.Token, now), "a stale token")
	}
	require.Equal(t, []string{"interrupted", "interrupted", "interrupted", "interrupted", "exhausted"},
		func() []string { reserve(t, db, "w", now); return outcomes(t, db, id) }())

	// a reserve call whose answer was lost
	lost := dispatch(t, db, `'job', tries => 1`)
	now = clock() // after the dispatch: its available_at is the real time
	call := uuid.New()
	require.Equal(t, 1, pgqtest.Scalar[int](t, db, `SELECT count(*)::int FROM pgq.reserve('w', '{default}', 10, 1, $1, $2)`, now, call))
	require.Equal(t, 0, pgqtest.Scalar[int](t, db, `SELECT pgq.unreserve($1)`, uuid.New()), "another call's id")
	require.Equal(t, 1, pgqtest.Scalar[int](t, db, `SELECT pgq.unreserve($1)`, call))
	j := reserveOne(t, db, now)
	require.Equal(t, lost, j.UUID)
	require.Equal(t, 1, j.Attempts, "given back, and not toward the cap")
	require.Zero(t, pgqtest.Scalar[int](t, db, `SELECT interruptions FROM pgq.jobs WHERE uuid = $1`, lost))
}

// S35: pgq.run_sql_job marks the handler's own exception PQ100 (its SQLSTATE in the
// detail), so anything else that ends the transaction is known not to be the handler's;
// PQ002 says an overlap key is still locked by an earlier handler's transaction.
func TestS35RunSQLJobTellsWhoseFault(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, `CREATE FUNCTION public.boom(p jsonb) RETURNS void LANGUAGE plpgsql AS $$
	BEGIN RAISE EXCEPTION 'vendor 500' USING ERRCODE = '40001'; END $$`)
	db.Exec(t, `SELECT pgq.define_job('boom', handler => 'public.boom', tries => 3, middleware => '[{"without_overlapping": {"key": "k"}}]')`)
	dispatch(t, db, `'boom'`)
	j := reserveOne(t, db, clock())
	_, err := db.Pool.Exec(ctx, `SELECT pgq.run_sql_job($1, $2)`, j.UUID, j.Token)
	require.Equal(t, "PQ100", pgCode(err))
	require.ErrorContains(t, err, "vendor 500")

	holder, err := db.Pool.Begin(ctx)
	require.NoError(t, err)
	defer holder.Rollback(ctx)
	_, err = holder.Exec(ctx, `SELECT pg_advisory_xact_lock(pgq._overlap_lock_id('boom:k'))`)
	require.NoError(t, err)
	_, err = db.Pool.Exec(ctx, `SELECT pgq.run_sql_job($1, $2)`, j.UUID, j.Token)
	require.Equal(t, "PQ002", pgCode(err))
}

// S34: a reserve holds a key's advisory lock while it takes or checks the key, until it
// commits. A SQL handler whose transaction meets that lock waits for it (up to half a
// second) rather than giving its attempt back: here the lock is let go 200 ms after the
// handler started, and the job succeeds at its first attempt.
func TestS34SQLHandlerWaitsForAReserveHoldingItsKey(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, `CREATE TABLE public.runs (n int); CREATE FUNCTION public.rec(p jsonb) RETURNS void LANGUAGE sql AS $$ INSERT INTO public.runs VALUES (1) $$`)
	db.Exec(t, `SELECT pgq.define_job('rec', handler => 'public.rec', middleware => '[{"without_overlapping": {"key": "k"}}]')`)
	dispatch(t, db, `'rec'`)
	j := reserveOne(t, db, clock())

	holder, err := db.Pool.Begin(ctx)
	require.NoError(t, err)
	defer holder.Rollback(ctx)
	_, err = holder.Exec(ctx, `SELECT pg_advisory_xact_lock(pgq._overlap_lock_id('rec:k'))`)
	require.NoError(t, err)
	released := make(chan error, 1)
	go func() {
		time.Sleep(200 * time.Millisecond)
		released <- holder.Rollback(ctx)
	}()
	_, err = db.Pool.Exec(ctx, `SELECT pgq.run_sql_job($1, $2)`, j.UUID, j.Token)
	require.NoError(t, err, "the handler waited for the lock")
	require.NoError(t, <-released)
	require.Equal(t, 1, count(t, db, "public.runs"))
	require.Equal(t, []string{"succeeded"}, pgqtest.Scalar[[]string](t, db,
		`SELECT array_agg(outcome ORDER BY id) FROM pgq.attempts WHERE job_uuid = $1`, j.UUID))
}

// S38: keys have a maximum length, checked at dispatch; a regular expression of
// throttles_exceptions may not use back-references; a huge exception is cut to 64 KiB.
func TestS38OneJobsDataCannotHurtAnother(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	long := strings.Repeat("x", 1001)
	for name, args := range map[string]string{
		"unique key":         fmt.Sprintf(`'j', unique_key => '%s'`, long),
		"debounce key":       fmt.Sprintf(`'j', debounce_key => '%s', debounce_for => '1 second'`, long),
		"overlap by":         fmt.Sprintf(`'j', '{"k": "%s"}', middleware => '[{"without_overlapping": {"by": ["k"]}}]'`, long),
		"overlap key":        fmt.Sprintf(`'j', middleware => '[{"without_overlapping": {"key": "%s"}}]'`, long),
		"circuit by":         fmt.Sprintf(`'j', '{"k": "%s"}', middleware => '[{"throttles_exceptions": {"by": ["k"]}}]'`, long),
		"regex backref":      `'j', middleware => '[{"throttles_exceptions": {"when": "(([a-z]+)\\2)+x"}}]'`,
		"regex too long":     fmt.Sprintf(`'j', middleware => '[{"throttles_exceptions": {"when": "%s"}}]'`, strings.Repeat("a", 513)),
		"regex not a string": `'j', middleware => '[{"throttles_exceptions": {"when": 5}}]'`,
	} {
		_, err := db.Pool.Exec(ctx, `SELECT pgq.dispatch(`+args+`)`)
		require.Equal(t, "22023", pgCode(err), name)
	}
	require.Zero(t, count(t, db, "pgq.jobs"))
	dispatch(t, db, fmt.Sprintf(`'j', '{"k": "%s"}', middleware => '[{"without_overlapping": {"by": ["k"]}}]'`, strings.Repeat("x", 900)))
	dispatch(t, db, `'j', middleware => '[{"throttles_exceptions": {"when": "\\d{3}$"}}]'`)

	db.Exec(t, `DELETE FROM pgq.jobs`)
	dispatch(t, db, `'big'`)
	j := reserveOne(t, db, clock())
	r := fail(t, db, j, strings.Repeat("e", 1<<20), false, clock())
	require.Len(t, r.Exception, 65536)
}

// S39: retention prunes what no longer says anything: ended rate-limit windows, closed
// circuits, expired overlap leases and unique locks, tokens of gone jobs, and old
// turn-aways of live jobs; what is current stays.
func TestS39NothingGrowsWithoutBound(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, `SELECT pgq.define_limit('api', 10, '1 minute')`)
	db.Exec(t, `INSERT INTO pgq.rate_limit_windows VALUES ('api', 'old', now() - interval '2 minutes', 3), ('api', 'current', now(), 3)`)
	db.Exec(t, `INSERT INTO pgq.circuits (key, failures, window_start, decay, max_exceptions) VALUES
	    ('closed', 5, now() - interval '11 minutes', 600, 5), ('open', 5, now(), 600, 5)`)
	db.Exec(t, `INSERT INTO pgq.overlap_locks (key, job_uuid, lease_token, since, expires_at, gen) VALUES
	    ('gone', gen_random_uuid(), gen_random_uuid(), now() - interval '1 minute', now() - interval '1 second', 0),
	    ('held', gen_random_uuid(), gen_random_uuid(), now(), now() + interval '10 seconds', 0)`)
	db.Exec(t, `INSERT INTO pgq.unique_locks (key, owner, job_uuid, expires_at) VALUES
	    ('expired', gen_random_uuid(), gen_random_uuid(), now() - interval '1 second'),
	    ('live', gen_random_uuid(), gen_random_uuid(), now() + interval '1 hour')`)
	db.Exec(t, `INSERT INTO pgq.debounce_tokens (key, token, job_uuid, updated_at) VALUES
	    ('orphan', gen_random_uuid(), gen_random_uuid(), now() - interval '2 hours'),
	    ('recent', gen_random_uuid(), gen_random_uuid(), now())`)
	live := dispatch(t, db, `'live'`)
	db.Exec(t, `INSERT INTO pgq.attempts (job_uuid, job, queue, attempt, finished_at, outcome) VALUES
	    ($1, 'live', 'default', 1, now() - interval '15 days', 'turned_away'),
	    ($1, 'live', 'default', 2, now() - interval '15 days', 'failed'),
	    ($1, 'live', 'default', 3, now(), 'turned_away')`, live)

	require.Equal(t, 6, pgqtest.Scalar[int](t, db, `SELECT pgq.prune_all('14 days')::int`))
	require.Equal(t, []string{"current"}, pgqtest.Scalar[[]string](t, db, `SELECT array_agg(key) FROM pgq.rate_limit_windows`))
	require.Equal(t, []string{"open"}, pgqtest.Scalar[[]string](t, db, `SELECT array_agg(key) FROM pgq.circuits`))
	require.Equal(t, []string{"held"}, pgqtest.Scalar[[]string](t, db, `SELECT array_agg(key) FROM pgq.overlap_locks`))
	require.Equal(t, []string{"live"}, pgqtest.Scalar[[]string](t, db, `SELECT array_agg(key) FROM pgq.unique_locks`))
	require.Equal(t, []string{"recent"}, pgqtest.Scalar[[]string](t, db, `SELECT array_agg(key) FROM pgq.debounce_tokens`))
	require.Equal(t, []string{"failed", "turned_away"}, outcomes(t, db, live), "a live job's old turn-aways go, its other history stays")
}

// S111, S39: a job's mark to run alone goes with the job. pgq.give_back_group marks the
// jobs it gives back and only those: a job whose token no longer holds it is neither
// given back nor marked. A marked job that ends without running alone (cancelled while
// it waits, failed for good, completed) leaves its mark to retention, which deletes it
// as its job is gone; the mark of a live job stays.
func TestS39S111MarksToRunAloneGoWithTheirJobs(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	names := []string{"cancelled", "failed", "completed", "running", "stale"}
	job := map[uuid.UUID]string{}
	for _, name := range names {
		job[dispatch(t, db, `'j', '{}', tries => 1`)] = name
	}
	held := map[string]reserved{}
	for _, j := range reserveAll(t, db) {
		held[job[j.UUID]] = j
	}
	require.Len(t, held, len(names))
	require.True(t, complete(t, db, held["stale"]), "the stale one ended before its group's loss was reported")
	var uuids, tokens []uuid.UUID
	for _, name := range names {
		uuids, tokens = append(uuids, held[name].UUID), append(tokens, held[name].Token)
	}
	require.Equal(t, 4, count(t, db, `pgq.give_back_group($1, $2, 'group lost')`, uuids, tokens))
	marked := `SELECT coalesce(array_agg(a.job_uuid ORDER BY a.job_uuid), '{}') FROM pgq.sql_alone a`
	require.ElementsMatch(t, []uuid.UUID{held["cancelled"].UUID, held["failed"].UUID, held["completed"].UUID, held["running"].UUID},
		pgqtest.Scalar[[]uuid.UUID](t, db, marked), "the jobs given back are marked, the stale one is not")

	require.Equal(t, "cancelled", pgqtest.Scalar[string](t, db, `SELECT pgq.cancel($1)`, held["cancelled"].UUID))
	again := map[string]reserved{}
	for _, j := range reserveAll(t, db) {
		again[job[j.UUID]] = j
	}
	require.Len(t, again, 3)
	require.True(t, fail(t, db, again["failed"], "boom", false, clock()).Final, "failed for good")
	require.True(t, complete(t, db, again["completed"]))
	require.Equal(t, 4, count(t, db, `pgq.sql_alone`), "a mark outlives its job until retention")

	db.Exec(t, `SELECT pgq.prune_all('14 days')`)
	require.Equal(t, []uuid.UUID{held["running"].UUID}, pgqtest.Scalar[[]uuid.UUID](t, db, marked),
		"the marks of ended jobs went, the running job's stays")
}
