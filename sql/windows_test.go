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
