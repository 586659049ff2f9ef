package sql_test

// S77: a worker's session reserves from its low-water marks. These tests hold one
// session per worker (the marks live in the session) and try every way a waiting job
// can appear below a mark; then, with a held xmin, they check that a reserve's cost
// stays flat however many finished jobs vacuum cannot remove.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pgq-dev/pgq/internal/pgqtest"
)

// pick reserves up to max jobs of queues on the session c (as_of at, or now when at
// is zero; tries unlimited) and returns the uuids of the jobs to run.
func pick(t *testing.T, c interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}, max int, at time.Time, queues ...string) []uuid.UUID {
	t.Helper()
	if len(queues) == 0 {
		queues = []string{"default"}
	}
	var asOf *time.Time
	if !at.IsZero() {
		asOf = &at
	}
	rows, err := c.Query(ctx, `SELECT uuid FROM pgq.reserve('w', $1, $2, 0, $3) WHERE pickup IS NULL`, queues, max, asOf)
	require.NoError(t, err)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	require.NoError(t, err)
	return ids
}

// dispatchOn dispatches one job named job on c and returns its uuid.
func dispatchOn(t *testing.T, c interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, job string, priority int) uuid.UUID {
	t.Helper()
	var id uuid.UUID
	require.NoError(t, c.QueryRow(ctx, `SELECT pgq.dispatch($1, '{}', priority => $2)`, job, priority).Scan(&id))
	return id
}

// hasMarks reports whether the session c keeps marks (for S77's own check that the
// tests below run in that mode, not in the first call's walk).
func hasMarks(t *testing.T, c *pgx.Conn, queue string) bool {
	t.Helper()
	var ok bool
	require.NoError(t, c.QueryRow(ctx,
		`SELECT coalesce(nullif(current_setting('pgq.reserve_marks', true), '')::jsonb -> 'queues' -> $1 -> 'p' IS NOT NULL, false)`,
		queue).Scan(&ok))
	return ok
}

func TestS77NoWaitingJobIsPassedOver(t *testing.T) {
	t.Parallel()

	// A producer's transaction began before jobs that were reserved and committed
	// after them: its job lies below the session's mark.
	t.Run("LongProducerTransaction", func(t *testing.T) {
		t.Parallel()
		db := pgqtest.New(t)
		s := session(t, db)
		require.Empty(t, pick(t, s, 10, time.Time{}))
		require.True(t, hasMarks(t, s, "default"))

		long, err := session(t, db).Begin(ctx)
		require.NoError(t, err)
		defer long.Rollback(ctx)
		x := dispatchOn(t, long, "x", 0)
		time.Sleep(5 * time.Millisecond) // y and z are dispatched later
		y := dispatchOn(t, db.Pool, "y", 0)
		z := dispatchOn(t, db.Pool, "z", 0)
		require.Equal(t, []uuid.UUID{y}, pick(t, s, 1, time.Time{}))
		require.NoError(t, long.Commit(ctx))
		require.ElementsMatch(t, []uuid.UUID{x, z}, pick(t, s, 10, time.Time{}), "x committed after the mark passed its place")
	})

	// Another session's reserve locked the first job and rolled back: the mark stayed at it.
	t.Run("RolledBackReserve", func(t *testing.T) {
		t.Parallel()
		db := pgqtest.New(t)
		s := session(t, db)
		require.Empty(t, pick(t, s, 10, time.Time{}))
		a := dispatchOn(t, db.Pool, "a", 0)
		b := dispatchOn(t, db.Pool, "b", 0)
		other, err := session(t, db).Begin(ctx)
		require.NoError(t, err)
		require.Equal(t, []uuid.UUID{a}, pick(t, other, 1, time.Time{}))
		require.Equal(t, []uuid.UUID{b}, pick(t, s, 1, time.Time{}), "a is locked: skipped")
		require.NoError(t, other.Rollback(ctx))
		require.Equal(t, []uuid.UUID{a}, pick(t, s, 10, time.Time{}))
	})

	// Leases that ended come back at their old place, below the mark, and are
	// reserved by the call that swept them.
	t.Run("ExpiredLease", func(t *testing.T) {
		t.Parallel()
		db := pgqtest.New(t)
		s := session(t, db)
		at := clock().Add(time.Minute) // past b's and c's dispatch, however slow the machine
		a := dispatchOn(t, db.Pool, "a", 0)
		require.Equal(t, []uuid.UUID{a}, pick(t, s, 1, at))
		b := dispatchOn(t, db.Pool, "b", 0)
		c := dispatchOn(t, db.Pool, "c", 0)
		require.Equal(t, []uuid.UUID{b}, pick(t, s, 1, at))
		require.True(t, hasMarks(t, s, "default"))
		require.ElementsMatch(t, []uuid.UUID{a, b, c}, pick(t, s, 10, at.Add(2*time.Hour)))
		require.Equal(t, []string{"lease_expired"}, outcomes(t, db, a))
	})

	// A job released by another session (a Go worker's report, on another connection).
	t.Run("ReleasedElsewhere", func(t *testing.T) {
		t.Parallel()
		db := pgqtest.New(t)
		s := session(t, db)
		require.Empty(t, pick(t, s, 10, time.Time{}))
		a := dispatchOn(t, db.Pool, "a", 0)
		dispatchOn(t, db.Pool, "b", 0)
		var token uuid.UUID
		require.NoError(t, s.QueryRow(ctx, `SELECT lease_token FROM pgq.reserve('w', '{default}', 1)`).Scan(&token))
		db.Exec(t, `SELECT pgq.release($1, $2, 0)`, a, token)
		require.Len(t, pick(t, s, 10, clock()), 2, "b, and a again")
	})

	// A job of a higher priority than any the session has a mark for comes first.
	t.Run("NewPriority", func(t *testing.T) {
		t.Parallel()
		db := pgqtest.New(t)
		s := session(t, db)
		dispatchOn(t, db.Pool, "low", 0)
		dispatchOn(t, db.Pool, "low", 0)
		require.Len(t, pick(t, s, 1, time.Time{}), 1)
		high := dispatchOn(t, db.Pool, "high", 5)
		require.Equal(t, []uuid.UUID{high}, pick(t, s, 1, time.Time{}))
	})

	// Reserves inside a longer transaction that dispatches too: the transaction's own
	// rows, written before and after a reserve's snapshot.
	t.Run("OwnTransaction", func(t *testing.T) {
		t.Parallel()
		db := pgqtest.New(t)
		s := session(t, db)
		require.Empty(t, pick(t, s, 10, time.Time{}))
		tx, err := s.Begin(ctx)
		require.NoError(t, err)
		defer tx.Rollback(ctx)
		y := dispatchOn(t, tx, "y", 0)                                         // the transaction has an id before the next snapshot,
		db.Exec(t, `SELECT pgq.dispatch('elsewhere', '{}', queue => 'other')`) // and a later one ends before it
		require.Equal(t, []uuid.UUID{y}, pick(t, tx, 10, time.Time{}))
		z := dispatchOn(t, tx, "z", 0)
		require.Equal(t, []uuid.UUID{z}, pick(t, tx, 10, time.Time{}))
		require.NoError(t, tx.Commit(ctx))
		w := dispatchOn(t, db.Pool, "w", 0)
		require.Equal(t, []uuid.UUID{w}, pick(t, s, 10, time.Time{}))
	})

	// A failed transaction takes its marks with it; a new list of queues starts over.
	t.Run("RollbackAndQueueLists", func(t *testing.T) {
		t.Parallel()
		db := pgqtest.New(t)
		s := session(t, db)
		a := dispatchOn(t, db.Pool, "a", 0)
		tx, err := s.Begin(ctx)
		require.NoError(t, err)
		require.Equal(t, []uuid.UUID{a}, pick(t, tx, 10, time.Time{}))
		require.NoError(t, tx.Rollback(ctx))
		require.Equal(t, []uuid.UUID{a}, pick(t, s, 10, time.Time{}), "the reservation rolled back, and the marks with it")
		require.Empty(t, pick(t, s, 10, time.Time{}, "other"))
		require.False(t, hasMarks(t, s, "default"), "marks are kept for the queues of the last call only")
		b := pgqtest.Scalar[uuid.UUID](t, db, `SELECT pgq.dispatch('b', '{}')`)
		require.Equal(t, []uuid.UUID{b}, pick(t, s, 10, time.Time{}))
	})
}

// Several worker sessions reserve while producers dispatch in transactions of every
// length (some with priorities and delays), jobs fail and retry or are released, one
// worker's reserves roll back now and then, and an idle transaction holds the xmin
// horizon: every job runs, none twice, and nothing is left waiting.
func TestS77ConcurrentSessionsFindEveryJob(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	hold, err := session(t, db).Begin(ctx)
	require.NoError(t, err)
	defer hold.Rollback(ctx)
	require.NoError(t, hold.QueryRow(ctx, `SELECT pg_current_xact_id()`).Scan(new(any)))

	var dispatched atomic.Int64
	stop := make(chan struct{})
	var producers sync.WaitGroup
	for p := range 3 {
		producers.Add(1)
		go func() {
			defer producers.Done()
			c := session(t, db)
			r := rand.New(rand.NewPCG(uint64(p), 77))
			for {
				select {
				case <-stop:
					return
				default:
				}
				tx, err := c.Begin(ctx)
				if !assertNoError(t, err) {
					return
				}
				n := 1 + r.IntN(20)
				_, err = tx.Exec(ctx, `SELECT pgq.dispatch_many('j', array_agg(jsonb_build_object('i', i)),
				    priority => $2, delay => make_interval(secs => $3)) FROM generate_series(1, $1) i`, n, r.IntN(3)-1, r.IntN(2))
				if !assertNoError(t, err) {
					return
				}
				time.Sleep(time.Duration(r.IntN(40)) * time.Millisecond) // long transactions, committing out of order
				if !assertNoError(t, tx.Commit(ctx)) {
					return
				}
				dispatched.Add(int64(n))
			}
		}()
	}

	done := make(chan uuid.UUID, 100000)
	var workers sync.WaitGroup
	quit := make(chan struct{})
	for w := range 4 {
		workers.Add(1)
		go func() {
			defer workers.Done()
			c := session(t, db)
			r := rand.New(rand.NewPCG(uint64(w), 7))
			for {
				select {
				case <-quit:
					return
				default:
				}
				tx, err := c.Begin(ctx)
				if !assertNoError(t, err) {
					return
				}
				rows, err := tx.Query(ctx, `SELECT uuid, lease_token, attempts FROM pgq.reserve($1, '{default}', 25, 0) WHERE pickup IS NULL`, fmt.Sprint("w", w))
				if !assertNoError(t, err) {
					return
				}
				type job struct {
					id, token uuid.UUID
					attempts  int
				}
				jobs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (job, error) {
					var j job
					return j, r.Scan(&j.id, &j.token, &j.attempts)
				})
				if !assertNoError(t, err) {
					return
				}
				if w == 0 && r.IntN(4) == 0 { // a reserve whose transaction rolls back
					assertNoError(t, tx.Rollback(ctx))
					continue
				}
				if !assertNoError(t, tx.Commit(ctx)) {
					return
				}
				if len(jobs) == 0 {
					time.Sleep(5 * time.Millisecond)
					continue
				}
				for _, j := range jobs {
					switch {
					case j.attempts == 1 && r.IntN(5) == 0:
						_, err = c.Exec(ctx, `SELECT pgq.fail($1, $2, 'boom', default_tries => 0)`, j.id, j.token)
					case j.attempts == 1 && r.IntN(5) == 0:
						_, err = c.Exec(ctx, `SELECT pgq.release($1, $2, 0)`, j.id, j.token)
					default:
						_, err = c.Exec(ctx, `SELECT pgq.complete(ARRAY[$1::uuid], ARRAY[$2::uuid])`, j.id, j.token)
						done <- j.id
					}
					if !assertNoError(t, err) {
						return
					}
				}
			}
		}()
	}

	time.Sleep(4 * time.Second)
	close(stop)
	producers.Wait()
	deadline := time.Now().Add(30 * time.Second)
	for pgqtest.Scalar[int](t, db, `SELECT count(*)::int FROM pgq.jobs`) > 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	close(quit)
	workers.Wait()
	close(done)
	seen := map[uuid.UUID]bool{}
	for id := range done {
		require.False(t, seen[id], "job %s completed twice", id)
		seen[id] = true
	}
	require.Equal(t, 0, pgqtest.Scalar[int](t, db, `SELECT count(*)::int FROM pgq.jobs`),
		"jobs left waiting: the marks of every session passed them over")
	require.EqualValues(t, dispatched.Load(), len(seen))
	require.Greater(t, len(seen), 500)
}

// buffersTouched runs sql on c under EXPLAIN (ANALYZE, BUFFERS) and returns the shared
// buffers it touched, the functions it called included.
func buffersTouched(t *testing.T, c *pgx.Conn, sql string) int {
	t.Helper()
	var plan []map[string]any
	require.NoError(t, c.QueryRow(ctx, `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) `+sql).Scan(&plan))
	top := plan[0]["Plan"].(map[string]any)
	return int(top["Shared Hit Blocks"].(float64) + top["Shared Read Blocks"].(float64))
}

// assertNoError reports err from a goroutine of a test, which must not call FailNow.
func assertNoError(t *testing.T, err error) bool {
	t.Helper()
	if err != nil {
		t.Error(err)
		return false
	}
	return true
}

// S78 for a SQL job's start: its plans cached while the job's slot held a few rows (as
// when a bulk dispatch's first chunk fills an empty slot), the slot then grows to
// 50,000 rows; a job whose row is at the end is still read by its key.
func TestS78SQLJobStartPlannedOnAFewRowsStaysByKey(t *testing.T) {
	t.Parallel()
	db := pgqtest.NewWithLoads(t, 0)
	s := session(t, db)
	db.Exec(t, `CREATE FUNCTION public.s78_noop(jsonb) RETURNS void LANGUAGE sql AS ''`)
	db.Exec(t, `SELECT pgq.define_job('s78_sql', handler => 'public.s78_noop')`)
	runSQLJob := func() string {
		var id, token uuid.UUID
		require.NoError(t, s.QueryRow(ctx, `SELECT uuid, lease_token FROM pgq.reserve('w', '{sql}', 1) WHERE pickup IS NULL`).Scan(&id, &token))
		return fmt.Sprintf(`SELECT pgq.run_sql_job('%s', '%s')`, id, token)
	}
	db.Exec(t, `SELECT pgq.dispatch('s78_sql', '{}', queue => 'sql') FROM generate_series(1, 8)`)
	db.Exec(t, `ANALYZE pgq.jobs`)
	for range 8 { // past plpgsql's five custom plans: the generic plans are cached now
		_, err := s.Exec(ctx, runSQLJob())
		require.NoError(t, err)
	}
	db.Exec(t, `SELECT pgq.dispatch_many('j', array_agg('{}'::jsonb)) FROM generate_series(1, 50000)`)
	db.Exec(t, `SELECT pgq.dispatch('s78_sql', '{}', queue => 'sql')`)
	n := buffersTouched(t, s, runSQLJob())
	pages := pgqtest.Scalar[int](t, db, `SELECT (sum(pg_relation_size(partition)) / 8192)::int FROM pgq.job_slots`)
	t.Logf("pgq.run_sql_job touched %d buffers; pgq.jobs has %d pages", n, pages)
	require.Less(t, n, pages/2, "pgq.run_sql_job scans pgq.jobs")
}

// With an idle transaction holding the xmin horizon, the buffers a reserve touches do
// not grow with the jobs finished since: reserve starts at its marks (the pick) and
// where its last sweep stopped (the leases), where before S77 it walked every dead
// version from the front of its queue and of the lease index.
func TestS77ReserveCostDoesNotGrowWithFinishedJobs(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	hold, err := session(t, db).Begin(ctx)
	require.NoError(t, err)
	defer hold.Rollback(ctx)
	require.NoError(t, hold.QueryRow(ctx, `SELECT pg_current_xact_id()`).Scan(new(any)))

	// reserveCost is the shared buffers one reserve of 1 touches on c.
	reserveCost := func(c *pgx.Conn, at time.Time) int {
		return buffersTouched(t, c, fmt.Sprintf(`SELECT * FROM pgq.reserve('w', '{default}', 1, 1, '%s')`, at.Format(time.RFC3339Nano)))
	}
	finishAll := func(c *pgx.Conn, at time.Time) {
		for {
			rows, err := c.Query(ctx, `SELECT uuid, lease_token FROM pgq.reserve('w', '{default}', 500, 1, $1)`, at)
			require.NoError(t, err)
			var ids, tokens []uuid.UUID
			var id, token uuid.UUID
			_, err = pgx.ForEachRow(rows, []any{&id, &token}, func() error {
				ids, tokens = append(ids, id), append(tokens, token)
				return nil
			})
			require.NoError(t, err)
			if len(ids) == 0 {
				return
			}
			db.Exec(t, `SELECT pgq.complete($1, $2)`, ids, tokens)
		}
	}

	s := session(t, db)
	start := clock()
	var at time.Time
	buffers := map[int]int{}
	for round := 1; round <= 10; round++ {
		at = start.Add(time.Duration(round) * 2 * time.Minute) // the leases of the round before have ended
		db.Exec(t, `SELECT pgq.dispatch_many('j', array_agg('{}'::jsonb)) FROM generate_series(1, 2000)`)
		finishAll(s, at)
		dispatch(t, db, `'probe', '{}'`)
		buffers[round] = reserveCost(s, at.Add(time.Millisecond))
		finishAll(s, at.Add(2*time.Millisecond))
	}
	t.Logf("buffers touched by a reserve of 1 after 2,000 to 20,000 finished jobs: %v", buffers)
	require.Less(t, buffers[10], 2*buffers[2]+100, "a reserve walks the finished jobs")

	// The check can fail: a session's first reserve walks the queue from its front, as
	// every reserve did before S77, and that walk is long.
	dispatch(t, db, `'probe', '{}'`)
	first := reserveCost(session(t, db), at.Add(3*time.Millisecond))
	t.Logf("a new session's first reserve touched %d buffers", first)
	require.Greater(t, first, 5*buffers[10], "the held xmin kept the finished jobs' versions")
}

// S78: a session caches its plans while pgq.jobs is small and freshly analyzed; then the
// table grows a hundredfold with no vacuum or analyze to invalidate them (what a held
// xmin does). The worker's calls still touch only the buffers of the jobs they name.
func TestS78PlansCachedOnASmallTableStayByKey(t *testing.T) {
	t.Parallel()
	db := pgqtest.NewWithLoads(t, 0) // 50,000 rows of pgq.jobs, not chunks of pgq.loads (S85)
	s := session(t, db)
	cost := func(sql string) int { return buffersTouched(t, s, sql) }
	type lease struct{ id, token uuid.UUID }
	reserveTen := func() []lease {
		rows, err := s.Query(ctx, `SELECT uuid, lease_token FROM pgq.reserve('w', '{default}', 10) WHERE pickup IS NULL`)
		require.NoError(t, err)
		out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (lease, error) {
			var l lease
			return l, r.Scan(&l.id, &l.token)
		})
		require.NoError(t, err)
		require.Len(t, out, 10)
		return out
	}
	calls := []string{
		`SELECT * FROM pgq.complete(ARRAY['%s']::uuid[], ARRAY['%s']::uuid[])`,
		`SELECT * FROM pgq.heartbeat(ARRAY['%s']::uuid[], ARRAY['%s']::uuid[])`,
		`SELECT * FROM pgq.release('%s', '%s', 0)`,
		`SELECT * FROM pgq.fail('%s', '%s', 'boom', default_tries => 0)`,
		`SELECT * FROM pgq.give_back(ARRAY['%s']::uuid[], ARRAY['%s']::uuid[], 'test')`,
	}
	run := func(measure bool) map[string]int {
		costs := map[string]int{}
		for i, l := range reserveTen()[:len(calls)] {
			sql := fmt.Sprintf(calls[i], l.id, l.token)
			if measure {
				costs[sql[:30]] = cost(sql)
			} else {
				_, err := s.Exec(ctx, sql)
				require.NoError(t, err)
			}
		}
		db.Exec(t, `DELETE FROM pgq.jobs WHERE reserved_at IS NOT NULL`)
		return costs
	}
	// Middleware jobs take the set-based path, whose statement for the admitted joins
	// them to their admission in a hash, with nested loops off for that statement only.
	const reserveMiddleware = `SELECT * FROM pgq.reserve('w', '{mw}', 10)`
	db.Exec(t, `SELECT pgq.dispatch_many('j', array_agg('{}'::jsonb)) FROM generate_series(1, 200)`)
	db.Exec(t, `SELECT pgq.dispatch_many('j', array_agg(jsonb_build_object('k', i)), queue => 'mw',
	                                     middleware => '[{"without_overlapping": {"by": ["k"]}}]')
	            FROM generate_series(1, 200) i`)
	// A concurrency_limited key held for good: each reserve of its queue leaves ten jobs
	// waiting for a place.
	const reserveWaiting = `SELECT * FROM pgq.reserve('w', '{cl}', 10)`
	limited := func() {
		db.Exec(t, `SELECT pgq.dispatch_many('j', array_fill('{}'::jsonb, ARRAY[10]), queue => 'cl',
		                                     middleware => '[{"concurrency_limited": {"limit": 1}}]')`)
	}
	db.Exec(t, `SELECT pgq.dispatch('j', '{}', queue => 'cl', middleware => '[{"concurrency_limited": {"limit": 1}}]')`)
	_, err := s.Exec(ctx, `SELECT * FROM pgq.reserve('holder', '{cl}', 1)`)
	require.NoError(t, err)
	db.Exec(t, `UPDATE pgq.overlap_locks SET expires_at = now() + interval '1 hour' WHERE key LIKE '#%'`)
	db.Exec(t, `ANALYZE pgq.jobs`)
	for range 8 { // past plpgsql's five custom plans: the generic plans are cached now
		run(false)
		_, err := s.Exec(ctx, reserveMiddleware)
		require.NoError(t, err)
		limited()
		_, err = s.Exec(ctx, reserveWaiting)
		require.NoError(t, err)
	}
	db.Exec(t, `SELECT pgq.dispatch_many('j', array_agg('{}'::jsonb)) FROM generate_series(1, 50000)`)
	costs := run(true)
	// The reserve after the bulk dispatch read its 50,000 rows once, to lower its marks:
	// measured is the next one.
	reserveTen()
	costs["SELECT * FROM pgq.reserve"] = cost(`SELECT * FROM pgq.reserve('w', '{default}', 10)`)
	costs["pgq.reserve of middleware jobs"] = cost(reserveMiddleware)
	limited()
	costs["pgq.reserve leaving jobs waiting"] = cost(reserveWaiting)
	require.Equal(t, 90, pgqtest.Scalar[int](t, db, `SELECT count(*)::int FROM pgq.jobs WHERE waits_on IS NOT NULL`))
	// The settings the reserve changes for that statement are the caller's again after
	// the call, in the caller's transaction.
	tx, err := s.Begin(ctx)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `SET LOCAL enable_nestloop = off`)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, reserveMiddleware)
	require.NoError(t, err)
	for name, want := range map[string]string{"enable_nestloop": "off", "enable_hashjoin": "on"} {
		var v string
		require.NoError(t, tx.QueryRow(ctx, "SHOW "+name).Scan(&v))
		require.Equal(t, want, v, name)
	}
	require.NoError(t, tx.Rollback(ctx))
	t.Logf("buffers per call on 50,000 jobs, with plans cached on 200: %v", costs)
	pages := pgqtest.Scalar[int](t, db, `SELECT (sum(pg_relation_size(partition)) / 8192)::int FROM pgq.job_slots`)
	for call, n := range costs {
		require.Less(t, n, pages/2, "%s scans pgq.jobs (%d pages)", call, pages)
	}
}
