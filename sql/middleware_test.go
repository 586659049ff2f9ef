package sql_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pgq-dev/pgq/internal/pgqtest"
)

// picked is one row of pgq.reserve as a worker session sees it.
type picked struct {
	UUID    uuid.UUID
	Token   *uuid.UUID
	Pickup  *string
	Note    *string
	Overlap []string
}

// session is a worker's session connection: overlap advisory locks belong to it.
func session(t *testing.T, db *pgqtest.DB) *pgx.Conn {
	t.Helper()
	c, err := pgx.Connect(ctx, db.URL)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

func reserveOn(t *testing.T, c interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}, worker string, at time.Time) []picked {
	t.Helper()
	rows, err := c.Query(ctx, `SELECT uuid, lease_token, pickup, pickup_note, overlap_keys FROM pgq.reserve($1, '{default}', 10, 1, $2)`, worker, at)
	require.NoError(t, err)
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (picked, error) {
		var p picked
		return p, r.Scan(&p.UUID, &p.Token, &p.Pickup, &p.Note, &p.Overlap)
	})
	require.NoError(t, err)
	return out
}

func runnable(ps []picked) []picked {
	var out []picked
	for _, p := range ps {
		if p.Pickup == nil {
			out = append(out, p)
		}
	}
	return out
}

// S26, S34: at most one job with an overlap key runs at a time, across workers. The
// lock is a lease: the reserving session may drop and the key stays held; the job's
// outcome releases it; without a heartbeat it runs out after pgq._overlap_ttl() (10 s),
// and a heartbeat renews it.
func TestS26S34WithoutOverlapping(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, `SELECT pgq.define_job('sync_inventory', tries => 5, middleware => '[
	    {"without_overlapping": {"by": ["product_id"], "release_after": 0}}]')`)
	first := dispatch(t, db, `'sync_inventory', '{"product_id": 88}'`)
	second := dispatch(t, db, `'sync_inventory', '{"product_id": 88}'`)
	other := dispatch(t, db, `'sync_inventory', '{"product_id": 89}'`)
	a, b := session(t, db), session(t, db)
	now := clock()

	got := reserveOn(t, a, "A", now)
	require.Len(t, got, 3)
	require.Equal(t, first, got[0].UUID)
	require.Equal(t, []string{"sync_inventory:[88]"}, got[0].Overlap)
	require.Equal(t, "turned_away", *got[1].Pickup, "the same call does not take the key twice")
	require.Equal(t, "turned away by without_overlapping (key sync_inventory:[88]), released for 0s", *got[1].Note)
	require.Equal(t, other, got[2].UUID)
	require.Nil(t, got[2].Pickup)

	require.Equal(t, "turned_away", *reserveOn(t, b, "B", now)[0].Pickup, "another worker is turned away too")
	var holder string
	var until time.Time
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT worker, expires_at FROM pgq.locks WHERE kind = 'overlap' AND key = 'sync_inventory:[88]'`).Scan(&holder, &until))
	require.Equal(t, "A", holder)
	require.WithinDuration(t, now.Add(10*time.Second), until, time.Millisecond, "a lease of pgq._overlap_ttl()")

	t.Run("S34/session_lost_keeps_the_key", func(t *testing.T) {
		require.NoError(t, a.Close(ctx)) // A's reserving session drops while A's handler runs on
		require.Equal(t, "turned_away", *reserveOn(t, b, "B", now.Add(time.Second))[0].Pickup)
	})
	t.Run("S34/heartbeat_renews_the_lease", func(t *testing.T) {
		require.Equal(t, 1, count(t, db, "pgq.heartbeat(ARRAY[$1::uuid], ARRAY[$2::uuid], $3)", first, *got[0].Token, now.Add(5*time.Second)))
		require.Equal(t, "turned_away", *reserveOn(t, b, "B", now.Add(12*time.Second))[0].Pickup, "renewed at +5 s: held until +15 s")
	})
	t.Run("S26/outcome_releases_the_key", func(t *testing.T) {
		require.Equal(t, 1, count(t, db, "pgq.complete(ARRAY[$1::uuid], ARRAY[$2::uuid])", first, *got[0].Token))
		got := runnable(reserveOn(t, b, "B", now.Add(13*time.Second)))
		require.Len(t, got, 1)
		require.Equal(t, second, got[0].UUID)
		require.Equal(t, []string{"turned_away", "turned_away", "turned_away", "turned_away"}, outcomes(t, db, second)[0:4])
	})
	t.Run("S34/a_dead_workers_lease_runs_out", func(t *testing.T) {
		third := dispatch(t, db, `'sync_inventory', '{"product_id": 88}'`)
		c := session(t, db)
		require.Equal(t, "turned_away", *reserveOn(t, c, "C", now.Add(22*time.Second))[0].Pickup, "B's lease: +13 s to +23 s")
		got := runnable(reserveOn(t, c, "C", now.Add(24*time.Second)))
		require.Len(t, got, 1, "B never heartbeated: its lease ran out")
		require.Equal(t, third, got[0].UUID)
	})
}

// S26, S34: a reserve takes a key over from an expired lease in the same generation
// whether that lease was written by its own transaction (an earlier reserve call of it)
// or was committed before its REPEATABLE READ snapshot. Most reserves insert their
// leases without ON CONFLICT, having seen no row at their keys; these two must not.
func TestS26S34ExpiredLeaseTakenOverInOneTransaction(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, `SELECT pgq.define_job('k', tries => 5, middleware => '[{"without_overlapping": {"by": ["n"]}}]')`)
	holder := func(key string) uuid.UUID {
		var u uuid.UUID
		require.NoError(t, db.Pool.QueryRow(ctx, `SELECT job_uuid FROM pgq.overlap_locks WHERE key = $1`, key).Scan(&u))
		return u
	}
	now := clock()
	for _, iso := range []pgx.TxIsoLevel{pgx.ReadCommitted, pgx.RepeatableRead} {
		t.Run(string(iso), func(t *testing.T) {
			first := dispatch(t, db, `'k', '{"n": 1}'`)
			second := dispatch(t, db, `'k', '{"n": 1}'`)
			tx, err := session(t, db).BeginTx(ctx, pgx.TxOptions{IsoLevel: iso})
			require.NoError(t, err)
			defer tx.Rollback(ctx)
			got := reserveOn(t, tx, "W", now)
			require.Len(t, got, 2)
			require.Equal(t, first, got[0].UUID)
			require.Nil(t, got[0].Pickup)
			require.Equal(t, "turned_away", *got[1].Pickup)

			// the first job's lease (10 s) has run out at +11 s: the second takes the key
			got = reserveOn(t, tx, "W", now.Add(11*time.Second))
			require.Len(t, got, 1)
			require.Equal(t, second, got[0].UUID)
			require.Nil(t, got[0].Pickup)
			require.Equal(t, []string{"k:[1]"}, got[0].Overlap)
			require.NoError(t, tx.Commit(ctx))
			require.Equal(t, second, holder("k:[1]"))
			require.Equal(t, 1, count(t, db, "pgq.overlap_locks WHERE key = 'k:[1]'"))
			db.Exec(t, `SELECT pgq.complete(ARRAY[$1::uuid], ARRAY[$2::uuid], $3)`, second, *got[0].Token, now.Add(11*time.Second))
			db.Exec(t, `DELETE FROM pgq.jobs`)
			now = now.Add(time.Minute)
		})
	}

	t.Run("committed_before_the_snapshot", func(t *testing.T) {
		first := dispatch(t, db, `'k', '{"n": 2}'`)
		require.Len(t, runnable(reserveOn(t, session(t, db), "W", now)), 1)
		second := dispatch(t, db, `'k', '{"n": 2}'`)
		tx, err := session(t, db).BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
		require.NoError(t, err)
		defer tx.Rollback(ctx)
		got := runnable(reserveOn(t, tx, "W", now.Add(11*time.Second)))
		require.Len(t, got, 1)
		require.Equal(t, second, got[0].UUID)
		require.NoError(t, tx.Commit(ctx))
		require.Equal(t, second, holder("k:[2]"))
		require.NotEqual(t, first, second)
	})
}

// S34: a SQL handler's transaction holds the advisory lock of its job's overlap keys,
// and a reserve that finds the lock taken turns the job away even when the key's lease
// has run out (the handler of a frozen worker may still run).
func TestS34HandlerTransactionHoldsTheKey(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, `SELECT pgq.define_job('k', tries => 3, middleware => '[{"without_overlapping": {"key": "x"}}]')`)
	dispatch(t, db, `'k'`)
	handler, err := db.Pool.Begin(ctx)
	require.NoError(t, err)
	defer handler.Rollback(ctx)
	_, err = handler.Exec(ctx, `SELECT pg_advisory_xact_lock(pgq._overlap_lock_id('k:x'))`)
	require.NoError(t, err)

	got := reserveOn(t, session(t, db), "W", clock())
	require.Len(t, got, 1)
	require.Equal(t, "turned_away", *got[0].Pickup)
	require.Zero(t, count(t, db, "pgq.overlap_locks"), "the lease taken for the test is given up again")

	require.NoError(t, handler.Rollback(ctx))
	require.Len(t, runnable(reserveOn(t, session(t, db), "W", clock())), 1, "the handler's transaction ended")
}

// S26, S34: every outcome ends the job's overlap leases in its own transaction (fail,
// release, give_back), and a lease another job took over after this one's ran out stays.
func TestS26S34OutcomesEndOverlapLeases(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, `SELECT pgq.define_job('k', tries => 5, backoff => '{0}', middleware => '[{"without_overlapping": {"by": ["n"]}}]')`)
	for _, n := range []int{1, 2, 3} {
		dispatch(t, db, fmt.Sprintf(`'k', '{"n": %d}'`, n))
	}
	now := clock()
	got := runnable(reserveOn(t, session(t, db), "W", now))
	require.Len(t, got, 3)
	leases := func() int { return count(t, db, "pgq.locks WHERE kind = 'overlap'") }
	require.Equal(t, 3, leases())
	db.Exec(t, `SELECT pgq.fail($1, $2, 'boom', as_of => $3)`, got[0].UUID, *got[0].Token, now)
	db.Exec(t, `SELECT pgq.release($1, $2, 0, as_of => $3)`, got[1].UUID, *got[1].Token, now)
	require.Equal(t, 1, leases())
	db.Exec(t, `SELECT pgq.give_back(ARRAY[$1::uuid], ARRAY[$2::uuid], 'connection lost', as_of => $3)`, got[2].UUID, *got[2].Token, now)
	require.Zero(t, leases())

	// the released job's key is taken by it again; a stale call of the old holder leaves it
	again := runnable(reserveOn(t, session(t, db), "W", now.Add(time.Second)))
	require.Len(t, again, 3)
	db.Exec(t, `SELECT pgq._release_overlap(ARRAY[$1::uuid], ARRAY['k:[1]', 'k:[2]', 'k:[3]'])`, uuid.New())
	require.Equal(t, 3, leases(), "a job that does not hold a key cannot end its lease")
}

// S27: release_after sets the bounce delay; dont_release deletes the job, recorded
// turned_away, without a failure; expire_after caps how long a holder keeps the lock.
func TestS27ReleaseAfterDontReleaseExpireAfter(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	holder := session(t, db)
	_, err := holder.Exec(ctx, `SELECT pg_advisory_lock(pgq._overlap_lock_id('shared:k'))`)
	require.NoError(t, err)
	w := session(t, db)
	now := clock()

	released := dispatch(t, db, `'j', tries => 3, middleware => '[{"without_overlapping": {"key": "k", "shared": true, "release_after": 5}}]'`)
	dropped := dispatch(t, db, `'j', middleware => '[{"without_overlapping": {"key": "k", "shared": true, "dont_release": true}}]'`)
	got := reserveOn(t, w, "W", now)
	require.Len(t, got, 2)
	require.Equal(t, "turned away by without_overlapping (key shared:k), released for 5s", *got[0].Note)
	require.Equal(t, "turned away by without_overlapping (key shared:k), deleted (dont_release)", *got[1].Note)
	due := pgqtest.Scalar[time.Time](t, db, `SELECT available_at FROM pgq.jobs WHERE uuid = $1`, released)
	require.WithinDuration(t, now.Add(5*time.Second), due, time.Millisecond)
	require.Equal(t, `{"without_overlapping": 1}`, pgqtest.Scalar[string](t, db, `SELECT turn_aways::text FROM pgq.jobs WHERE uuid = $1`, released))
	require.Equal(t, 0, count(t, db, "pgq.jobs WHERE uuid = $1", dropped))
	require.Equal(t, 0, count(t, db, "pgq.failed_jobs"))
	require.Equal(t, []string{"turned_away"}, outcomes(t, db, dropped))

	// expire_after: a holder past it loses the lease even while its handler runs and its
	// worker heartbeats: renewals stop at since + expire_after
	_, err = holder.Exec(ctx, `SELECT pg_advisory_unlock_all()`)
	require.NoError(t, err)
	dispatch(t, db, `'e', tries => 3, middleware => '[{"without_overlapping": {"key": "x", "expire_after": 12}}]'`)
	got = runnable(reserveOn(t, w, "W", now.Add(10*time.Second)))
	require.Len(t, got, 2) // the released job (now due) and the new one
	var e picked
	for _, p := range got {
		if len(p.Overlap) > 0 && p.Overlap[0] == "e:x" {
			e = p
		}
	}
	require.Equal(t, 1, count(t, db, "pgq.heartbeat(ARRAY[$1::uuid], ARRAY[$2::uuid], $3)", e.UUID, *e.Token, now.Add(18*time.Second)))
	require.WithinDuration(t, now.Add(22*time.Second), pgqtest.Scalar[time.Time](t, db, `SELECT expires_at FROM pgq.overlap_locks WHERE key = 'e:x'`),
		time.Millisecond, "renewed to since + expire_after, not to the heartbeat + 10 s")
	dispatch(t, db, `'e', tries => 3, middleware => '[{"without_overlapping": {"key": "x"}}]'`)
	require.Equal(t, "turned_away", *reserveOn(t, w, "W", now.Add(21*time.Second))[0].Pickup)
	require.Len(t, runnable(reserveOn(t, w, "W", now.Add(23*time.Second))), 1, "expire_after freed the key while its holder runs")
}

// S27, S34: reserve tells the worker, for each job it hands over to run, the largest
// expire_after of the overlap keys the job took when each key has one: its leases end
// that long after the reservation however often they are renewed, so the worker renews
// them, and cancels the handler for a renewal that failed, only while a renewal can
// still move that end. NULL when a key has no expire_after, or when the job took no key;
// the same from the set-based middleware path and the one-by-one path (a job with an
// until-processing lock).
func TestS27S34ReserveSaysHowLongOverlapLeasesNeedRenewing(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	type want struct {
		name, dispatch string
		expireAfter    *int
	}
	seconds := func(n int) *int { return &n }
	cases := []want{
		{"one key with expire_after", `'a', middleware => '[{"without_overlapping": {"key": "x", "expire_after": 5}}]'`, seconds(5)},
		{"two keys, each with one", `'b', middleware => '[{"without_overlapping": {"key": "x", "expire_after": 3}},
		                                                  {"without_overlapping": {"key": "y", "expire_after": 7}}]'`, seconds(7)},
		{"a key without", `'c', middleware => '[{"without_overlapping": {"key": "x", "expire_after": 3}},
		                                        {"without_overlapping": {"key": "y"}}]'`, nil},
		{"no key", `'d'`, nil},
		{"one by one", `'e', unique_key => 'u', unique_until => 'processing',
		                middleware => '[{"without_overlapping": {"key": "x", "expire_after": 4}}]'`, seconds(4)},
		{"one by one, a key without", `'f', unique_key => 'v', unique_until => 'processing',
		                               middleware => '[{"without_overlapping": {"key": "x"}}]'`, nil},
	}
	names := map[uuid.UUID]string{}
	expected := map[string]*int{}
	for _, c := range cases {
		names[dispatch(t, db, c.dispatch)] = c.name
		expected[c.name] = c.expireAfter
	}
	rows, err := session(t, db).Query(ctx, `SELECT uuid, pickup, overlap_keys, overlap_expire_after FROM pgq.reserve('W', '{default}', 10, 1, $1)`, clock())
	require.NoError(t, err)
	type row struct {
		UUID        uuid.UUID
		Pickup      *string
		Keys        []string
		ExpireAfter *int
	}
	got, err := pgx.CollectRows(rows, pgx.RowToStructByPos[row])
	require.NoError(t, err)
	require.Len(t, got, len(cases))
	for _, r := range got {
		name := names[r.UUID]
		require.Nil(t, r.Pickup, "%s: runnable (each job's keys are its own class's)", name)
		require.Equal(t, expected[name], r.ExpireAfter, name)
	}
}

// S28: a rate limit's budget goes to a batch's jobs in pick order, also when some of
// them pass pickup checks first (a unique lock held until processing) and the others go
// straight to admission.
func TestS28BudgetInPickOrderAcrossPickupChecks(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, `SELECT pgq.define_limit('three', 3, '1 minute')`)
	var order []uuid.UUID
	for i := range 6 {
		unique := ""
		if i%2 == 0 {
			unique = fmt.Sprintf(`unique_key => 'u%d', unique_until => 'processing',`, i)
		}
		order = append(order, dispatch(t, db, fmt.Sprintf(`'call', '{}', %s
		    middleware => '[{"rate_limited": {"limit": "three"}}]'`, unique)))
	}
	got := reserveOn(t, session(t, db), "w", clock())
	require.Len(t, got, 6)
	for i, p := range got {
		require.Equal(t, order[i], p.UUID, "reported in pick order")
		if i < 3 {
			require.Nil(t, p.Pickup, "job %d is within the budget", i)
		} else {
			require.Equal(t, "turned_away", *p.Pickup, "job %d is past the budget", i)
		}
	}
}

// S28: a named limit is one budget for every worker; over budget the job is released
// until the window resets plus 3 s, without its handler; the count is exact under
// concurrency.
func TestS28RateLimited(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, `SELECT pgq.define_limit('webhooks', 1, '1 minute')`)
	first := dispatch(t, db, `'push_webhook', '{"order": 1}', middleware => '[{"rate_limited": {"limit": "webhooks"}}]'`)
	second := dispatch(t, db, `'push_webhook', '{"order": 2}', tries => 3, middleware => '[{"rate_limited": {"limit": "webhooks"}}]'`)
	now := clock()
	got := reserve(t, db, "w1", now)
	require.Len(t, got, 1)
	require.Equal(t, first, got[0].UUID)
	var attempts int
	var wait time.Duration
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT attempts, available_at - $2 FROM pgq.jobs WHERE uuid = $1`, second, now).Scan(&attempts, &wait))
	require.Equal(t, 1, attempts, "the turn-away used an attempt")
	require.Equal(t, 63*time.Second, wait, "window (60 s) + 3 s")
	var mw, note string
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT middleware, exception FROM pgq.attempts WHERE job_uuid = $1`, second).Scan(&mw, &note))
	require.Equal(t, "rate_limited", mw)
	require.Contains(t, note, "limit webhooks, key webhooks: 1 per 00:01:00 used")
	require.Equal(t, "exhausted", pgqtest.Scalar[string](t, db, `SELECT state FROM pgq.limits WHERE name = 'webhooks'`))

	got = reserve(t, db, "w1", now.Add(63*time.Second))
	require.Len(t, got, 1, "a new window")
	require.Equal(t, second, got[0].UUID)

	// exact under concurrency: 8 sessions reserving 40 jobs against 5 per minute
	db2 := pgqtest.New(t)
	db2.Exec(t, `SELECT pgq.define_limit('vendor_api', 5, '1 minute')`)
	db2.Exec(t, `SELECT pgq.dispatch_many('call', array_agg('{}'::jsonb), middleware => '[{"rate_limited": {"limit": "vendor_api"}}]') FROM generate_series(1, 40)`)
	var mu sync.Mutex
	ran := 0
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			rows, err := db2.Pool.Query(ctx, `SELECT count(*) FILTER (WHERE pickup IS NULL) FROM pgq.reserve('w', '{default}', 10)`)
			if err != nil {
				t.Error(err)
				return
			}
			n, err := pgx.CollectExactlyOneRow(rows, pgx.RowTo[int64])
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			ran += int(n)
			mu.Unlock()
		})
	}
	wg.Wait()
	require.Equal(t, 5, ran)

	// per-key budgets with by
	db2.Exec(t, `SELECT pgq.define_limit('per_shop', 1, '1 hour')`)
	for _, shop := range []string{"1", "2", "1"} {
		dispatch(t, db2, `'shop_sync', '{"shop": `+shop+`}', queue => 'shops', middleware => '[{"rate_limited": {"limit": "per_shop", "by": ["shop"]}}]'`)
	}
	rows, err := db2.Pool.Query(ctx, `SELECT count(*) FILTER (WHERE pickup IS NULL) FROM pgq.reserve('w', '{shops}', 10)`)
	require.NoError(t, err)
	n, err := pgx.CollectExactlyOneRow(rows, pgx.RowTo[int64])
	require.NoError(t, err)
	require.Equal(t, int64(2), n, "one per shop")
}

// S29: after max_exceptions exceptions within decay the circuit opens and jobs with its
// key are released until it closes plus 3 s, without running; while catching, the
// breaker releases with its own backoff instead of failing; a success clears it.
func TestS29ThrottlesExceptions(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, `SELECT pgq.define_job('call_vendor', tries => 10, middleware => '[
	    {"throttles_exceptions": {"max_exceptions": 2, "decay": 60, "backoff": 0}}]')`)
	id := dispatch(t, db, `'call_vendor', '{"order": 1}'`)
	now := clock()
	r := fail(t, db, reserveOne(t, db, now), "vendor 500", false, now)
	require.False(t, r.Final)
	require.Equal(t, 0, *r.Delay, "the breaker's backoff, not the job's")
	fail(t, db, reserveOne(t, db, now), "vendor 500", false, now)
	require.Empty(t, reserve(t, db, "w1", now), "third attempt: the circuit is open")
	require.Equal(t, []string{"failed", "failed", "turned_away"}, outcomes(t, db, id))
	var wait time.Duration
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT available_at - $2 FROM pgq.jobs WHERE uuid = $1`, id, now).Scan(&wait))
	require.Equal(t, 63*time.Second, wait)
	require.Equal(t, "open", pgqtest.Scalar[string](t, db, `SELECT state FROM pgq.limits WHERE key = 'call_vendor'`))
	require.Equal(t, 0, pgqtest.Scalar[int](t, db, `SELECT exceptions FROM pgq.jobs WHERE uuid = $1`, id), "caught by the breaker, not counted for max_exceptions")

	// after decay the circuit lets a job through; its success clears the count
	j := reserveOne(t, db, now.Add(64*time.Second))
	require.True(t, complete(t, db, j))
	require.Equal(t, 0, count(t, db, "pgq.circuits"))

	// when: only matching exceptions are caught; others fail normally
	other := dispatch(t, db, `'strict', tries => 1, middleware => '[{"throttles_exceptions": {"max_exceptions": 5, "when": "^vendor"}}]'`)
	r = fail(t, db, reserveOne(t, db, now), "bug in our code", false, now)
	require.True(t, r.Final, "not caught by the breaker")
	require.Equal(t, 1, count(t, db, "pgq.failed_jobs WHERE uuid = $1", other))
}

// S8 with turn-aways: two turn-aways then an exception wait backoff[2]. S12 detail: a job
// exhausted by turn-aways says so, with the last real exception when there was one.
func TestS8S12TurnAwaysInBackoffAndExhaustion(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	holder := session(t, db)
	_, err := holder.Exec(ctx, `SELECT pg_advisory_lock(pgq._overlap_lock_id('sync_inventory:[88]'))`)
	require.NoError(t, err)
	w := session(t, db)
	mw := `'[{"without_overlapping": {"by": ["product_id"]}}]'`

	// Each part reads the clock after its dispatch: a reserve as of a moment before the
	// job's available_at finds nothing, and on a loaded machine the first part can take
	// longer than clock()'s second of slack.
	shifted := dispatch(t, db, `'sync_inventory', '{"product_id": 88}', tries => 5, backoff => '{10,60,300}', middleware => `+mw)
	now := clock()
	reserveOn(t, w, "W", now)
	reserveOn(t, w, "W", now)
	_, err = holder.Exec(ctx, `SELECT pg_advisory_unlock_all()`)
	require.NoError(t, err)
	j := runnable(reserveOn(t, w, "W", now))
	require.Len(t, j, 1)
	delay := pgqtest.Scalar[int](t, db, `SELECT delay FROM pgq.fail($1, $2, 'vendor 500', as_of => $3)`, shifted, *j[0].Token, now)
	require.Equal(t, 300, delay, "S8: attempt 3 uses backoff[3rd entry]")

	// exhausted after nothing but turn-aways
	_, err = w.Exec(ctx, `SELECT pg_advisory_unlock_all()`)
	require.NoError(t, err)
	_, err = holder.Exec(ctx, `SELECT pg_advisory_lock(pgq._overlap_lock_id('sync_inventory:[7]'))`)
	require.NoError(t, err)
	never := dispatch(t, db, `'sync_inventory', '{"product_id": 7}', tries => 3, middleware => `+mw)
	now = clock()
	for range 3 {
		reserveOn(t, w, "W", now)
	}
	got := reserveOn(t, w, "W", now)
	require.Equal(t, "exhausted", *got[0].Pickup)
	require.Equal(t, "MaxAttemptsExceeded: sync_inventory attempted 3 times; handler never ran: turned away 3× by without_overlapping",
		pgqtest.Scalar[string](t, db, `SELECT exception FROM pgq.failed_jobs WHERE uuid = $1`, never))
}

// Middleware is validated at dispatch and define_job (S4): clear errors, nothing written.
func TestS4MiddlewareValidation(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	for _, tc := range []struct{ mw, msg string }{
		{`{"without_overlapping": {}}`, "middleware must be a JSON array"},
		{`[{"without_overlapping": {}, "rate_limited": {}}]`, "each middleware must be an object with one key"},
		{`[{"retry_forever": {}}]`, "unknown middleware 'retry_forever'"},
		{`[{"without_overlapping": {"release": 5}}]`, "unknown setting(s) release of without_overlapping"},
		{`[{"without_overlapping": {"by": []}}]`, `"by" must be an array of 1 to 8 payload field names`},
		{`[{"without_overlapping": {"release_after": -1}}]`, "bad number"},
		{`[{"throttles_exceptions": {"decay": 0}}]`, "bad number"},
		{`[{"rate_limited": {"limit": "nope"}}]`, "rate_limited names limit 'nope', which is not defined"},
		{`[{"throttles_exceptions": {"when": "("}}]`, `"when" is not a valid regular expression`},
	} {
		_, err := db.Pool.Exec(ctx, `SELECT pgq.dispatch('j', middleware => $1::jsonb)`, tc.mw)
		require.Equal(t, "22023", pgCode(err), tc.mw)
		require.Contains(t, err.Error(), tc.msg)
		_, err = db.Pool.Exec(ctx, `SELECT pgq.define_job('j', middleware => $1::jsonb)`, tc.mw)
		require.Equal(t, "22023", pgCode(err), tc.mw)
	}
	require.Equal(t, 0, count(t, db, "pgq.jobs"))
	require.Equal(t, 0, count(t, db, "pgq.job_classes"))
	// S1: a class's middleware is frozen into the job
	db.Exec(t, `SELECT pgq.define_job('k', middleware => '[{"without_overlapping": {"key": "a"}}]')`)
	id := dispatch(t, db, `'k'`)
	db.Exec(t, `SELECT pgq.define_job('k')`)
	require.Equal(t, `[{"without_overlapping": {"key": "a"}}]`, pgqtest.Scalar[string](t, db, `SELECT middleware::text FROM pgq.jobs WHERE uuid = $1`, id))
}

// S67: pgq.reserve spends at most one transaction id per call and no subtransaction
// writes, however many middleware jobs it admits or turns away. A row version carries
// the id of the (sub)transaction that wrote it as xmin, so every row the call wrote
// (the jobs reserved or turned away, their attempt records, the overlap leases, the
// rate-limit window) must carry the call's own transaction id: a subtransaction that
// wrote would have taken an id of its own. Other sessions cannot enter this check.
// The batch mixes rate-limited jobs over their budget, overlap jobs sharing keys and
// jobs behind an open circuit, so that admissions and turn-aways both write.
func TestS67ReserveSpendsOneTransactionID(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, `SELECT pgq.define_limit('s67', 120, '1 hour')`)
	db.Exec(t, `SELECT pgq.dispatch_many('limited', array_agg(jsonb_build_object('i', i)),
	    middleware => '[{"rate_limited": {"limit": "s67"}}]') FROM generate_series(1, 200) i`)
	db.Exec(t, `SELECT pgq.dispatch_many('overlapping', array_agg(jsonb_build_object('k', i % 150)),
	    middleware => '[{"without_overlapping": {"by": ["k"]}}]') FROM generate_series(1, 200) i`)
	db.Exec(t, `SELECT pgq.dispatch_many('throttled', array_agg(jsonb_build_object('c', i % 2)),
	    middleware => '[{"throttles_exceptions": {"by": ["c"]}}]') FROM generate_series(1, 200) i`)
	// the circuit of c = 1 is open: 10 exceptions within its 600 s
	db.Exec(t, `INSERT INTO pgq.circuits (key, failures, window_start, decay, max_exceptions)
	    VALUES ('throttled:[1]', 10, now(), 600, 10)`)
	// Dispatch stored every job's middleware keys; half the overlap jobs lose them, as jobs
	// dispatched before migration 16 or re-queued by an operation have none: reserve
	// computes those, with the same result.
	require.Equal(t, 600, pgqtest.Scalar[int](t, db, `SELECT count(*)::int FROM pgq.jobs WHERE jsonb_array_length(middleware_keys) = 1`))
	require.Equal(t, `["overlapping:[7]"]`, pgqtest.Scalar[string](t, db,
		`SELECT middleware_keys::text FROM pgq.jobs WHERE job = 'overlapping' AND payload = '{"k": 7}' LIMIT 1`))
	db.Exec(t, `UPDATE pgq.jobs SET middleware_keys = NULL WHERE job = 'overlapping' AND (payload ->> 'k')::int % 2 = 0`)

	c := session(t, db)
	tx, err := c.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(ctx)
	rows, err := tx.Query(ctx, `SELECT coalesce(pickup::text, 'run') || ' ' || job FROM pgq.reserve('w', '{default}', 1000)`)
	require.NoError(t, err)
	got := map[string]int{}
	var k string
	_, err = pgx.ForEachRow(rows, []any{&k}, func() error { got[k]++; return nil })
	require.NoError(t, err)
	require.Equal(t, map[string]int{
		"run limited": 120, "turned_away limited": 80, // the budget, in one call
		"run overlapping": 150, "turned_away overlapping": 50, // one job per key
		"run throttled": 100, "turned_away throttled": 100, // the open circuit's half
	}, got)

	// Every row of these tables was written by the call: all 600 jobs were reserved or
	// turned away, and nothing had made attempts, leases or windows before it.
	var written, xids, hits int
	var own bool
	require.NoError(t, tx.QueryRow(ctx, `SELECT count(*)::int, count(DISTINCT w.xmin::text)::int, bool_and(w.xmin = xid(pg_current_xact_id()))
	    FROM (SELECT xmin FROM pgq.jobs UNION ALL SELECT xmin FROM pgq.attempts
	          UNION ALL SELECT xmin FROM pgq.overlap_locks UNION ALL SELECT xmin FROM pgq.rate_limit_windows) w`).Scan(&written, &xids, &own))
	require.Equal(t, 600+(80+50+100)+150+1, written, "jobs, turn-away records, overlap leases, the window")
	require.Equal(t, 1, xids, "one transaction id for the whole call: no subtransaction wrote")
	require.True(t, own, "and it is the call's transaction's own")
	require.NoError(t, tx.QueryRow(ctx, `SELECT hits FROM pgq.rate_limit_windows WHERE limit_name = 's67'`).Scan(&hits))
	require.Equal(t, 120, hits, "the window counts the hits admitted")
}

// S69 (and S68 from SQL): any query's rows become jobs with one pgq.dispatch_many, and
// rows written by COPY into the staging table become jobs with pgq.dispatch_staged,
// which takes only the rows staged since its last call; both in the caller's
// transaction, uuids in row order.
func TestS68S69LoadingJobsFromSQL(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, `CREATE TABLE public.products (id int PRIMARY KEY); INSERT INTO public.products SELECT generate_series(1, 500)`)

	c := session(t, db)
	tx, err := c.Begin(ctx)
	require.NoError(t, err)
	var ids []uuid.UUID
	require.NoError(t, tx.QueryRow(ctx, `SELECT array_agg(u) FROM pgq.dispatch_many('reindex',
	    ARRAY(SELECT jsonb_build_object('product_id', id) FROM public.products ORDER BY id), queue => 'bulk') u`).Scan(&ids))
	require.Len(t, ids, 500)
	require.NoError(t, tx.Rollback(ctx))
	require.Equal(t, 0, pgqtest.Scalar[int](t, db, `SELECT count(*)::int FROM pgq.jobs`), "rolled back with the caller's transaction")

	tx, err = c.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(ctx)
	var table string
	require.NoError(t, tx.QueryRow(ctx, `SELECT pgq.stage_dispatch()`).Scan(&table))
	require.Equal(t, "pg_temp.pgq_staged_payloads", table)
	stage := func(from, to int) {
		t.Helper()
		n, err := tx.CopyFrom(ctx, pgx.Identifier{"pg_temp", "pgq_staged_payloads"}, []string{"payload"},
			pgx.CopyFromFunc(func() func() ([]any, error) {
				i := from - 1
				return func() ([]any, error) {
					if i++; i > to {
						return nil, nil
					}
					return []any{fmt.Sprintf(`{"product_id": %d}`, i)}, nil
				}
			}()))
		require.NoError(t, err)
		require.EqualValues(t, to-from+1, n)
	}
	stage(1, 300)
	require.NoError(t, tx.QueryRow(ctx, `SELECT pgq.dispatch_staged('reindex', queue => 'bulk', tries => 2)`).Scan(&ids))
	require.Len(t, ids, 300)
	stage(301, 500)
	var more []uuid.UUID
	require.NoError(t, tx.QueryRow(ctx, `SELECT pgq.dispatch_staged('reindex', queue => 'bulk', tries => 2)`).Scan(&more))
	require.Len(t, more, 200, "only the rows staged since the last call")
	var inOrder int
	// Read through the views: 500 jobs of one dispatch may be kept as a load (S85).
	require.NoError(t, tx.QueryRow(ctx, `SELECT count(*)::int FROM unnest($1::uuid[]) WITH ORDINALITY u(id, n)
	    JOIN pgq.ready j ON j.uuid = u.id AND (j.payload ->> 'product_id')::int = u.n AND j.queue = 'bulk'
	    JOIN pgq.job_settings s ON s.uuid = u.id AND s.tries = 2`,
		append(ids, more...)).Scan(&inOrder))
	require.Equal(t, 500, inOrder, "uuids in row order, options applied")

	// The rows are not deleted: a mark local to the transaction says how far the last
	// call read. A rollback to a savepoint takes back its jobs and the mark together,
	// so the same rows are queued again, once.
	stage(501, 510)
	_, err = tx.Exec(ctx, `SAVEPOINT s`)
	require.NoError(t, err)
	require.NoError(t, tx.QueryRow(ctx, `SELECT pgq.dispatch_staged('reindex', queue => 'bulk')`).Scan(&more))
	require.Len(t, more, 10)
	_, err = tx.Exec(ctx, `ROLLBACK TO SAVEPOINT s`)
	require.NoError(t, err)
	require.NoError(t, tx.QueryRow(ctx, `SELECT pgq.dispatch_staged('reindex', queue => 'bulk')`).Scan(&more))
	require.Len(t, more, 10, "the rows of the rolled-back call, queued again")
	require.NoError(t, tx.QueryRow(ctx, `SELECT count(*)::int FROM pgq.ready WHERE (payload ->> 'product_id')::int > 500`).Scan(&inOrder))
	require.Equal(t, 10, inOrder, "each once")
	require.NoError(t, tx.Commit(ctx))

	// The next transaction starts with an empty table and no mark.
	tx, err = c.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(ctx)
	require.NoError(t, tx.QueryRow(ctx, `SELECT pgq.dispatch_staged('reindex', queue => 'bulk')`).Scan(&more))
	require.Empty(t, more, "the committed rows went with the commit")
	stage(1, 3)
	require.NoError(t, tx.QueryRow(ctx, `SELECT pgq.dispatch_staged('reindex', queue => 'bulk')`).Scan(&more))
	require.Len(t, more, 3, "read from the table's first row again")
	stage(4, 4)
	_, err = tx.Exec(ctx, `SELECT pgq.dispatch_staged('reindex', timeout => 0)`)
	require.Equal(t, "22023", pgCode(err), "checked as pgq.dispatch checks")
}
