package sql_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/pgq-dev/pgq/internal/pgqtest"
)

// S82: jobs that go one by one through pgq.reserve (unique until processing) are
// admitted in pick order, so a reserve of the jobs of keys a then b locks their windows
// in that order while another one, holding b's, wants a's. Four workers on jobs whose
// keys come a, b, b, a: no reserve fails with a deadlock, every job within its budget
// runs, and no budget is overspent.
func TestS82NoDeadlockBetweenRateLimitWindows(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, `SELECT pgq.define_limit('api', 1000000, '1 hour')`)
	db.Exec(t, `SELECT pgq.define_limit('tight', 5, '1 hour')`)
	const jobs = 800
	db.Exec(t, `SELECT pgq.dispatch('call', jsonb_build_object('k', (ARRAY['a', 'b', 'b', 'a'])[g % 4 + 1]),
	                unique_key => 'u' || g, unique_until => 'processing',
	                middleware => CASE WHEN g % 100 IN (1, 3) THEN '[{"rate_limited": {"limit": "tight", "by": ["k"]}}]'
	                                   ELSE '[{"rate_limited": {"limit": "api", "by": ["k"]}}]' END::jsonb)
	            FROM generate_series(1, $1) g`, jobs)
	// 'tight': jobs 1, 3, 101, 103, …: eight of key b and eight of key a, five of each run
	const tight, runs = 2 * 5, jobs - 2*3

	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var ran, deadlocks atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for w := range 4 {
		c := session(t, db)
		wg.Go(func() {
			for ran.Load() < runs && ctx.Err() == nil {
				var n int64
				err := c.QueryRow(ctx, `SELECT count(*) FILTER (WHERE pickup IS NULL) FROM pgq.reserve($1, '{default}', 2)`,
					fmt.Sprintf("w%d", w)).Scan(&n)
				var pgErr *pgconn.PgError
				if errors.As(err, &pgErr) && pgErr.Code == "40P01" {
					deadlocks.Add(1)
					continue
				}
				if err != nil {
					errs <- err
					return
				}
				ran.Add(n)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Zero(t, deadlocks.Load(), "reserves that failed with a deadlock")
	require.EqualValues(t, runs, ran.Load(), "every job within its budget ran")
	require.Equal(t, tight, pgqtest.Scalar[int](t, db, `SELECT sum(hits)::int FROM pgq.rate_limit_windows WHERE limit_name = 'tight'`))
	require.Equal(t, jobs-2*8, pgqtest.Scalar[int](t, db, `SELECT sum(hits)::int FROM pgq.rate_limit_windows WHERE limit_name = 'api'`))
}

// S82: a reserve that holds one rate-limit window does not wait for another: the jobs
// of a window another transaction holds are left waiting as they were (no attempt used,
// nothing recorded), on the set-based path and on the one-by-one path, and a later
// reserve runs them.
func TestS82ABusyWindowLeavesItsJobsWaiting(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, `SELECT pgq.define_limit('api', 100, '1 hour')`)
	mw := `middleware => '[{"rate_limited": {"limit": "api", "by": ["k"]}}]'`
	dispatch(t, db, `'call', '{"k": "a"}', queue => 'q1', `+mw)
	dispatch(t, db, `'call', '{"k": "b"}', queue => 'q2', `+mw)
	setBased := dispatch(t, db, `'call', '{"k": "b"}', queue => 'q2', `+mw)
	oneByOne := dispatch(t, db, `'call', '{"k": "b"}', queue => 'q2', unique_key => 'u', unique_until => 'processing', `+mw)

	reserveIn := func(tx pgx.Tx, worker, queue string, max int) int {
		t.Helper()
		var n int
		require.NoError(t, tx.QueryRow(ctx, `SELECT count(*) FROM pgq.reserve($1, ARRAY[$2], $3)`, worker, queue, max).Scan(&n))
		return n
	}
	first, err := session(t, db).Begin(ctx)
	require.NoError(t, err)
	defer first.Rollback(ctx)
	second, err := session(t, db).Begin(ctx)
	require.NoError(t, err)
	defer second.Rollback(ctx)
	require.Equal(t, 1, reserveIn(first, "w1", "q1", 1), "window a")
	require.Equal(t, 1, reserveIn(second, "w2", "q2", 1), "window b")
	_, err = first.Exec(ctx, `SET LOCAL lock_timeout = '5s'`)
	require.NoError(t, err)
	require.Zero(t, reserveIn(first, "w1", "q2", 5), "window b is busy: nothing reserved, nothing waited for")

	for _, id := range []uuid.UUID{setBased, oneByOne} {
		var attempts int
		var reserved bool
		require.NoError(t, first.QueryRow(ctx, `SELECT attempts, reserved_at IS NOT NULL FROM pgq.jobs WHERE uuid = $1`, id).Scan(&attempts, &reserved))
		require.Zero(t, attempts, "no attempt used")
		require.False(t, reserved)
		require.Zero(t, scalarOn[int](t, first, `SELECT count(*)::int FROM pgq.attempts WHERE job_uuid = $1`, id), "nothing recorded")
	}
	require.NoError(t, first.Commit(ctx))
	require.NoError(t, second.Commit(ctx))
	got := reserve(t, db, "w3", clock(), "q2")
	require.Len(t, got, 2)
	require.ElementsMatch(t, []uuid.UUID{setBased, oneByOne}, []uuid.UUID{got[0].UUID, got[1].UUID})
	require.Equal(t, []int32{1, 3}, pgqtest.Scalar[[]int32](t, db, `SELECT array_agg(hits ORDER BY key) FROM pgq.rate_limit_windows`), "the windows of keys a and b")
}

// S82, S39: retention deletes an ended window only when its lock is free: it never waits
// for a reserve that holds it (a reserve may wait for a window retention holds, so
// retention must wait for nothing), and deletes it on a later call.
func TestS39S82RetentionLeavesAWindowAReserveHolds(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, `SELECT pgq.define_limit('api', 100, '1 minute')`)
	dispatch(t, db, `'call', '{"k": "a"}', middleware => '[{"rate_limited": {"limit": "api", "by": ["k"]}}]'`)
	holder, err := session(t, db).Begin(ctx)
	require.NoError(t, err)
	defer holder.Rollback(ctx)
	// a window locked by this open reserve, and (moved back) ended
	require.Equal(t, 1, scalarOn[int](t, holder, `SELECT count(*)::int FROM pgq.reserve('w', '{default}', 1)`))
	_, err = holder.Exec(ctx, `UPDATE pgq.rate_limit_windows SET window_start = now() - interval '1 hour'`)
	require.NoError(t, err)

	pruner := session(t, db)
	_, err = pruner.Exec(ctx, `SET lock_timeout = '5s'`)
	require.NoError(t, err)
	var pruned int64
	require.NoError(t, pruner.QueryRow(ctx, `SELECT pgq.prune_all('1 day')`).Scan(&pruned))
	require.Zero(t, pruned, "the held window stays, and retention did not wait for it")
	require.NoError(t, holder.Commit(ctx))
	require.NoError(t, pruner.QueryRow(ctx, `SELECT pgq.prune_all('1 day')`).Scan(&pruned))
	require.EqualValues(t, 1, pruned)
	require.Zero(t, count(t, db, "pgq.rate_limit_windows"))
}

// S83: a limit dropped and defined again, thirty times, while four workers reserve its
// jobs, on the set-based path and the one-by-one path (unique until processing): no
// reserve fails (before, the cascade of a DELETE locked the windows in no order, and a
// reserve creating a window as the limit went failed its foreign key), no drop or
// definition fails, and every job is admitted: while the limit is gone its jobs have
// no budget to keep, and the budget of 1,000,000 is never reached.
func TestS83ALimitDroppedWhileReservesUseIt(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, `SELECT pgq.define_limit('api', 1000000, '1 hour')`)
	const jobs = 1200
	db.Exec(t, `SELECT pgq.dispatch('call', jsonb_build_object('k', 'k' || g % 7),
	                middleware => '[{"rate_limited": {"limit": "api", "by": ["k"]}}]')
	            FROM generate_series(1, $1) g`, jobs*2/3)
	db.Exec(t, `SELECT pgq.dispatch('call', jsonb_build_object('k', 'k' || g % 7),
	                unique_key => 'u' || g, unique_until => 'processing',
	                middleware => '[{"rate_limited": {"limit": "api", "by": ["k"]}}]')
	            FROM generate_series(1, $1) g`, jobs/3)
	require.Equal(t, jobs, count(t, db, "pgq.jobs"))

	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var ran atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 5)
	for w := range 4 {
		c := session(t, db)
		wg.Go(func() {
			for ran.Load() < jobs && ctx.Err() == nil {
				var n int64
				if err := c.QueryRow(ctx, `SELECT count(*) FILTER (WHERE pickup IS NULL) FROM pgq.reserve($1, '{default}', 5)`,
					fmt.Sprintf("w%d", w)).Scan(&n); err != nil {
					if ctx.Err() == nil { // (else the test's time is up: reported below)
						errs <- fmt.Errorf("reserve: %w", err)
					}
					return
				}
				ran.Add(n)
			}
		})
	}
	dropper := session(t, db)
	drops := 0
	for drops < 30 && ran.Load() < jobs && ctx.Err() == nil {
		var dropped bool
		if err := dropper.QueryRow(ctx, `SELECT pgq.drop_limit('api')`).Scan(&dropped); err != nil {
			errs <- fmt.Errorf("drop: %w", err)
			break
		}
		require.True(t, dropped)
		drops++
		if _, err := dropper.Exec(ctx, `SELECT pgq.define_limit('api', 1000000, '1 hour')`); err != nil {
			errs <- fmt.Errorf("define: %w", err)
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Positive(t, drops)
	t.Logf("%d drops while %d jobs were reserved; left: %s; attempts: %s", drops, ran.Load(),
		pgqtest.Scalar[string](t, db, `SELECT coalesce(string_agg(format('%s reserved=%s due=%s', n, r, d), '; '), '') FROM (SELECT count(*) n, reserved_at IS NOT NULL r, available_at <= now() d FROM pgq.jobs GROUP BY 2, 3) s`),
		pgqtest.Scalar[string](t, db, `SELECT coalesce(string_agg(format('%s %s', n, o), '; '), '') FROM (SELECT count(*) n, outcome || ' ' || coalesce(left(exception, 80), '') o FROM pgq.attempts GROUP BY 2) s`))
	require.EqualValues(t, jobs, ran.Load(), "every job admitted")
	require.Zero(t, count(t, db, "pgq.jobs WHERE reserved_at IS NULL"))
}

// S83: pgq.drop_limit refuses (2BP01, naming them) while a job class, a schedule or a
// running chain names the limit; once nothing does, it drops it (false the second
// time). A job dispatched with it before is then admitted with no window, a dispatch
// naming it is refused, and a window a reserve held at the drop is left for retention,
// which deletes it once the reserve has ended.
func TestS83DropLimitRefusedWhileNamed(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, `SELECT pgq.define_limit('api', 1, '1 hour')`)
	mw := `'[{"rate_limited": {"limit": "api", "by": ["k"]}}]'`
	refused := func(by string) {
		t.Helper()
		_, err := db.Pool.Exec(ctx, `SELECT pgq.drop_limit('api')`)
		require.Equal(t, "2BP01", pgCode(err), "%v", err)
		require.ErrorContains(t, err, "limit 'api' is named by "+by)
	}

	db.Exec(t, `SELECT pgq.define_job('sync', middleware => `+mw+`)`)
	refused("job class sync")
	db.Exec(t, `SELECT pgq.define_job('sync')`)
	db.Exec(t, `SELECT pgq.schedule('nightly', '@daily', 'call', '{"k": "s"}', middleware => `+mw+`)`)
	refused("schedule nightly")
	db.Exec(t, `SELECT pgq.unschedule('nightly')`)
	chain := pgqtest.Scalar[uuid.UUID](t, db, `SELECT pgq.dispatch_chain(jsonb_build_array(
	    '{"job": "first", "queue": "chains"}'::jsonb, jsonb_build_object('job', 'second', 'payload', '{"k": "c"}'::jsonb, 'middleware', `+mw+`::jsonb)))`)
	refused("chain " + chain.String())
	require.Equal(t, "cancelled", pgqtest.Scalar[string](t, db, `SELECT pgq.cancel(job_uuid) FROM pgq.job_chains WHERE id = $1`, chain))
	require.Equal(t, "cancelled", pgqtest.Scalar[string](t, db, `SELECT state FROM pgq.job_chains WHERE id = $1`, chain))

	// Windows of keys a (free at the drop) and b (held by an open reserve).
	for _, k := range []string{"a", "b", "b"} {
		dispatch(t, db, `'call', '{"k": "`+k+`"}', tries => 3, middleware => `+mw)
	}
	require.Len(t, runnable(reserveOn(t, session(t, db), "w1", clock())), 2, "key a's job, and key b's first; b's second is over budget")
	holder, err := session(t, db).Begin(ctx)
	require.NoError(t, err)
	defer holder.Rollback(ctx)
	keyB := pgqtest.Scalar[string](t, db, `SELECT key FROM pgq.rate_limit_windows WHERE key LIKE '%b%'`)
	_, err = holder.Exec(ctx, `SELECT pg_advisory_xact_lock((pgq._window_lock_ids('{api}', ARRAY[$1]))[1])`, keyB)
	require.NoError(t, err)

	require.True(t, pgqtest.Scalar[bool](t, db, `SELECT pgq.drop_limit('api')`))
	require.False(t, pgqtest.Scalar[bool](t, db, `SELECT pgq.drop_limit('api')`))
	require.Equal(t, []string{keyB}, pgqtest.Scalar[[]string](t, db, `SELECT array_agg(key ORDER BY key) FROM pgq.rate_limit_windows`),
		"the window whose lock is held is left; a's is deleted")
	db.Exec(t, `UPDATE pgq.jobs SET available_at = now() WHERE reserved_at IS NULL`) // (its turn-away moved back)
	require.Len(t, runnable(reserveOn(t, session(t, db), "w3", clock())), 1, "b's second job: over budget before the drop, admitted now")
	_, err = db.Pool.Exec(ctx, `SELECT pgq.dispatch('call', '{"k": "c"}', middleware => `+mw+`)`)
	require.Equal(t, "22023", pgCode(err), "%v", err)

	require.Zero(t, pgqtest.Scalar[int64](t, db, `SELECT pgq.prune_all('1 day')`), "b's window is still held")
	require.NoError(t, holder.Commit(ctx))
	require.EqualValues(t, 1, pgqtest.Scalar[int64](t, db, `SELECT pgq.prune_all('1 day')`))
	require.Zero(t, count(t, db, "pgq.rate_limit_windows"))
}

// S83: a reserve counts only in windows whose lock it holds. A limit dropped and
// defined again while a reserve admits its jobs (after the reserve looked up its
// windows, before it counted) admits them with no window this once: the reserve
// neither waits for nor writes a leftover window that another transaction holds, so it
// and a drop cannot deadlock over the windows they meet in different orders.
func TestS83AReserveWritesOnlyTheWindowsItLocked(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, `SELECT pgq.define_limit('api', 1, '1 hour')`)
	mw := `'[{"rate_limited": {"limit": "api", "by": ["k"]}}]'`
	dispatch(t, db, `'call', '{"k": "a"}', middleware => `+mw)
	require.Len(t, runnable(reserveOn(t, session(t, db), "w1", clock())), 1)
	dispatch(t, db, `'call', '{"k": "a"}', middleware => `+mw)

	// Another transaction holds key a's window (its lock and its row), and the drop
	// leaves that window.
	holder, err := session(t, db).Begin(ctx)
	require.NoError(t, err)
	defer holder.Rollback(ctx)
	_, err = holder.Exec(ctx, `SELECT pg_advisory_xact_lock((pgq._window_lock_ids(ARRAY[limit_name], ARRAY[key]))[1]) FROM pgq.rate_limit_windows`)
	require.NoError(t, err)
	_, err = holder.Exec(ctx, `SELECT FROM pgq.rate_limit_windows FOR UPDATE`)
	require.NoError(t, err)
	require.True(t, pgqtest.Scalar[bool](t, db, `SELECT pgq.drop_limit('api')`))

	// The reserve stops at its windows' INSERT (a statement trigger waits at a gate)
	// until the limit is defined again.
	db.Exec(t, `CREATE FUNCTION public.gate() RETURNS trigger LANGUAGE plpgsql AS $$
	            BEGIN PERFORM pg_advisory_lock_shared(4242); PERFORM pg_advisory_unlock_shared(4242); RETURN NULL; END $$`)
	db.Exec(t, `CREATE TRIGGER gate BEFORE INSERT ON pgq.rate_limit_windows FOR EACH STATEMENT EXECUTE FUNCTION public.gate()`)
	gate := session(t, db)
	_, err = gate.Exec(ctx, `SELECT pg_advisory_lock(4242)`)
	require.NoError(t, err)
	reserver := session(t, db)
	_, err = reserver.Exec(ctx, `SET lock_timeout = '5s'`)
	require.NoError(t, err)
	type result struct {
		runnable int
		err      error
	}
	done := make(chan result, 1)
	go func() {
		var r result
		r.err = reserver.QueryRow(ctx, `SELECT count(*) FILTER (WHERE pickup IS NULL) FROM pgq.reserve('w2', '{default}', 10)`).Scan(&r.runnable)
		done <- r
	}()
	require.Eventually(t, func() bool {
		return pgqtest.Scalar[bool](t, db, `SELECT EXISTS (SELECT FROM pg_locks WHERE locktype = 'advisory' AND objid = 4242 AND NOT granted)`)
	}, 10*time.Second, 10*time.Millisecond, "the reserve reaches the gate")
	db.Exec(t, `SELECT pgq.define_limit('api', 5, '1 hour')`)
	_, err = gate.Exec(ctx, `SELECT pg_advisory_unlock(4242)`)
	require.NoError(t, err)

	r := <-done
	require.NoError(t, r.err, "the reserve waited for no window it had not locked")
	require.Equal(t, 1, r.runnable, "admitted: the limit was not there when the reserve took its windows")
	require.NoError(t, holder.Commit(ctx))
	require.EqualValues(t, 1, pgqtest.Scalar[int64](t, db, `SELECT hits FROM pgq.rate_limit_windows`), "the leftover window is unwritten")
}
