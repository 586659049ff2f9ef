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
func (b groupBundle) oneSlotWorker(t *testing.T, opts ...worker.Option) {
	t.Helper()
	b.slotsWorker(t, 1, append([]worker.Option{worker.WithSQLGroupBudget(time.Minute)}, opts...)...)
}

// slotsWorker runs a worker on a pool of its own that leaves it slots SQL slots
// (MaxConns - 3): the SQL jobs it holds beyond them wait for a slot and form groups.
func (b groupBundle) slotsWorker(t *testing.T, slots int32, opts ...worker.Option) {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(b.db.WorkerURL)
	require.NoError(t, err)
	cfg.MaxConns = slots + 3
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	w, err := worker.New(pool, append([]worker.Option{worker.WithLogger(quiet), worker.WithSleep(50 * time.Millisecond)}, opts...)...)
	require.NoError(t, err)
	start(t, w)
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
