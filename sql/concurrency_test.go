package sql_test

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/stretchr/testify/require"

	"github.com/pgq-dev/pgq/internal/pgqtest"
	"github.com/pgq-dev/pgq/pgq"
)

// S99: at most limit handlers of a key run at once; a job over the limit waits without
// spending an attempt or writing history, and the end of a running job of its key makes
// the first waiting one ready at once.
func TestS99ConcurrencyLimitPerKey(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, `SELECT pgq.define_job('sync', middleware => '[{"concurrency_limited": {"by": ["account"], "limit": 2}}]')`)
	for i := 0; i < 5; i++ {
		dispatch(t, db, `'sync', '{"account": 1}'`)
	}
	other := dispatch(t, db, `'sync', '{"account": 2}'`)
	now := clock()
	got := runnable(reserveOn(t, db.Pool, "w1", now))
	require.Len(t, got, 3, "two of account 1, one of account 2")
	require.Equal(t, other, got[2].UUID)
	require.Equal(t, 3, count(t, db, `pgq.jobs WHERE waits_on = 'sync:[1]' AND attempts = 0 AND available_at > $1`, now))
	require.Zero(t, count(t, db, `pgq.attempts`), "a wait is not an attempt")
	require.Empty(t, runnable(reserveOn(t, db.Pool, "w2", now)), "another worker finds the key full")
	require.Equal(t, "full", pgqtest.Scalar[string](t, db, `SELECT state FROM pgq.limits WHERE kind = 'concurrency' AND key = 'sync:[1]'`))
	require.Equal(t, 2, pgqtest.Scalar[int](t, db, `SELECT used FROM pgq.limits WHERE kind = 'concurrency' AND key = 'sync:[1]'`))

	// One ends: exactly one waiting job of its key is ready, and runs on its first attempt.
	require.True(t, complete(t, db, reserved{UUID: got[0].UUID, Token: *got[0].Token}))
	require.Equal(t, 1, count(t, db, `pgq.jobs WHERE waits_on IS NULL AND reserved_at IS NULL AND available_at <= now()`))
	next := runnable(reserveOn(t, db.Pool, "w2", now))
	require.Len(t, next, 1)
	require.Equal(t, 1, pgqtest.Scalar[int](t, db, `SELECT attempts FROM pgq.jobs WHERE uuid = $1`, next[0].UUID))
	require.Empty(t, runnable(reserveOn(t, db.Pool, "w3", now)))
}

// S99, S34: a place is an overlap lease: when its worker stops renewing it, the place
// is free after the overlap TTL, and a waiting job is ready by then without any event.
func TestS34S99ConcurrencyPlaceFreesWhenItsLeaseEnds(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	dispatch(t, db, `'one', middleware => '[{"concurrency_limited": {"limit": 1}}]'`)
	waiting := dispatch(t, db, `'one', middleware => '[{"concurrency_limited": {"limit": 1}}]'`)
	now := clock()
	require.Len(t, runnable(reserveOn(t, db.Pool, "dead", now)), 1)
	require.Empty(t, runnable(reserveOn(t, db.Pool, "w", now)))
	readyAt := pgqtest.Scalar[time.Time](t, db, `SELECT available_at FROM pgq.jobs WHERE uuid = $1`, waiting)
	require.WithinDuration(t, now.Add(10*time.Second), readyAt, time.Second, "ready when the holder's lease could run out")
	later := runnable(reserveOn(t, db.Pool, "w", now.Add(11*time.Second)))
	require.Len(t, later, 1, "no heartbeat: the place is free after the TTL")
	require.Equal(t, waiting, later[0].UUID)
}

// reserveAtOnce runs n reserves at once, each on a session of its own, and returns how
// many jobs they took to run in all.
func reserveAtOnce(t *testing.T, db *pgqtest.DB, n int) int {
	t.Helper()
	now := clock()
	var wg sync.WaitGroup
	var mu sync.Mutex
	total := 0
	for range n {
		c := session(t, db)
		wg.Go(func() {
			got := len(runnable(reserveOn(t, c, "w", now)))
			mu.Lock()
			total += got
			mu.Unlock()
		})
	}
	wg.Wait()
	return total
}

// S99: a named limit is one budget shared by every class that names it; it is checked
// at dispatch, and may not be dropped while a class names it.
func TestS99NamedConcurrencyLimitIsShared(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, `SELECT pgq.define_concurrency('vendor_api', 3)`)
	db.Exec(t, `SELECT pgq.define_job('a', middleware => '[{"concurrency_limited": {"limit": "vendor_api"}}]')`)
	db.Exec(t, `SELECT pgq.define_job('b', middleware => '[{"concurrency_limited": {"limit": "vendor_api"}}]')`)
	for i := 0; i < 3; i++ {
		dispatch(t, db, `'a'`)
		dispatch(t, db, `'b'`)
	}
	require.Len(t, runnable(reserveOn(t, db.Pool, "w1", clock())), 3)
	require.Equal(t, 3, count(t, db, `pgq.jobs WHERE waits_on = '@vendor_api'`))
	require.Equal(t, 3, pgqtest.Scalar[int](t, db, `SELECT used FROM pgq.limits WHERE kind = 'concurrency' AND name = 'vendor_api'`))

	for call, code := range map[string]string{
		`pgq.dispatch('x', middleware => '[{"concurrency_limited": {"limit": 0}}]')`:                        "22023",
		`pgq.dispatch('x', middleware => '[{"concurrency_limited": {"limit": 1001}}]')`:                     "22023",
		`pgq.dispatch('x', middleware => '[{"concurrency_limited": {"limit": 1.5}}]')`:                      "22023",
		`pgq.dispatch('x', middleware => '[{"concurrency_limited": {}}]')`:                                  "22023",
		`pgq.dispatch('x', middleware => '[{"concurrency_limited": {"limit": "nope"}}]')`:                   "22023",
		`pgq.dispatch('x', middleware => '[{"concurrency_limited": {"limit": "vendor_api", "key": "k"}}]')`: "22023",
		`pgq.dispatch('x', middleware => '[{"concurrency_limited": {"limit": 2, "by": ["id"]}}]')`:          "22023",
		`pgq.define_concurrency('vendor_api', 0)`:                                                           "22023",
		`pgq.drop_concurrency('vendor_api')`:                                                                "2BP01",
	} {
		_, err := db.Pool.Exec(ctx, `SELECT `+call)
		require.Equal(t, code, pgCode(err), "%s: %v", call, err)
	}
	db.Exec(t, `SELECT pgq.define_job('a'); SELECT pgq.define_job('b')`)
	require.True(t, pgqtest.Scalar[bool](t, db, `SELECT pgq.drop_concurrency('vendor_api')`))
	require.Len(t, runnable(reserveOn(t, db.Pool, "w2", clock().Add(time.Minute))), 3, "a dropped limit admits its jobs")
}

// S99 under concurrency: eight sessions reserving at once never run more than the limit
// of one key.
func TestS99ConcurrentReservesKeepTheLimit(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	for i := 0; i < 40; i++ {
		dispatch(t, db, `'k', middleware => '[{"concurrency_limited": {"key": "shared", "limit": 3}}]'`)
	}
	total := reserveAtOnce(t, db, 8)
	require.Equal(t, 3, total)
	require.Equal(t, 3, count(t, db, `pgq.overlap_locks WHERE key LIKE '#k:shared#%'`))
}

// S122: one reserve passes over at most 1,000 jobs of a queue that it cannot run (here,
// jobs finding their key's one place taken wait for it), then ends the queue's turn; the
// next reserve goes on from there, and a runnable job behind them is reached.
func TestS122ReservePassesOverABoundedNumberOfJobs(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, `SELECT pgq.define_job('one', middleware => '[{"concurrency_limited": {"limit": 1}}]')`)
	dispatch(t, db, `'one'`)
	now := clock()
	require.Len(t, runnable(reserveOn(t, db.Pool, "holder", now)), 1, "the key's place is taken")
	db.Exec(t, `SELECT count(*) FROM pgq.dispatch_many('one', array_fill('{}'::jsonb, ARRAY[2500]))`)
	require.Zero(t, count(t, db, `pgq.loads`), "jobs with middleware are rows")
	behind := dispatch(t, db, `'other'`)
	now = clock() // after the dispatches, however long they took: every job is available

	for _, waiting := range []int{1000, 2000} {
		require.Empty(t, runnable(reserveOn(t, db.Pool, "w", now)), "the turn ends before the job behind")
		require.Equal(t, waiting, count(t, db, `pgq.jobs WHERE waits_on IS NOT NULL`))
	}
	got := runnable(reserveOn(t, db.Pool, "w", now))
	require.Len(t, got, 1)
	require.Equal(t, behind, got[0].UUID)
	require.Equal(t, 2500, count(t, db, `pgq.jobs WHERE waits_on IS NOT NULL AND attempts = 0`))
}

// S99: an end wakes the first waiting job that no other transaction has locked, so two
// ends that free places of the same keys never wait for each other (nor deadlock) over
// the jobs they wake: with the first waiting job locked, the end wakes the second.
func TestS99EndsWakeWaitingJobsWithoutWaiting(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	mw := `middleware => '[{"concurrency_limited": {"limit": 1}}]'`
	dispatch(t, db, `'one', `+mw)
	first := dispatch(t, db, `'one', `+mw)
	second := dispatch(t, db, `'one', `+mw)
	got := runnable(reserveOn(t, db.Pool, "w1", clock()))
	require.Len(t, got, 1)

	waker, err := session(t, db).Begin(ctx)
	require.NoError(t, err)
	defer waker.Rollback(ctx)
	_, err = waker.Exec(ctx, `SELECT FROM pgq.jobs WHERE uuid = $1 FOR UPDATE`, first)
	require.NoError(t, err)
	ender := session(t, db)
	_, err = ender.Exec(ctx, `SET lock_timeout = '5s'`)
	require.NoError(t, err)
	var n int
	require.NoError(t, ender.QueryRow(ctx, `SELECT count(*)::int FROM pgq.complete(ARRAY[$1::uuid], ARRAY[$2::uuid])`,
		got[0].UUID, *got[0].Token).Scan(&n), "the end waits for no locked waiting job")
	require.Equal(t, 1, n)
	require.NoError(t, waker.Rollback(ctx))
	require.Equal(t, []bool{false, true}, pgqtest.Scalar[[]bool](t, db,
		`SELECT array_agg(waits_on IS NULL ORDER BY id) FROM pgq.jobs WHERE uuid IN ($1, $2)`, first, second),
		"the locked first waiting job still waits, the second is woken")
}

// runBeside runs sql on a session of its own, beside a transaction the test holds open,
// and returns once the statement has finished or waits for an advisory lock in db; its
// error arrives on the channel when it finishes.
func runBeside(t *testing.T, db *pgqtest.DB, sql string, args ...any) chan error {
	t.Helper()
	done := make(chan error, 1)
	s := session(t, db)
	go func() {
		_, err := s.Exec(ctx, sql, args...)
		done <- err
	}()
	require.Eventually(t, func() bool {
		return len(done) > 0 || count(t, db, `pg_locks WHERE locktype = 'advisory' AND NOT granted
			AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`) > 0
	}, 10*time.Second, 10*time.Millisecond)
	return done
}

// S99: a job that a reserve leaves waiting for a place is woken by an end of its key
// that runs while that reserve is still open: the end waits for the reserve's commit,
// then wakes it (not the job's delay, up to the overlap TTL, later). And while an end
// that has freed a place is still open, a reserve makes the key's job ready a tenth of
// a second on, for the next reserve, instead of waiting for an end that will not see it.
func TestS99EndBesideAReserveLeavingJobsWaitingWakesThem(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	mw := `middleware => '[{"concurrency_limited": {"limit": 1}}]'`
	dispatch(t, db, `'one', `+mw)
	holder := runnable(reserveOn(t, db.Pool, "w1", time.Now()))
	require.Len(t, holder, 1)
	waiting := dispatch(t, db, `'one', `+mw)

	reserver, err := session(t, db).Begin(ctx)
	require.NoError(t, err)
	defer reserver.Rollback(ctx)
	require.Empty(t, runnable(reserveOn(t, reserver, "w2", time.Now())), "the key is full")
	var waitsOn *string
	require.NoError(t, reserver.QueryRow(ctx, `SELECT waits_on FROM pgq.jobs WHERE uuid = $1`, waiting).Scan(&waitsOn))
	require.NotNil(t, waitsOn, "the reserve leaves it waiting")
	require.Equal(t, 1, count(t, db, `pgq.jobs WHERE uuid = $1 AND waits_on IS NULL`, waiting), "its wait is not committed yet")
	// The end runs while the reserve is open: it waits for it, or (before) went through.
	ended := runBeside(t, db, `SELECT pgq.complete(ARRAY[$1::uuid], ARRAY[$2::uuid])`, holder[0].UUID, *holder[0].Token)
	require.NoError(t, reserver.Commit(ctx))
	require.NoError(t, <-ended)
	require.Equal(t, 1, count(t, db, `pgq.jobs WHERE uuid = $1 AND waits_on IS NULL AND available_at <= now()`, waiting),
		"the end woke the job the reserve left waiting")
	got := runnable(reserveOn(t, db.Pool, "w3", time.Now()))
	require.Len(t, got, 1)
	require.Equal(t, waiting, got[0].UUID)

	// Its end, open: a reserve of the key's next job leaves it ready, untouched.
	next := dispatch(t, db, `'one', `+mw)
	ender, err := session(t, db).Begin(ctx)
	require.NoError(t, err)
	defer ender.Rollback(ctx)
	_, err = ender.Exec(ctx, `SELECT pgq.complete(ARRAY[$1::uuid], ARRAY[$2::uuid])`, got[0].UUID, *got[0].Token)
	require.NoError(t, err)
	require.Empty(t, runnable(reserveOn(t, db.Pool, "w4", time.Now())))
	require.Equal(t, 1, count(t, db, `pgq.jobs WHERE uuid = $1 AND waits_on IS NULL AND available_at <= now() + interval '0.1 s'`, next),
		"ready a tenth of a second on while a place is being freed")
	require.NoError(t, ender.Commit(ctx))
	last := runnable(reserveOn(t, db.Pool, "w4", clock()))
	require.Len(t, last, 1)
	require.Equal(t, next, last[0].UUID)
}

// S99: a reserve that takes a place and gives it back (its job turned away by a later
// middleware) frees it as an end does: a reserve beside it that found that place locked
// and left its job waiting makes the job ready again instead.
func TestS99PlaceGivenBackBesideAReserveLeavesNoJobWaiting(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, `SELECT pgq.define_limit('api', 1, '1 hour')`)
	db.Exec(t, `SELECT pgq.define_job('call', middleware => '[{"concurrency_limited": {"limit": 1}}, {"rate_limited": {"limit": "api"}}]')`)
	dispatch(t, db, `'call'`)
	first := runnable(reserveOn(t, db.Pool, "w1", time.Now()))
	require.Len(t, first, 1)
	require.True(t, complete(t, db, reserved{UUID: first[0].UUID, Token: *first[0].Token}), "the hour's one call is spent")

	turned := dispatch(t, db, `'call'`)
	givingBack, err := session(t, db).Begin(ctx)
	require.NoError(t, err)
	defer givingBack.Rollback(ctx)
	require.Empty(t, runnable(reserveOn(t, givingBack, "w2", time.Now())), "took the place, then turned away by the rate limit")
	waiting := dispatch(t, db, `'call'`)
	require.Empty(t, runnable(reserveOn(t, db.Pool, "w3", time.Now())), "the place is locked by the reserve giving it back")
	require.NoError(t, givingBack.Commit(ctx))
	require.Equal(t, 1, count(t, db, `pgq.jobs WHERE uuid = $1 AND waits_on IS NULL AND available_at <= now() + interval '0.1 s'`, waiting),
		"ready again, not waiting for an end that will not come")
	require.Equal(t, 1, count(t, db, `pgq.jobs WHERE uuid = $1 AND available_at > now()`, turned), "turned away for the rate limit's window")
}

// S99, S34: an end that frees places of two keys one statement at a time never waits in
// a cycle with a reserve. The reserve holds a named limit's key alone while it counts
// handlers above the lowered limit, then waits to take over a place whose lease ran out
// and whose row the end has deleted; the end's second job frees a place of the limit:
// it must not wait for the reserve (a deadlock the server breaks after a second).
func TestS99S34EndFreeingTwoKeysDoesNotWaitForACountingReserve(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, `SELECT pgq.define_concurrency('vendor', 3)`)
	db.Exec(t, `SELECT pgq.define_job('push', middleware => '[{"concurrency_limited": {"limit": "vendor"}}]')`)
	db.Exec(t, `SELECT pgq.define_job('own', middleware => '[{"concurrency_limited": {"limit": 1}}]')`)
	for range 3 {
		dispatch(t, db, `'push'`)
	}
	pushing := runnable(reserveOn(t, db.Pool, "w1", time.Now()))
	require.Len(t, pushing, 3)
	db.Exec(t, `SELECT pgq.define_concurrency('vendor', 2)`) // three places, a limit of two
	dispatch(t, db, `'own'`)
	owning := runnable(reserveOn(t, db.Pool, "w1", time.Now()))
	require.Len(t, owning, 1)
	db.Exec(t, `UPDATE pgq.overlap_locks SET expires_at = now() - interval '1 minute' WHERE key = '#own#1'`)
	dispatch(t, db, `'push'`)
	dispatch(t, db, `'own'`)

	ender, err := session(t, db).Begin(ctx)
	require.NoError(t, err)
	defer ender.Rollback(ctx)
	_, err = ender.Exec(ctx, `SET LOCAL lock_timeout = '5s'`)
	require.NoError(t, err)
	_, err = ender.Exec(ctx, `SELECT pgq.fail($1, $2, 'boom')`, owning[0].UUID, *owning[0].Token)
	require.NoError(t, err)
	reserving := session(t, db)
	var reserverPID int
	require.NoError(t, reserving.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&reserverPID))
	reserved := make(chan error, 1)
	go func() {
		_, err := reserving.Exec(ctx, `SELECT * FROM pgq.reserve('w2', '{default}', 10)`)
		reserved <- err
	}()
	require.Eventually(t, func() bool {
		return count(t, db, `pg_stat_activity WHERE pid = $1 AND wait_event_type = 'Lock'`, reserverPID) == 1
	}, 10*time.Second, 10*time.Millisecond, "the reserve waits for the end's deleted lease")
	_, err = ender.Exec(ctx, `SELECT pgq.fail($1, $2, 'boom')`, pushing[0].UUID, *pushing[0].Token)
	require.NoError(t, err, "the end frees a place of the limit without waiting for the reserve")
	require.NoError(t, ender.Commit(ctx))
	require.NoError(t, <-reserved)
}

// S99: two concurrency_limited entries that count one key would each find the other's
// place taken, so their jobs would wait for ever: define_job and dispatch refuse them.
// Entries on different keys (a class's own limit per account, and a named limit) go
// together, and a job holding both places runs.
func TestS99TwoEntriesOnOneKeyAreRefused(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, `SELECT pgq.define_concurrency('vendor', 2)`)
	for _, mw := range []string{
		`[{"concurrency_limited": {"limit": 1}}, {"concurrency_limited": {"limit": 2}}]`,
		`[{"concurrency_limited": {"limit": "vendor"}}, {"concurrency_limited": {"limit": "vendor"}}]`,
		`[{"concurrency_limited": {"limit": 1, "by": ["a"]}}, {"without_overlapping": {"by": ["a"]}}, {"concurrency_limited": {"limit": 3, "by": ["a"]}}]`,
	} {
		_, err := db.Pool.Exec(ctx, `SELECT pgq.define_job('dup', middleware => $1::jsonb)`, mw)
		require.Equal(t, "22023", pgCode(err), mw)
		require.ErrorContains(t, err, "count the same key")
		_, err = db.Pool.Exec(ctx, `SELECT pgq.dispatch('dup', '{"a": 1}', middleware => $1::jsonb)`, mw)
		require.Equal(t, "22023", pgCode(err), mw)
	}
	both := `'[{"concurrency_limited": {"limit": 1, "by": ["a"]}}, {"concurrency_limited": {"limit": "vendor"}}]'`
	db.Exec(t, `SELECT pgq.define_job('two', middleware => `+both+`)`)
	dispatch(t, db, `'two', '{"a": 1}'`)
	got := runnable(reserveOn(t, db.Pool, "w", clock()))
	require.Len(t, got, 1)
	require.Len(t, got[0].Overlap, 2, "one place of each key")
	require.Equal(t, "#two:[1]#1", got[0].Overlap[0])
	require.Contains(t, []string{"#@vendor#1", "#@vendor#2"}, got[0].Overlap[1])
}

// S99: a job that waited for a place and then got one without being woken (its
// holder's lease ran out) no longer waits on its key: released with a delay later, an
// end of another job of its key does not cut its delay short.
func TestS99AdmittedJobNoLongerWaitsOnItsKey(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	mw := `middleware => '[{"concurrency_limited": {"limit": 1}}]'`
	dispatch(t, db, `'one', `+mw)
	w := dispatch(t, db, `'one', `+mw)
	now := clock()
	require.Len(t, runnable(reserveOn(t, db.Pool, "dead", now)), 1)
	require.Empty(t, runnable(reserveOn(t, db.Pool, "w", now)))
	require.Equal(t, 1, count(t, db, `pgq.jobs WHERE uuid = $1 AND waits_on IS NOT NULL`, w))
	later := now.Add(11 * time.Second)
	got := runnable(reserveOn(t, db.Pool, "w", later))
	require.Len(t, got, 1)
	require.Equal(t, w, got[0].UUID)
	require.Zero(t, count(t, db, `pgq.jobs WHERE uuid = $1 AND waits_on IS NOT NULL`, w), "it holds a place now")
	release(t, db, reserved{UUID: w, Token: *got[0].Token}, 300, later)

	x := dispatch(t, db, `'one', `+mw)
	next := runnable(reserveOn(t, db.Pool, "w", later))
	require.Len(t, next, 1)
	require.Equal(t, x, next[0].UUID)
	require.True(t, complete(t, db, reserved{UUID: x, Token: *next[0].Token}))
	require.True(t, pgqtest.Scalar[time.Time](t, db, `SELECT available_at FROM pgq.jobs WHERE uuid = $1`, w).After(later.Add(299*time.Second)),
		"its 300 s delay holds")
}

// S99: a class's own limit and a named limit of the same name are two budgets: a class
// 'vendor' limited to 1 and the limit 'vendor' of 2 run three handlers at once, and
// pgq.limits shows each.
func TestS99ClassLimitAndNamedLimitOfOneNameAreApart(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, `SELECT pgq.define_concurrency('vendor', 2)`)
	db.Exec(t, `SELECT pgq.define_job('vendor', middleware => '[{"concurrency_limited": {"limit": 1}}]')`)
	db.Exec(t, `SELECT pgq.define_job('call', middleware => '[{"concurrency_limited": {"limit": "vendor"}}]')`)
	for range 2 {
		dispatch(t, db, `'vendor'`)
		dispatch(t, db, `'call'`)
		dispatch(t, db, `'call'`)
	}
	require.Len(t, runnable(reserveOn(t, db.Pool, "w1", clock())), 3, "one of the class, two of the named limit")
	type row struct {
		Name, Key string
		Max       *int
		Used      int
	}
	rows, err := db.Pool.Query(ctx, `SELECT name, key, max, used FROM pgq.limits WHERE kind = 'concurrency' ORDER BY key`)
	require.NoError(t, err)
	got, err := pgx.CollectRows(rows, pgx.RowToStructByPos[row])
	require.NoError(t, err)
	two := 2
	require.Equal(t, []row{{"vendor", "@vendor", &two, 2}, {"vendor", "vendor", nil, 1}}, got)
}

// S99: an installation whose jobs hold and wait for places of a named limit under the
// keys without '@' (as migration 00044 finds them: its Down gives them that form) is
// migrated: running jobs keep their places (renewed by heartbeats, freed by their
// ends), a waiting job waits on the new key and is woken by an end, and the limit
// holds across jobs admitted before and after.
func TestS99MigrationMovesNamedLimitKeys(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, `SELECT pgq.define_concurrency('vendor_api', 2)`)
	db.Exec(t, `SELECT pgq.define_job('call', middleware => '[{"concurrency_limited": {"limit": "vendor_api", "by": ["acct"]}}]')`)
	for range 3 {
		dispatch(t, db, `'call', '{"acct": 7}'`)
	}
	running := runnable(reserveOn(t, db.Pool, "w1", time.Now()))
	require.Len(t, running, 2)
	const key = `vendor_api:[7]`
	sqlDB := stdlib.OpenDBFromPool(db.Pool)
	defer sqlDB.Close()
	provider, err := goose.NewProvider(goose.DialectPostgres, sqlDB, os.DirFS("migrations"), goose.WithTableName(pgq.VersionTable))
	require.NoError(t, err)
	_, err = provider.DownTo(ctx, 43)
	require.NoError(t, err)
	require.Equal(t, 1, count(t, db, `pgq.jobs WHERE waits_on = $1 AND middleware_keys = jsonb_build_array($1::text)`, key))
	require.Equal(t, 2, count(t, db, `pgq.overlap_locks WHERE key LIKE '#' || $1 || '#%'`, key))
	require.Equal(t, 2, count(t, db, `pgq.jobs WHERE overlap_keys[1] LIKE '#' || $1 || '#%'`, key))

	_, err = pgq.Migrate(ctx, db.Pool) // the migrations Down undid, and the functions
	require.NoError(t, err)
	require.Equal(t, 1, count(t, db, `pgq.jobs WHERE waits_on = '@' || $1 AND middleware_keys = jsonb_build_array('@' || $1)`, key))
	require.Equal(t, 2, count(t, db, `pgq.overlap_locks WHERE key LIKE '#@' || $1 || '#%'`, key))
	require.Equal(t, 2, count(t, db, `pgq.jobs WHERE overlap_keys[1] LIKE '#@' || $1 || '#%'`, key))
	require.Equal(t, 2, pgqtest.Scalar[int](t, db, `SELECT count(*)::int FROM pgq.heartbeat($1, $2)`,
		[]uuid.UUID{running[0].UUID, running[1].UUID}, []uuid.UUID{*running[0].Token, *running[1].Token}))
	require.Equal(t, 2, count(t, db, `pgq.overlap_locks WHERE key LIKE '#@%' AND expires_at > now()`), "renewed")

	dispatch(t, db, `'call', '{"acct": 7}'`)
	require.Empty(t, runnable(reserveOn(t, db.Pool, "w2", time.Now())), "the places the old keys hold are counted")
	require.True(t, complete(t, db, reserved{UUID: running[0].UUID, Token: *running[0].Token}))
	require.Equal(t, 1, count(t, db, `pgq.jobs WHERE waits_on IS NULL AND reserved_at IS NULL AND available_at <= now()`),
		"the end woke the job that waited since before the migration")
	require.Len(t, runnable(reserveOn(t, db.Pool, "w2", time.Now())), 1)
	require.Empty(t, runnable(reserveOn(t, db.Pool, "w2", time.Now())))
}

// S99: a named limit lowered while its handlers run holds at once: no job of its key
// starts while as many of its handlers run as the new limit, those holding places above
// it included; a job that an end wakes while the key is still full waits again. Raised
// again, the limit admits its waiting jobs at once.
func TestS99LoweredLimitHoldsAtOnce(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, `SELECT pgq.define_concurrency('vendor', 3)`)
	db.Exec(t, `SELECT pgq.define_job('push', middleware => '[{"concurrency_limited": {"limit": "vendor"}}]')`)
	for i := 0; i < 6; i++ {
		dispatch(t, db, `'push'`)
	}
	running := runnable(reserveOn(t, db.Pool, "w1", clock()))
	require.Len(t, running, 3)
	require.Equal(t, 3, count(t, db, `pgq.jobs WHERE waits_on = '@vendor'`))
	// In place order: the first to end frees place 1, the one place under the new limit.
	slices.SortFunc(running, func(a, b picked) int { return strings.Compare(a.Overlap[0], b.Overlap[0]) })
	require.Equal(t, "#@vendor#1", running[0].Overlap[0])
	db.Exec(t, `SELECT pgq.define_concurrency('vendor', 1)`)
	used := func() int {
		return pgqtest.Scalar[int](t, db, `SELECT used FROM pgq.limits WHERE kind = 'concurrency' AND key = '@vendor'`)
	}
	leases := func() int {
		return count(t, db, `pgq.overlap_locks WHERE key LIKE '#@vendor#%' AND expires_at > now()`)
	}

	for i, r := range running[:2] {
		require.True(t, complete(t, db, reserved{UUID: r.UUID, Token: *r.Token}))
		require.Equal(t, 1, count(t, db, `pgq.jobs WHERE waits_on IS NULL AND reserved_at IS NULL`), "the end wakes a waiting job")
		require.Empty(t, runnable(reserveOn(t, db.Pool, "w2", clock())), "%d still run under a limit of 1", 2-i)
		require.Equal(t, 3, count(t, db, `pgq.jobs WHERE waits_on = '@vendor' AND attempts = 0`), "the woken job waits again, uncounted")
		require.Equal(t, 2-i, used())
		require.Equal(t, 2-i, leases())
	}
	require.True(t, complete(t, db, reserved{UUID: running[2].UUID, Token: *running[2].Token}))
	next := runnable(reserveOn(t, db.Pool, "w2", clock()))
	require.Len(t, next, 1, "none runs: one starts")
	require.Equal(t, []string{"#@vendor#1"}, next[0].Overlap, "in a place under the new limit")
	require.Empty(t, runnable(reserveOn(t, db.Pool, "w3", clock())))
	require.Equal(t, 1, used())

	db.Exec(t, `SELECT pgq.define_concurrency('vendor', 3)`)
	require.Len(t, runnable(reserveOn(t, db.Pool, "w3", clock())), 2, "raised, the limit admits its waiting jobs at once")
	require.Equal(t, 3, used())
	require.Equal(t, 3, leases())
}

// S99: pgq.rotate brings a lowered limit's places back down as the handlers above it
// end, so that reserves look at no more places than a handler may still hold: a lease
// that ran out still counts while its row is kept. Raising the limit never lowers them.
func TestS99RotateBringsPlacesBackToTheLimit(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, `SELECT pgq.define_concurrency('vendor', 3)`)
	db.Exec(t, `SELECT pgq.define_job('push', middleware => '[{"concurrency_limited": {"limit": "vendor", "by": ["account"]}}]')`)
	for i := 0; i < 3; i++ {
		dispatch(t, db, `'push', '{"account": 1}'`)
	}
	running := runnable(reserveOn(t, db.Pool, "w1", clock()))
	require.Len(t, running, 3)
	holder := func(place int) reserved {
		for _, r := range running {
			if r.Overlap[0] == fmt.Sprintf("#@vendor:[1]#%d", place) {
				return reserved{UUID: r.UUID, Token: *r.Token}
			}
		}
		t.Fatalf("no job holds place %d", place)
		return reserved{}
	}
	places := func() int {
		db.Exec(t, `SELECT pgq.rotate()`)
		return pgqtest.Scalar[int](t, db, `SELECT places FROM pgq.concurrency_limits WHERE name = 'vendor'`)
	}
	require.Equal(t, 3, places(), "as many as the limit")
	db.Exec(t, `SELECT pgq.define_concurrency('vendor', 1)`)
	require.Equal(t, 3, places(), "handlers hold places 2 and 3")
	db.Exec(t, `SELECT pgq.define_concurrency('vendor', 2)`)
	require.Equal(t, 3, places(), "raised under them, still 3")

	require.True(t, complete(t, db, holder(3)))
	db.Exec(t, `SELECT pgq.define_concurrency('vendor', 1)`)
	require.Equal(t, 2, places(), "down to the highest place held")
	db.Exec(t, `UPDATE pgq.overlap_locks SET expires_at = now() - interval '1 minute' WHERE key = '#@vendor:[1]#2'`)
	require.Equal(t, 2, places(), "a lease that ran out still counts while its job holds it")
	// Its job no longer holds it (swept and failed for good, say): the row is left
	// until its generation goes, and counts no more.
	db.Exec(t, `UPDATE pgq.jobs SET lease_token = gen_random_uuid() WHERE uuid = $1`, holder(2).UUID)
	require.Equal(t, 1, places(), "no handler above the limit")
	require.True(t, complete(t, db, holder(1)))
	require.Equal(t, 1, places(), "never below the limit")
}

// S99: a change of a limit waits for the reserves that read it to commit, so that none
// admits a job under the higher limit once a lowering has committed; meanwhile a
// reserve leaves the limit's jobs as they were (busy).
func TestS99LoweringWaitsForReservesThatReadTheLimit(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, `SELECT pgq.define_concurrency('vendor', 2)`)
	db.Exec(t, `SELECT pgq.define_job('push', middleware => '[{"concurrency_limited": {"limit": "vendor"}}]')`)
	dispatch(t, db, `'push'`)
	reserving, err := session(t, db).Begin(ctx)
	require.NoError(t, err)
	defer reserving.Rollback(ctx)
	require.Len(t, runnable(reserveOn(t, reserving, "w1", clock())), 1)

	definer := session(t, db)
	_, err = definer.Exec(ctx, `SET lock_timeout = '200ms'`)
	require.NoError(t, err)
	_, err = definer.Exec(ctx, `SELECT pgq.define_concurrency('vendor', 3)`)
	require.Equal(t, "55P03", pgCode(err), "raising waits for the open reserve: %v", err)
	_, err = definer.Exec(ctx, `SELECT pgq.define_concurrency('vendor', 1)`)
	require.Equal(t, "55P03", pgCode(err), "lowering waits for the open reserve: %v", err)

	_, err = definer.Exec(ctx, `SET lock_timeout = 0`)
	require.NoError(t, err)
	lowered := make(chan error, 1)
	go func() {
		_, err := definer.Exec(ctx, `SELECT pgq.define_concurrency('vendor', 1)`)
		lowered <- err
	}()
	require.Eventually(t, func() bool {
		return count(t, db, `pg_locks WHERE locktype = 'advisory' AND NOT granted
			AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`) == 1
	}, 5*time.Second, 10*time.Millisecond, "the lowering waits")
	later := dispatch(t, db, `'push'`)
	require.Empty(t, reserveOn(t, db.Pool, "w2", clock()), "a reserve leaves the job as it was while the lowering waits")
	require.Equal(t, 1, count(t, db, `pgq.jobs WHERE uuid = $1 AND waits_on IS NULL AND attempts = 0 AND available_at <= now()`, later))

	require.NoError(t, reserving.Commit(ctx))
	require.NoError(t, <-lowered)
	require.Empty(t, runnable(reserveOn(t, db.Pool, "w2", clock())), "lowered to 1, with 1 running")
	require.Equal(t, 1, count(t, db, `pgq.jobs WHERE uuid = $1 AND waits_on = '@vendor'`, later))
}

// S99: a raise of a limit wakes the jobs that a reserve still open when it began left
// waiting: it waits for that reserve's commit, then wakes them.
func TestS99RaiseWakesJobsAnOpenReserveLeftWaiting(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, `SELECT pgq.define_concurrency('vendor', 1)`)
	db.Exec(t, `SELECT pgq.define_job('push', middleware => '[{"concurrency_limited": {"limit": "vendor"}}]')`)
	dispatch(t, db, `'push'`)
	require.Len(t, runnable(reserveOn(t, db.Pool, "w1", clock())), 1)
	waiting := dispatch(t, db, `'push'`)
	reserving, err := session(t, db).Begin(ctx)
	require.NoError(t, err)
	defer reserving.Rollback(ctx)
	require.Empty(t, runnable(reserveOn(t, reserving, "w2", clock())), "the limit is full")
	raised := runBeside(t, db, `SELECT pgq.define_concurrency('vendor', 2)`)
	require.NoError(t, reserving.Commit(ctx))
	require.NoError(t, <-raised)
	got := runnable(reserveOn(t, db.Pool, "w3", clock()))
	require.Len(t, got, 1, "the raise woke the job the reserve left waiting")
	require.Equal(t, waiting, got[0].UUID)
}

// S99 under concurrency: while handlers hold places above a lowered limit, the reserves
// that meet its key count its handlers one after another: eight sessions reserving at
// once start no more jobs than the limit has room for, though more places under it are
// free.
func TestS99LoweredLimitHoldsUnderConcurrentReserves(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, `SELECT pgq.define_concurrency('vendor', 4)`)
	db.Exec(t, `SELECT pgq.define_job('push', middleware => '[{"concurrency_limited": {"limit": "vendor"}}]')`)
	for i := 0; i < 4; i++ {
		dispatch(t, db, `'push'`)
	}
	running := runnable(reserveOn(t, db.Pool, "w", clock()))
	require.Len(t, running, 4)
	db.Exec(t, `SELECT pgq.define_concurrency('vendor', 3)`)
	for _, r := range running {
		if r.Overlap[0] == "#@vendor#1" || r.Overlap[0] == "#@vendor#2" {
			require.True(t, complete(t, db, reserved{UUID: r.UUID, Token: *r.Token}))
		}
	}
	for i := 0; i < 40; i++ {
		dispatch(t, db, `'push'`)
	}
	total := reserveAtOnce(t, db, 8)
	require.Equal(t, 1, total, "places 3 and 4 are held: room for one under a limit of 3")
	require.Equal(t, 3, count(t, db, `pgq.overlap_locks WHERE key LIKE '#@vendor#%' AND expires_at > now()`))
}

// S99: a job whose key of a named limit was stored without its '@' (by the functions of
// an earlier release, during an upgrade) counts in the named limit's places all the
// same: its key is computed again at reserve.
func TestS99KeyStoredWithoutItsAtIsComputedAgain(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, `SELECT pgq.define_concurrency('vendor', 1)`)
	db.Exec(t, `SELECT pgq.define_job('push', middleware => '[{"concurrency_limited": {"limit": "vendor"}}]')`)
	dispatch(t, db, `'push'`)
	require.Len(t, runnable(reserveOn(t, db.Pool, "w1", clock())), 1)
	old := dispatch(t, db, `'push'`)
	db.Exec(t, `UPDATE pgq.jobs SET middleware_keys = '["vendor"]' WHERE uuid = $1`, old)
	require.Empty(t, runnable(reserveOn(t, db.Pool, "w1", clock())), "one runs under a limit of 1")
	require.Equal(t, 1, count(t, db, `pgq.jobs WHERE uuid = $1 AND waits_on = '@vendor'`, old))
}
