package worker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/pgq-dev/pgq/internal/pgqtest"
	"github.com/pgq-dev/pgq/pgq"
	"github.com/pgq-dev/pgq/worker"
)

// groupBundle is a database with a table that SQL handlers record their runs in: the
// job's n, the transaction that ran it, and the job pgq.job_uuid named (S48).
type groupBundle struct {
	bundle
}

func setupGroups(t *testing.T) groupBundle {
	t.Helper()
	b := groupBundle{setup(t)}
	b.db.Exec(t, `CREATE TABLE public.runs (job text, n int, xact xid8 DEFAULT pg_current_xact_id(),
		job_uuid uuid DEFAULT current_setting('pgq.job_uuid')::uuid)`)
	return b
}

// oneSlotWorker runs a worker whose pool leaves one SQL slot (MaxConns - 3), so that
// every SQL job goes through one connection and the jobs waiting for it form groups.
func (b groupBundle) oneSlotWorker(t *testing.T, opts ...worker.Option) (stop func() error) {
	t.Helper()
	return b.slotsWorker(t, 1, append([]worker.Option{worker.WithSQLGroupBudget(time.Minute)}, opts...)...)
}

// slotsWorker runs a worker on a pool of its own that leaves it slots SQL slots
// (MaxConns - 3): the SQL jobs it holds beyond them wait for a slot and form groups.
func (b groupBundle) slotsWorker(t *testing.T, slots int32, opts ...worker.Option) (stop func() error) {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(b.db.WorkerURL)
	require.NoError(t, err)
	cfg.MaxConns = slots + 3
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	w, err := worker.New(pool, append([]worker.Option{worker.WithLogger(quiet), worker.WithSleep(50 * time.Millisecond)}, opts...)...)
	require.NoError(t, err)
	return start(t, w)
}

// dispatchN dispatches jobs {"n": from} .. {"n": to} of class job in one call and
// returns their uuids by n.
func (b groupBundle) dispatchN(t *testing.T, job string, from, to int) map[int]uuid.UUID {
	t.Helper()
	var payloads []any
	for n := from; n <= to; n++ {
		payloads = append(payloads, json.RawMessage(fmt.Sprintf(`{"n": %d}`, n)))
	}
	ids, err := b.client.DispatchMany(context.Background(), job, payloads)
	require.NoError(t, err)
	byN := map[int]uuid.UUID{}
	for i, id := range ids {
		byN[from+i] = id
	}
	return byN
}

// waitEnded waits until every job of class job has ended (no live job left) and
// attempts ended attempts are recorded.
func (b groupBundle) waitEnded(t *testing.T, job string, attempts int) {
	t.Helper()
	require.Eventually(t, func() bool {
		return pgqtest.Scalar[int](t, b.db, `SELECT count(*)::int FROM pgq.live_jobs WHERE job = $1`, job) == 0 &&
			pgqtest.Scalar[int](t, b.db, `SELECT count(*)::int FROM pgq.attempts WHERE job = $1 AND outcome <> 'interrupted'`, job) >= attempts
	}, time.Minute, 20*time.Millisecond)
}

// S109, S48: a job that raises in a group of 30 is rolled back to its savepoint and
// fails alone with its exception; the other 29 commit, in a group, each having seen its
// own uuid in pgq.job_uuid. (The class's first job runs alone: its duration is unknown.)
func TestS109S48RaisingJobFailsAloneInItsGroup(t *testing.T) {
	t.Parallel()
	b := setupGroups(t)
	b.db.Exec(t, `CREATE FUNCTION public.work(p jsonb) RETURNS void LANGUAGE plpgsql AS $$
		BEGIN
		    INSERT INTO public.runs (job, n) VALUES ('work', (p->>'n')::int);
		    IF (p->>'n')::int = 17 THEN
		        RAISE EXCEPTION 'job 17 raised' USING DETAIL = 'on purpose';
		    END IF;
		END $$`)
	b.db.Exec(t, `SELECT pgq.define_job('work', handler => 'public.work', tries => 1)`)
	b.oneSlotWorker(t)
	b.dispatchN(t, "work", 0, 0)
	b.waitEnded(t, "work", 1)
	ids := b.dispatchN(t, "work", 1, 30)
	b.waitEnded(t, "work", 31)

	require.Contains(t, b.failedException(t, ids[17]), "job 17 raised")
	require.Equal(t, []string{"failed"}, b.outcomes(t, ids[17]))
	require.Zero(t, pgqtest.Scalar[int](t, b.db, `SELECT count(*)::int FROM public.runs WHERE n = 17`), "its effects went with its savepoint")
	for n, id := range ids {
		if n == 17 {
			continue
		}
		require.Equal(t, []string{"succeeded"}, b.outcomes(t, id), "job %d", n)
		require.Equal(t, id, pgqtest.Scalar[uuid.UUID](t, b.db, `SELECT job_uuid FROM public.runs WHERE n = $1`, n),
			"pgq.job_uuid names the job whose savepoint runs")
	}
	require.Equal(t, 29, pgqtest.Scalar[int](t, b.db, `SELECT count(*)::int FROM public.runs WHERE n > 0`))
	groups := pgqtest.Scalar[int](t, b.db, `SELECT count(DISTINCT xact)::int FROM public.runs WHERE n > 0`)
	t.Logf("29 jobs committed in %d transactions", groups)
	require.Less(t, groups, 29, "jobs shared transactions")
}

// S110: a job past its timeout inside a group is cancelled alone: its statement ends,
// its savepoint is rolled back, and the jobs of its group commit.
func TestS110TimeoutInAGroupCancelsThatJobAlone(t *testing.T) {
	t.Parallel()
	b := setupGroups(t)
	b.db.Exec(t, `CREATE FUNCTION public.nap(p jsonb) RETURNS void LANGUAGE plpgsql AS $$
		BEGIN
		    INSERT INTO public.runs (job, n) VALUES ('nap', (p->>'n')::int);
		    IF (p->>'n')::int = 5 THEN
		        PERFORM pg_sleep(30);
		    END IF;
		END $$`)
	b.db.Exec(t, `SELECT pgq.define_job('nap', handler => 'public.nap', tries => 1, timeout => 1)`)
	b.oneSlotWorker(t)
	b.dispatchN(t, "nap", 0, 0)
	b.waitEnded(t, "nap", 1)
	ids := b.dispatchN(t, "nap", 1, 10)
	b.waitEnded(t, "nap", 11)

	require.Equal(t, []string{"timed_out"}, b.outcomes(t, ids[5]))
	require.Contains(t, b.failedException(t, ids[5]), "TimeoutExceeded")
	require.Zero(t, pgqtest.Scalar[int](t, b.db, `SELECT count(*)::int FROM public.runs WHERE n = 5`))
	for n, id := range ids {
		if n != 5 {
			// A job that waited for the slot past its own timeout while job 5 ran was
			// never started, and was given back uncounted (S13, S35).
			require.Equal(t, 1, pgqtest.Scalar[int](t, b.db,
				`SELECT attempt FROM pgq.attempts WHERE job_uuid = $1 AND outcome = 'succeeded'`, id), "job %d", n)
		}
	}
	require.Equal(t, 9, pgqtest.Scalar[int](t, b.db, `SELECT count(*)::int FROM public.runs WHERE n > 0`))
	require.Less(t, pgqtest.Scalar[int](t, b.db, `SELECT count(DISTINCT xact)::int FROM public.runs WHERE n > 0`), 9,
		"the others ran in groups")
}

// S111, S35: a job that takes its group down (here it terminates its own backend) makes
// no other job spend an attempt: every job of the lost group is given back uncounted and
// runs alone next, so the others succeed on attempt 1 and the culprit alone is charged
// once its own give-backs are spent.
func TestS111S35LostGroupGivesBackAndRunsAlone(t *testing.T) {
	t.Parallel()
	b := setupGroups(t)
	b.db.Exec(t, `CREATE FUNCTION public.crash(p jsonb) RETURNS void LANGUAGE plpgsql AS $$
		BEGIN
		    INSERT INTO public.runs (job, n) VALUES ('crash', (p->>'n')::int);
		    IF (p->>'n')::int = 7 THEN
		        PERFORM pg_terminate_backend(pg_backend_pid());
		        PERFORM pg_sleep(5);
		    END IF;
		END $$`)
	b.db.Exec(t, `SELECT pgq.define_job('crash', handler => 'public.crash', tries => 1)`)
	b.oneSlotWorker(t)
	b.dispatchN(t, "crash", 0, 0)
	b.waitEnded(t, "crash", 1)
	ids := b.dispatchN(t, "crash", 1, 12)
	b.waitEnded(t, "crash", 13)

	lost := pgqtest.Scalar[int](t, b.db, `SELECT count(DISTINCT job_uuid)::int FROM pgq.attempts
		WHERE job = 'crash' AND outcome = 'interrupted' AND job_uuid <> $1`, ids[7])
	t.Logf("%d jobs besides the culprit were given back with its group", lost)
	for n, id := range ids {
		if n == 7 {
			continue
		}
		require.Equal(t, 1, pgqtest.Scalar[int](t, b.db, `SELECT count(*)::int FROM public.runs WHERE n = $1`, n),
			"job %d's effects committed once", n)
		require.Equal(t, 1, pgqtest.Scalar[int](t, b.db,
			`SELECT attempt FROM pgq.attempts WHERE job_uuid = $1 AND outcome = 'succeeded'`, id),
			"job %d succeeded on its first counted attempt", n)
	}
	culprit := b.outcomes(t, ids[7])
	require.Equal(t, "interrupted", culprit[0], "the group's loss gave its attempt back too")
	require.Contains(t, b.failedException(t, ids[7]), "interrupted by infrastructure", "run alone, the culprit is charged once its give-backs are spent")
	require.Zero(t, pgqtest.Scalar[int](t, b.db, `SELECT count(*)::int FROM pgq.sql_alone WHERE job_uuid <> $1`, ids[7]),
		"a job that ran alone lost its mark")
}

// S112: the jobs of an isolated class (pgq.define_job(isolated => true), or DefineJob
// with pgq.Isolated()) each run in a transaction of their own, while another class's
// jobs share theirs.
func TestS112IsolatedClassRunsAlone(t *testing.T) {
	t.Parallel()
	b := setupGroups(t)
	b.db.Exec(t, `CREATE FUNCTION public.rec_apart(p jsonb) RETURNS void LANGUAGE sql AS $$
		INSERT INTO public.runs (job, n) VALUES ('apart', (p->>'n')::int) $$`)
	b.db.Exec(t, `CREATE FUNCTION public.rec_together(p jsonb) RETURNS void LANGUAGE sql AS $$
		INSERT INTO public.runs (job, n) VALUES ('together', (p->>'n')::int) $$`)
	described := pgqtest.Scalar[string](t, b.db, `SELECT pgq.define_job('apart', handler => 'public.rec_apart', isolated => true)`)
	require.Contains(t, described, "isolated")
	require.NoError(t, b.client.DefineJob(context.Background(), "together", pgq.Handler("public.rec_together")))
	require.NoError(t, b.client.DefineJob(context.Background(), "apart_go", pgq.Handler("public.rec_apart"), pgq.Isolated()))
	require.True(t, pgqtest.Scalar[bool](t, b.db, `SELECT isolated FROM pgq.job_classes WHERE name = 'apart_go'`))
	require.False(t, pgqtest.Scalar[bool](t, b.db, `SELECT isolated FROM pgq.job_classes WHERE name = 'together'`))

	b.oneSlotWorker(t)
	b.dispatchN(t, "together", 0, 0)
	b.dispatchN(t, "apart", 0, 0)
	b.waitEnded(t, "together", 1)
	b.waitEnded(t, "apart", 1)
	for round := range 3 { // the class seen short first, then refused in a group and remembered
		b.dispatchN(t, "apart", 1+10*round, 10+10*round)
		b.dispatchN(t, "together", 1+10*round, 10+10*round)
		b.waitEnded(t, "apart", 11+10*round)
		b.waitEnded(t, "together", 11+10*round)
	}
	require.Equal(t, 31, pgqtest.Scalar[int](t, b.db, `SELECT count(DISTINCT xact)::int FROM public.runs WHERE job = 'apart'`),
		"each isolated job committed alone")
	require.Zero(t, pgqtest.Scalar[int](t, b.db, `SELECT count(*)::int FROM public.runs a JOIN public.runs o USING (xact)
		WHERE a.job = 'apart' AND o.job <> 'apart'`), "no other job shared an isolated job's transaction")
	require.Less(t, pgqtest.Scalar[int](t, b.db, `SELECT count(DISTINCT xact)::int FROM public.runs WHERE job = 'together' AND n > 0`), 30,
		"the other class's jobs shared transactions")
}

// S113: a lone job's group commits once it has run, whatever the budget (here an hour);
// and a class whose runs take longer than the budget runs alone.
func TestS113LoneJobNotDelayedLongJobsAlone(t *testing.T) {
	t.Parallel()
	b := setupGroups(t)
	b.db.Exec(t, `CREATE FUNCTION public.quick(p jsonb) RETURNS void LANGUAGE sql AS $$
		INSERT INTO public.runs (job, n) VALUES ('quick', (p->>'n')::int) $$`)
	b.db.Exec(t, `SELECT pgq.define_job('quick', handler => 'public.quick')`)
	b.oneSlotWorker(t, worker.WithSQLGroupBudget(time.Hour))
	for n := range 3 { // the first runs alone; the next ones in groups of their own
		b.dispatchN(t, "quick", n, n)
		b.waitEnded(t, "quick", n+1)
	}

	b2 := setupGroups(t)
	b2.db.Exec(t, `CREATE FUNCTION public.slow(p jsonb) RETURNS void LANGUAGE plpgsql AS $$
		BEGIN
		    INSERT INTO public.runs (job, n) VALUES ('slow', (p->>'n')::int);
		    PERFORM pg_sleep(0.05);
		END $$`)
	b2.db.Exec(t, `SELECT pgq.define_job('slow', handler => 'public.slow')`)
	b2.oneSlotWorker(t, worker.WithSQLGroupBudget(10*time.Millisecond))
	b2.dispatchN(t, "slow", 0, 0)
	b2.waitEnded(t, "slow", 1)
	b2.dispatchN(t, "slow", 1, 10)
	b2.waitEnded(t, "slow", 11)
	require.Equal(t, 11, pgqtest.Scalar[int](t, b2.db, `SELECT count(DISTINCT xact)::int FROM public.runs`),
		"each 50 ms job ran alone under a 10 ms budget")
}

// S113: at most WithSQLGroups groups are open at once; the SQL jobs past them wait to
// join one. Each handler holds a shared advisory lock until its transaction ends (its
// group's commit) and counts the transactions that hold it: the groups open at that
// moment. With 8 SQL slots and a backlog, 2 groups at most are open when the worker
// allows 2, and more when it allows 8 (the measure sees what it bounds).
func TestS113AtMostWithSQLGroupsOpenAtOnce(t *testing.T) {
	t.Parallel()
	most := func(groups int) int {
		b := setupGroups(t)
		b.db.Exec(t, `CREATE TABLE public.seen (n int, open int, xact xid8 DEFAULT pg_current_xact_id())`)
		b.db.Exec(t, `CREATE FUNCTION public.count_groups(p jsonb) RETURNS void LANGUAGE plpgsql AS $$
			BEGIN
			    PERFORM pg_advisory_xact_lock_shared(7, 7);
			    PERFORM pg_sleep(0.002);
			    INSERT INTO public.seen (n, open)
			    SELECT (p->>'n')::int, count(DISTINCT l.pid) FROM pg_locks l
			    WHERE l.locktype = 'advisory' AND l.classid = 7 AND l.objid = 7 AND l.objsubid = 2 AND l.granted
			      AND l.database = (SELECT d.oid FROM pg_database d WHERE d.datname = current_database());
			END $$`)
		b.db.Exec(t, `SELECT pgq.define_job('counted', handler => 'public.count_groups')`)
		b.slotsWorker(t, 8, worker.WithSQLGroupBudget(200*time.Millisecond), worker.WithSQLGroups(groups))
		b.dispatchN(t, "counted", 0, 0) // runs alone: its class's duration is unknown
		b.waitEnded(t, "counted", 1)
		b.dispatchN(t, "counted", 1, 400)
		b.waitEnded(t, "counted", 401)
		require.Equal(t, 401, pgqtest.Scalar[int](t, b.db, `SELECT count(*)::int FROM pgq.attempts WHERE outcome = 'succeeded'`))
		n := pgqtest.Scalar[int](t, b.db, `SELECT max(open)::int FROM public.seen WHERE n > 0`)
		t.Logf("WithSQLGroups(%d): at most %d groups open, 400 jobs in %d transactions", groups, n,
			pgqtest.Scalar[int](t, b.db, `SELECT count(DISTINCT xact)::int FROM public.seen WHERE n > 0`))
		return n
	}
	require.LessOrEqual(t, most(2), 2, "never more than two groups open at once")
	require.Greater(t, most(8), 2, "allowed 8, the worker opens more than 2")
}

// setupProbes is a database with three classes of SQL jobs: ov (without_overlapping by
// k), cl (concurrency_limited by k, limit 3) and free (no middleware), all handled by
// public.probe, which measures inside PostgreSQL how many handlers of its key run at
// once. A job {"key", "lim"} takes the first place of its key that no handler holds, in
// any backend, its own included (public.take_place): the advisory lock (key, place),
// held until its transaction ends, which for a grouped job is its group's commit, when
// its lease ends too. So a handler that gets place p found p - 1 others of its key
// running, whichever workers, groups or transactions ran them. It records its place in
// public.held with its effects: a row per committed run. A job of no key records its
// run alone.
func setupProbes(t *testing.T) groupBundle {
	t.Helper()
	b := groupBundle{setup(t)}
	b.db.Exec(t, `
		CREATE TABLE public.held (job text, n int, key int, place int, lim int,
		    xact xid8 DEFAULT pg_current_xact_id(), pid int DEFAULT pg_backend_pid());
		CREATE FUNCTION public.take_place(p_key int) RETURNS int LANGUAGE plpgsql AS $$
		DECLARE
		    v_db    oid := (SELECT d.oid FROM pg_database d WHERE d.datname = current_database());
		    v_place int := 0;
		BEGIN
		    LOOP
		        v_place := v_place + 1;
		        -- pg_locks first: this backend's own locks are granted again by a try
		        IF NOT EXISTS (SELECT FROM pg_locks l
		                       WHERE l.locktype = 'advisory' AND l.database = v_db AND l.objsubid = 2
		                         AND l.classid = p_key::oid AND l.objid = v_place::oid)
		           AND pg_try_advisory_xact_lock(p_key, v_place) THEN
		            RETURN v_place;
		        END IF;
		    END LOOP;
		END $$;
		CREATE FUNCTION public.probe(p jsonb) RETURNS void LANGUAGE plpgsql AS $$
		BEGIN
		    INSERT INTO public.held (job, n, key, place, lim)
		    VALUES (p->>'job', (p->>'n')::int, (p->>'key')::int,
		            CASE WHEN p ? 'key' THEN public.take_place((p->>'key')::int) END, (p->>'lim')::int);
		    PERFORM pg_sleep(0.002);  -- holds its place a while, as a handler that does some work
		END $$;
		SELECT pgq.define_job('ov', handler => 'public.probe', tries => 0,
		                      middleware => '[{"without_overlapping": {"by": ["k"]}}]');
		SELECT pgq.define_job('cl', handler => 'public.probe', tries => 0,
		                      middleware => '[{"concurrency_limited": {"by": ["k"], "limit": 3}}]');
		SELECT pgq.define_job('free', handler => 'public.probe', tries => 0)`)
	return b
}

// dispatchProbes dispatches jobs from .. to of class job for public.probe: job n of key
// base + n % keys (its middleware's k is n % keys) with the limit lim; keys 0: no key.
func (b groupBundle) dispatchProbes(t *testing.T, job string, from, to, keys, base, lim int) {
	t.Helper()
	var payloads []any
	for n := from; n <= to; n++ {
		p := map[string]any{"job": job, "n": n}
		if keys > 0 {
			p["k"], p["key"], p["lim"] = n%keys, base+n%keys, lim
		}
		payloads = append(payloads, p)
	}
	_, err := b.client.DispatchMany(context.Background(), job, payloads)
	require.NoError(t, err)
}

// warmUp runs a job of each class of setupProbes (n 0) and waits for their runs: the
// first job of a class a worker has not seen run runs alone, the next ones in groups.
func (b groupBundle) warmUp(t *testing.T) {
	t.Helper()
	b.dispatchProbes(t, "ov", 0, 0, 1, 1000, 1)
	b.dispatchProbes(t, "cl", 0, 0, 1, 2000, 3)
	b.dispatchProbes(t, "free", 0, 0, 0, 0, 0)
	require.Eventually(t, func() bool {
		return pgqtest.Scalar[int](t, b.db, `SELECT count(*)::int FROM public.held`) == 3
	}, time.Minute, 20*time.Millisecond)
}

// probesRan waits until no job is live and public.held has n rows, then checks that each
// job's run committed once, none failed, and no handler got a place past its key's
// limit: never more handlers of a key ran at once than its middleware allows.
func (b groupBundle) probesRan(t *testing.T, n int) {
	t.Helper()
	require.Eventually(t, func() bool {
		return pgqtest.Scalar[int](t, b.db, `SELECT count(*)::int FROM pgq.live_jobs`) == 0 &&
			pgqtest.Scalar[int](t, b.db, `SELECT count(*)::int FROM public.held`) >= n
	}, 2*time.Minute, 50*time.Millisecond)
	require.Equal(t, n, pgqtest.Scalar[int](t, b.db, `SELECT count(*)::int FROM public.held`))
	require.Equal(t, n, pgqtest.Scalar[int](t, b.db, `SELECT count(DISTINCT (job, n))::int FROM public.held`), "each job's run committed once")
	require.Zero(t, pgqtest.Scalar[int](t, b.db, `SELECT count(*)::int FROM pgq.failed_jobs`))
	require.Empty(t, pgqtest.Scalar[[]string](t, b.db, `
		SELECT coalesce(array_agg(format('%s %s (key %s) began while %s others of its key ran, limit %s; xact %s, backend %s',
		                                 job, n, key, place - 1, lim, xact, pid) ORDER BY job, n), '{}')
		FROM public.held WHERE place > lim`), "handlers of one key ran at once past their limit")
}

// S26, S34, S99, S109: three workers run SQL jobs in groups, each worker's jobs waiting
// for its two SQL slots: jobs that share four without_overlapping keys, jobs that share
// two concurrency_limited keys of limit 3, and jobs of no key. As the handlers measure
// it (setupProbes), a handler of an overlap key never began while another of its key
// ran, and never more than 3 of a limited key ran at once, whether the others ran in
// another worker, in another group or earlier in the same group: a grouped job holds its
// lease, and its key's advisory lock, until its group commits.
func TestS26S34S99S109GroupedJobsKeepOverlapAndConcurrencyAcrossWorkers(t *testing.T) {
	t.Parallel()
	b := setupProbes(t)
	for _, name := range []string{"A", "B", "C"} {
		b.slotsWorker(t, 2, worker.WithName(name), worker.WithConcurrency(16),
			worker.WithSQLGroupBudget(100*time.Millisecond))
	}
	b.warmUp(t)
	// The workers meet each backlog whole (the queue paused while it is dispatched), so
	// that every reserve finds more jobs of each key than their limit; backlogs go on
	// until 3 handlers of a concurrency key ran at once, which timing decides.
	const rounds = 10
	ran := 3
	for backlog := 0; backlog < 5 && pgqtest.Scalar[int](t, b.db, `SELECT max(place) FROM public.held WHERE job = 'cl'`) < 3; backlog++ {
		b.db.Exec(t, `SELECT pgq.pause_queue('default')`)
		for r := rounds * backlog; r < rounds*(backlog+1); r++ { // interleaved, so that the groups mix the classes
			b.dispatchProbes(t, "ov", 12*r+1, 12*r+12, 4, 1000, 1)
			b.dispatchProbes(t, "cl", 9*r+1, 9*r+9, 2, 2000, 3)
			b.dispatchProbes(t, "free", 15*r+1, 15*r+15, 0, 0, 0)
		}
		b.db.Exec(t, `SELECT pgq.resume_queue('default')`)
		ran += rounds * (12 + 9 + 15)
		b.probesRan(t, ran)
	}

	// The measure saw what it is for: the limit of 3 was reached, workers shared the
	// keys, and groups held jobs of the keys together with others.
	require.Equal(t, 3, pgqtest.Scalar[int](t, b.db, `SELECT max(place) FROM public.held WHERE job = 'cl'`),
		"3 handlers of a concurrency key ran at once")
	workers := pgqtest.Scalar[int](t, b.db, `SELECT count(DISTINCT worker)::int FROM pgq.attempts
		WHERE job IN ('ov', 'cl') AND outcome = 'succeeded'`)
	shared := pgqtest.Scalar[int](t, b.db, `SELECT count(*)::int FROM (SELECT xact FROM public.held
		GROUP BY xact HAVING count(*) FILTER (WHERE key IS NOT NULL) > 0 AND count(*) > 1) g`)
	sameKey := pgqtest.Scalar[int](t, b.db, `SELECT count(*)::int FROM (SELECT xact FROM public.held
		WHERE job = 'cl' GROUP BY xact, key HAVING count(*) > 1) g`)
	t.Logf("%d workers ran the jobs of keys; %d groups held a job of a key among others, %d of them 2 or 3 of one concurrency key",
		workers, shared, sameKey)
	require.GreaterOrEqual(t, workers, 2)
	require.Positive(t, shared, "jobs of keys ran in groups")
}

// S26, S99, S109: one worker with one SQL slot, so that every group runs on the same
// connection, one after the other, and the jobs of a key wait for it together. A group
// never runs two jobs of one overlap key, nor more jobs of a concurrency key than its
// limit: the first holds its lease until the group commits, so pgq.reserve admits no
// other of its key meanwhile, however long the group runs on.
func TestS26S99S109OneGroupHoldsOneJobOfAnOverlapKey(t *testing.T) {
	t.Parallel()
	b := setupProbes(t)
	b.oneSlotWorker(t)
	b.warmUp(t)
	const rounds = 6
	for r := range rounds {
		b.dispatchProbes(t, "ov", 8*r+1, 8*r+8, 2, 1000, 1)
		b.dispatchProbes(t, "cl", 6*r+1, 6*r+6, 1, 2000, 3)
		b.dispatchProbes(t, "free", 10*r+1, 10*r+10, 0, 0, 0)
	}
	b.probesRan(t, 3+rounds*(8+6+10))

	require.Zero(t, pgqtest.Scalar[int](t, b.db, `SELECT count(*)::int FROM (SELECT xact FROM public.held
		WHERE job = 'ov' GROUP BY xact, key HAVING count(*) > 1) g`), "a group ran two jobs of one overlap key")
	both := pgqtest.Scalar[int](t, b.db, `SELECT count(*)::int FROM (SELECT xact FROM public.held
		WHERE job = 'ov' GROUP BY xact HAVING count(DISTINCT key) = 2) g`)
	full := pgqtest.Scalar[int](t, b.db, `SELECT count(*)::int FROM (SELECT xact FROM public.held
		WHERE job = 'cl' GROUP BY xact HAVING count(*) = 3) g`)
	t.Logf("%d groups ran a job of each overlap key, %d ran 3 jobs of the concurrency key", both, full)
	require.Positive(t, both, "groups held jobs of both overlap keys")
	require.Positive(t, full, "a group held the concurrency key's 3 places")
}

// S110, S109: a handler that sets statement_timeout for its transaction does not set
// it for the job after it in its group: that job runs under its own timeout. The
// setter runs for a while, so the other job, dispatched meanwhile, runs in the next
// round of its group, in the same transaction.
func TestS110S109HandlerSettingDoesNotOverrideTheNextJobsTimeout(t *testing.T) {
	t.Parallel()
	b := setupGroups(t)
	b.db.Exec(t, `ALTER TABLE public.runs ADD COLUMN timeout text DEFAULT current_setting('statement_timeout')`)
	b.db.Exec(t, `CREATE FUNCTION public.setter(p jsonb) RETURNS void LANGUAGE plpgsql AS $$
		BEGIN
		    PERFORM set_config('statement_timeout', '0', true);
		    INSERT INTO public.runs (job, n) VALUES ('setter', (p->>'n')::int);
		    PERFORM pg_sleep((p->>'secs')::float);
		END $$`)
	b.db.Exec(t, `CREATE FUNCTION public.reader(p jsonb) RETURNS void LANGUAGE plpgsql AS $$
		BEGIN
		    INSERT INTO public.runs (job, n) VALUES ('reader', (p->>'n')::int);
		END $$`)
	b.db.Exec(t, `SELECT pgq.define_job('setter', handler => 'public.setter', timeout => 7)`)
	b.db.Exec(t, `SELECT pgq.define_job('reader', handler => 'public.reader', timeout => 7)`)
	b.oneSlotWorker(t)
	dispatch := func(job string, n int, secs float64) {
		_, err := b.client.Dispatch(context.Background(), job, map[string]any{"n": n, "secs": secs})
		require.NoError(t, err)
	}
	dispatch("setter", 0, 0) // each class's first job runs alone
	dispatch("reader", 0, 0)
	b.waitEnded(t, "setter", 1)
	b.waitEnded(t, "reader", 1)

	dispatch("setter", 1, 0.5)
	time.Sleep(100 * time.Millisecond)
	dispatch("reader", 1, 0)
	b.waitEnded(t, "setter", 2)
	b.waitEnded(t, "reader", 2)
	require.Equal(t, pgqtest.Scalar[string](t, b.db, `SELECT xact::text FROM public.runs WHERE job = 'setter' AND n = 1`),
		pgqtest.Scalar[string](t, b.db, `SELECT xact::text FROM public.runs WHERE job = 'reader' AND n = 1`),
		"the two jobs ran in one group")
	require.Equal(t, "7s", pgqtest.Scalar[string](t, b.db, `SELECT timeout FROM public.runs WHERE job = 'reader' AND n = 1`),
		"the reader ran under its own timeout, not the setter's 0")
}

// S110, S109, S111: a grouped job that runs longer than any one call of its group may
// take (30 s) but within its own timeout still commits with its group: each of the
// group's own calls (the completion, the commit) gets its time, and nothing is given
// back.
func TestS110S109S111LongGroupedJobCommitsWithItsGroup(t *testing.T) {
	t.Parallel()
	b := setupGroups(t)
	b.db.Exec(t, `CREATE FUNCTION public.long(p jsonb) RETURNS void LANGUAGE plpgsql AS $$
		BEGIN
		    INSERT INTO public.runs (job, n) VALUES ('long', (p->>'n')::int);
		    IF (p->>'n')::int = 2 THEN PERFORM pg_sleep(31); END IF;
		END $$`)
	b.db.Exec(t, `SELECT pgq.define_job('long', handler => 'public.long', tries => 1, timeout => 60)`)
	b.oneSlotWorker(t)
	b.dispatchN(t, "long", 0, 0)
	b.waitEnded(t, "long", 1)
	ids := b.dispatchN(t, "long", 1, 3)
	require.Eventually(t, func() bool {
		return pgqtest.Scalar[int](t, b.db, `SELECT count(*)::int FROM pgq.live_jobs WHERE job = 'long'`) == 0
	}, 2*time.Minute, 100*time.Millisecond)
	for n, id := range ids {
		require.Equal(t, []string{"succeeded"}, b.outcomes(t, id), "job %d", n)
	}
	require.Equal(t, 1, pgqtest.Scalar[int](t, b.db, `SELECT count(DISTINCT xact)::int FROM public.runs WHERE n > 0`),
		"the three jobs committed in one group")
}

// S113, S13, S40: a grouped job cancelled after it ran, while its group runs a slower
// job in a later round, waits for its group's commit without being taken for a stuck
// handler: the worker keeps running (a stuck handler would stop it with
// ErrHandlerStuck after its 1 s grace), and both jobs commit.
func TestS113S13S40CancelledGroupedJobWaitsForItsGroup(t *testing.T) {
	t.Parallel()
	b := setupGroups(t)
	b.db.Exec(t, `CREATE FUNCTION public.pair(p jsonb) RETURNS void LANGUAGE plpgsql AS $$
		BEGIN
		    INSERT INTO public.runs (job, n) VALUES ('pair', (p->>'n')::int);
		    PERFORM pg_sleep((p->>'secs')::float);
		END $$`)
	b.db.Exec(t, `SELECT pgq.define_job('pair', handler => 'public.pair', tries => 1)`)
	stop := b.oneSlotWorker(t, worker.WithTimeoutGrace(time.Second))
	dispatch := func(n int, secs float64) uuid.UUID {
		id, err := b.client.Dispatch(context.Background(), "pair", map[string]any{"n": n, "secs": secs})
		require.NoError(t, err)
		return id
	}
	dispatch(0, 0)
	b.waitEnded(t, "pair", 1)
	first := dispatch(1, 0.5)
	time.Sleep(200 * time.Millisecond)
	second := dispatch(2, 5) // waits for the group's next round
	require.Eventually(t, func() bool {
		return pgqtest.Scalar[bool](t, b.db, `SELECT EXISTS (SELECT FROM pg_stat_activity
			WHERE wait_event = 'PgSleep' AND query LIKE '%JobRunSQLGrouped%' AND backend_xid IS NOT NULL
			AND datname = current_database()) AND (SELECT count(*) FROM public.runs WHERE n > 0) = 0`)
	}, 10*time.Second, 20*time.Millisecond, "a grouped job sleeps")
	time.Sleep(time.Second) // the first job has run; the second sleeps in the next round
	b.db.Exec(t, `SELECT pgq.cancel($1)`, first)
	b.waitEnded(t, "pair", 3)
	require.NoError(t, stop(), "the worker ran on")
	require.Equal(t, []string{"succeeded"}, b.outcomes(t, first))
	require.Equal(t, []string{"succeeded"}, b.outcomes(t, second))
	require.Equal(t, 1, pgqtest.Scalar[int](t, b.db, `SELECT count(DISTINCT xact)::int FROM public.runs WHERE n > 0`),
		"both committed in one group")
}
