package sql_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/pgq-dev/pgq/internal/pgqtest"
)

// maybeDispatch is dispatch for calls that may be dropped (NULL).
func maybeDispatch(t *testing.T, db *pgqtest.DB, args string) *uuid.UUID {
	t.Helper()
	return pgqtest.Scalar[*uuid.UUID](t, db, "SELECT pgq.dispatch("+args+")")
}

func count(t *testing.T, db *pgqtest.DB, sql string, args ...any) int {
	t.Helper()
	return pgqtest.Scalar[int](t, db, "SELECT count(*)::int FROM "+sql, args...)
}

// S21: a unique dispatch takes its lock in the dispatching transaction; a second one
// while it is held is dropped (NULL); the lock is kept through retries, backoffs and
// releases, and released after success or final failure. A rolled-back dispatch leaves
// no lock (Laravel's cache lock survives a rollback).
func TestS21ShouldBeUnique(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, `SELECT pgq.define_job('sync_invoices', tries => 4, backoff => '{60,300,900}',
	                                  unique_for => '1 hour', unique_by => '{account_id}')`)
	now := clock()

	tx, err := db.Pool.Begin(ctx)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `SELECT pgq.dispatch('sync_invoices', '{"account_id": 7}')`)
	require.NoError(t, err)
	require.NoError(t, tx.Rollback(ctx))
	require.Equal(t, 0, count(t, db, "pgq.unique_locks"), "a rolled-back dispatch leaves no lock")

	first := maybeDispatch(t, db, `'sync_invoices', '{"account_id": 7}'`)
	require.NotNil(t, first)
	require.Nil(t, maybeDispatch(t, db, `'sync_invoices', '{"account_id": 7, "extra": 1}'`), "same key: dropped")
	require.NotNil(t, maybeDispatch(t, db, `'sync_invoices', '{"account_id": 8}'`), "another key")
	require.Equal(t, "sync_invoices:[7]", pgqtest.Scalar[string](t, db, `SELECT key FROM pgq.locks WHERE job_uuid = $1`, *first))

	// kept through an exception and its backoff, and through a manual release
	j := reserve(t, db, "w1", now)
	require.Len(t, j, 2)
	for _, r := range j {
		if r.UUID == *first {
			require.False(t, fail(t, db, r, "vendor 500", false, now).Final)
		} else {
			release(t, db, r, 0, now)
		}
	}
	require.Nil(t, maybeDispatch(t, db, `'sync_invoices', '{"account_id": 7}'`), "held during the backoff")
	require.Nil(t, maybeDispatch(t, db, `'sync_invoices', '{"account_id": 8}'`), "held after a release")

	// released after the attempt that succeeds
	r := reserve(t, db, "w1", now.Add(61*time.Second))
	require.Len(t, r, 2)
	for _, x := range r {
		require.True(t, complete(t, db, x))
	}
	require.Equal(t, 0, count(t, db, "pgq.unique_locks"))
	second := maybeDispatch(t, db, `'sync_invoices', '{"account_id": 7}'`)
	require.NotNil(t, second, "free again after success")

	// released when the job fails for good
	db.Exec(t, `UPDATE pgq.jobs SET tries = 1`)
	fail(t, db, reserveOne(t, db, clock()), "fatal", false, clock())
	require.Equal(t, 0, count(t, db, "pgq.unique_locks"))
	require.NotNil(t, maybeDispatch(t, db, `'sync_invoices', '{"account_id": 7}'`))

	// a payload without the unique_by field is a clear error
	_, err = db.Pool.Exec(ctx, `SELECT pgq.dispatch('sync_invoices', '{"other": 1}')`)
	require.Equal(t, "22023", pgCode(err))
	require.Contains(t, err.Error(), "lacks field 'account_id'")

	// a per-dispatch key, without expiry
	require.NotNil(t, maybeDispatch(t, db, `'mail', unique_key => 'user-5'`))
	require.Nil(t, maybeDispatch(t, db, `'mail', unique_key => 'user-5'`))
	require.Nil(t, pgqtest.Scalar[*time.Time](t, db, `SELECT expires_at FROM pgq.unique_locks WHERE key = 'mail:user-5'`))
}

// S22: every release is owner-checked. unique_for expires during a backoff, a second
// copy takes the lock, and the first copy's success leaves that lock alone: a third
// dispatch is still dropped.
func TestS22OwnerCheckedRelease(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	now := clock()
	a := *maybeDispatch(t, db, `'sync', unique_key => 'acct-7', unique_for => '30 seconds', tries => 3, backoff => '{60}'`)
	fail(t, db, reserveOne(t, db, now), "vendor 500", false, now)
	db.Exec(t, `UPDATE pgq.unique_locks SET expires_at = now() - interval '1 second'`) // 30 s passed in the backoff

	b := maybeDispatch(t, db, `'sync', unique_key => 'acct-7', unique_for => '30 seconds', delay => '1 hour'`)
	require.NotNil(t, b, "the expired lock is taken over by a second copy")
	require.Equal(t, *b, pgqtest.Scalar[uuid.UUID](t, db, `SELECT job_uuid FROM pgq.unique_locks`))

	ja := reserve(t, db, "w1", now.Add(61*time.Second))
	require.Len(t, ja, 1)
	require.Equal(t, a, ja[0].UUID)
	require.True(t, complete(t, db, ja[0]))
	require.Equal(t, *b, pgqtest.Scalar[uuid.UUID](t, db, `SELECT job_uuid FROM pgq.unique_locks`), "the first copy left the second's lock alone")
	require.Nil(t, maybeDispatch(t, db, `'sync', unique_key => 'acct-7', unique_for => '30 seconds'`), "third dispatch dropped")

	// final failure of a copy that no longer owns the lock leaves it too
	c := *maybeDispatch(t, db, `'other', unique_key => 'k', unique_for => '30 seconds', tries => 1`)
	db.Exec(t, `UPDATE pgq.unique_locks SET expires_at = now() - interval '1 second' WHERE key = 'other:k'`)
	d := maybeDispatch(t, db, `'other', unique_key => 'k', delay => '1 hour'`)
	require.NotNil(t, d)
	jc := reserve(t, db, "w1", clock())
	require.Len(t, jc, 1)
	require.Equal(t, c, jc[0].UUID)
	require.True(t, fail(t, db, jc[0], "fatal", false, clock()).Final)
	require.Equal(t, *d, pgqtest.Scalar[uuid.UUID](t, db, `SELECT job_uuid FROM pgq.unique_locks WHERE key = 'other:k'`))

	// and retry_failed of that copy cannot free the newer copy's lock when it succeeds
	db.Exec(t, `SELECT pgq.retry_failed($1)`, c)
	jc = reserve(t, db, "w1", clock())
	require.Len(t, jc, 1)
	require.True(t, complete(t, db, jc[0]))
	require.Equal(t, *d, pgqtest.Scalar[uuid.UUID](t, db, `SELECT job_uuid FROM pgq.unique_locks WHERE key = 'other:k'`))
}

// S23: an until-processing lock is released (owner-checked) right before the handler
// first runs, so a fresh copy can be queued while the first retries; an exhausted first
// pickup releases it too (beyond Laravel, which strands it).
func TestS23UniqueUntilProcessing(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, `SELECT pgq.define_job('recompute_report', tries => 3, backoff => '{60}',
	                                  unique_for => '40 minutes', unique_until => 'processing', unique_by => '{account_id}')`)
	now := clock()
	first := *maybeDispatch(t, db, `'recompute_report', '{"account_id": 7}'`)
	require.Nil(t, maybeDispatch(t, db, `'recompute_report', '{"account_id": 7}'`), "held while waiting")
	j := reserveOne(t, db, now)
	require.Equal(t, 0, count(t, db, "pgq.unique_locks"), "released as the handler starts")
	fail(t, db, j, "timeout talking to the warehouse", false, now)

	fresh := maybeDispatch(t, db, `'recompute_report', '{"account_id": 7}'`)
	require.NotNil(t, fresh, "a fresh copy goes through while the first waits its backoff")
	require.Equal(t, 2, count(t, db, "pgq.jobs"))

	// the retry's release is owner-checked: it leaves the fresh copy's lock alone
	db.Exec(t, `UPDATE pgq.jobs SET available_at = now() + interval '1 day' WHERE uuid = $1`, *fresh)
	j = reserveOne(t, db, now.Add(61*time.Second))
	require.Equal(t, first, j.UUID)
	require.Equal(t, *fresh, pgqtest.Scalar[uuid.UUID](t, db, `SELECT job_uuid FROM pgq.unique_locks`))

	// exhausted at its first pickup: the lock is released, not stranded
	db2 := pgqtest.New(t)
	id := *maybeDispatch(t, db2, `'r', unique_key => 'k', unique_until => 'processing',
	                              retry_until => now() + interval '1 minute'`)
	require.Empty(t, reserve(t, db2, "w1", clock().Add(2*time.Minute)))
	require.Equal(t, 1, count(t, db2, "pgq.failed_jobs WHERE uuid = $1", id))
	require.Equal(t, 0, count(t, db2, "pgq.unique_locks"))
}

// S24: each debounced dispatch writes a new current token and waits debounce_for; a job
// picked up with a stale token (first attempt or retry) is deleted without running,
// recorded as debounced, and announced with job_debounced. debounce_max_wait bounds the
// wait of a burst.
func TestS24Debounce(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, `SELECT pgq.define_job('push_price', tries => 3, backoff => '{60}', debounce_for => '30 seconds', debounce_by => '{product_id}')`)
	listener := listen(t, db, "pgq_events")

	now := clock()
	a := dispatch(t, db, `'push_price', '{"product_id": 5, "price_in_cents": 1000}'`)
	b := dispatch(t, db, `'push_price', '{"product_id": 5, "price_in_cents": 1100}'`)
	c := dispatch(t, db, `'push_price', '{"product_id": 5, "price_in_cents": 1200}'`)
	other := dispatch(t, db, `'push_price', '{"product_id": 6, "price_in_cents": 10}'`)
	require.Empty(t, reserve(t, db, "w1", now.Add(29*time.Second)), "waiting debounce_for")

	got := reserve(t, db, "w1", now.Add(31*time.Second))
	ids := []uuid.UUID{}
	for _, j := range got {
		ids = append(ids, j.UUID)
	}
	require.ElementsMatch(t, []uuid.UUID{c, other}, ids, "only the newest per key runs")
	require.Equal(t, []string{"debounced"}, outcomes(t, db, a))
	require.Equal(t, []string{"debounced"}, outcomes(t, db, b))
	n := notification(t, listener, 5*time.Second)
	require.NotNil(t, n)
	require.Contains(t, n.Payload, `"event" : "job_debounced"`)

	// a retry waiting its backoff is debounced by a newer dispatch
	var jc reserved
	for _, j := range got {
		if j.UUID == c {
			jc = j
		}
	}
	fail(t, db, jc, "push timed out", false, now.Add(31*time.Second))
	d := dispatch(t, db, `'push_price', '{"product_id": 5, "price_in_cents": 1300}'`)
	got = reserve(t, db, "w1", now.Add(2*time.Minute))
	require.Len(t, got, 1)
	require.Equal(t, d, got[0].UUID)
	require.Equal(t, []string{"failed", "debounced"}, outcomes(t, db, c))
	require.True(t, complete(t, db, got[0]))
	require.Equal(t, 0, count(t, db, "pgq.debounce_tokens WHERE key = 'push_price:[5]'"), "token cleaned up after success")

	// debounce_max_wait: a burst that started 50 s ago waits at most 10 s more
	db.Exec(t, `SELECT pgq.dispatch('tick', debounce_key => 'k', debounce_for => '30 seconds', debounce_max_wait => '60 seconds')`)
	db.Exec(t, `UPDATE pgq.debounce_tokens SET burst_started_at = now() - interval '50 seconds' WHERE key = 'tick:k'`)
	e := dispatch(t, db, `'tick', debounce_key => 'k', debounce_for => '30 seconds', debounce_max_wait => '60 seconds'`)
	wait := pgqtest.Scalar[time.Duration](t, db, `SELECT available_at - now() FROM pgq.jobs WHERE uuid = $1`, e)
	require.InDelta(t, 10, wait.Seconds(), 1)
}

// debounce_max_wait from the worker's point of view: dispatches arriving every 10 s
// forever (debounce_for 30 s) would never run without it; with max_wait 60 s the newest
// copy becomes due no later than 60 s after the burst's first dispatch.
func TestS24DebounceMaxWaitUnderAnEndlessBurst(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	start := time.Now()
	var newest uuid.UUID
	for i := 0; i < 9; i++ { // nine dispatches, "10 s" apart: shift the burst start back instead of sleeping
		newest = dispatch(t, db, `'feed', debounce_key => 'k', debounce_for => '30 seconds', debounce_max_wait => '60 seconds'`)
		db.Exec(t, `UPDATE pgq.debounce_tokens SET burst_started_at = burst_started_at - interval '10 seconds'`)
	}
	// the burst "started" 90 s ago; the newest copy is due at burst start + 60 s, i.e. already
	got := reserve(t, db, "w1", clock())
	require.Len(t, got, 1)
	require.Equal(t, newest, got[0].UUID)
	require.Less(t, time.Since(start), 30*time.Second)
}

// S25: unique and debounce exclude each other: rejected, nothing written.
func TestS25UniqueAndDebounceExclusive(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	for _, call := range []string{
		`pgq.dispatch('x', unique_key => 'a', debounce_key => 'a', debounce_for => '1 minute')`,
		`pgq.dispatch('x', unique_for => '1 hour', debounce_for => '1 minute')`,
		`pgq.define_job('x', unique_by => '{id}', debounce_by => '{id}', debounce_for => '1 minute')`,
	} {
		_, err := db.Pool.Exec(ctx, "SELECT "+call)
		require.Equal(t, "22023", pgCode(err), call)
		require.Contains(t, err.Error(), "cannot be both unique and debounced")
	}
	db.Exec(t, `SELECT pgq.define_job('y', unique_by => '{id}')`)
	_, err := db.Pool.Exec(ctx, `SELECT pgq.dispatch('y', '{"id": 1}', debounce_key => 'z', debounce_for => '1 minute')`)
	require.Equal(t, "22023", pgCode(err), "a unique class cannot be debounced at dispatch")
	require.Equal(t, 0, count(t, db, "pgq.jobs"))
	require.Equal(t, 0, count(t, db, "pgq.unique_locks"))
	require.Equal(t, 0, count(t, db, "pgq.debounce_tokens"))
}

// S21, S24, S38 for a batch: pgq.dispatch_many computes every payload's unique or
// debounce key in one call. A payload whose key cannot be computed, or is too long,
// fails the whole batch with the error of the first such payload in payload order, and
// nothing is written; in a good batch each payload gets its own key, and a key met twice
// drops the second job, as two dispatches would.
func TestS21S24S38BatchKeys(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, `SELECT pgq.define_job('u', unique_for => '1 hour', unique_by => '{id}')`)
	db.Exec(t, `SELECT pgq.define_job('d', debounce_for => '1 minute', debounce_by => '{id}')`)
	long := `"` + strings.Repeat("x", 1001) + `"`
	for _, c := range []struct{ job, payloads, want string }{
		{"u", `'{"id": 1}', '{"other": 2}', '{"id": ` + long + `}'`, "lacks field 'id'"},
		{"u", `'{"id": 1}', '{"id": ` + long + `}', '{"other": 2}'`, "longer than the 1000 allowed"},
		{"d", `'{"id": 1}', '{"other": 2}'`, "lacks field 'id'"},
	} {
		_, err := db.Pool.Exec(ctx, `SELECT pgq.dispatch_many('`+c.job+`', ARRAY[`+c.payloads+`]::jsonb[])`)
		require.Equal(t, "22023", pgCode(err), c.payloads)
		require.Contains(t, err.Error(), c.want, c.payloads)
	}
	require.Equal(t, 0, count(t, db, "pgq.jobs"))
	require.Equal(t, 0, count(t, db, "pgq.unique_locks"))
	require.Equal(t, 0, count(t, db, "pgq.debounce_tokens"))

	ids := pgqtest.Scalar[[]*uuid.UUID](t, db, `SELECT array_agg(u) FROM pgq.dispatch_many('u',
		ARRAY['{"id": 1}', '{"id": 2}', '{"id": 1}', '{"id": "a"}']::jsonb[]) u`)
	require.Len(t, ids, 4)
	require.NotNil(t, ids[0])
	require.NotNil(t, ids[1])
	require.Nil(t, ids[2], "the second job of key 1 is dropped")
	require.NotNil(t, ids[3])
	require.Equal(t, []string{`u:["a"]`, "u:[1]", "u:[2]"},
		pgqtest.Scalar[[]string](t, db, `SELECT array_agg(unique_key ORDER BY unique_key) FROM pgq.jobs`))
	require.Equal(t, []string{`u:["a"]`, "u:[1]", "u:[2]"},
		pgqtest.Scalar[[]string](t, db, `SELECT array_agg(key ORDER BY key) FROM pgq.unique_locks`))

	db.Exec(t, `SELECT pgq.dispatch_many('d', ARRAY['{"id": 1}', '{"id": 2}', '{"id": 1}']::jsonb[])`)
	require.Equal(t, []string{"d:[1]", "d:[1]", "d:[2]"},
		pgqtest.Scalar[[]string](t, db, `SELECT array_agg(debounce_key ORDER BY debounce_key) FROM pgq.jobs WHERE job = 'd'`))
	require.Equal(t, 2, count(t, db, "pgq.debounce_tokens"), "one current token per key")
}

// S21, S24 under concurrency: eight connections dispatching the same key 1,000 times at
// once queue exactly one unique job; for debounce exactly one job is runnable.
func TestS21S24ConcurrentDispatch(t *testing.T) {
	t.Parallel()
	storm := func(t *testing.T, db *pgqtest.DB, call string) (queued int) {
		var mu sync.Mutex
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for range 8 {
			wg.Go(func() {
				conn, err := db.Pool.Acquire(context.Background())
				if err != nil {
					errs <- err
					return
				}
				defer conn.Release()
				for range 125 {
					var id *uuid.UUID
					if err := conn.QueryRow(ctx, "SELECT pgq.dispatch("+call+")").Scan(&id); err != nil {
						errs <- err
						return
					}
					if id != nil {
						mu.Lock()
						queued++
						mu.Unlock()
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		return queued
	}
	t.Run("Unique", func(t *testing.T) {
		t.Parallel()
		db := pgqtest.New(t)
		require.Equal(t, 1, storm(t, db, `'sync', '{"n": 1}', unique_key => 'same', unique_for => '1 hour'`))
		require.Equal(t, 1, count(t, db, "pgq.jobs"))
		require.Equal(t, 1, count(t, db, "pgq.unique_locks"))
	})
	t.Run("Debounce", func(t *testing.T) {
		t.Parallel()
		db := pgqtest.New(t)
		require.Equal(t, 1000, storm(t, db, `'push', '{"n": 1}', debounce_key => 'same', debounce_for => '1 second'`))
		got := reserve(t, db, "w1", clock().Add(2*time.Second))
		require.Len(t, got, 1, "exactly one runnable job")
		require.Equal(t, pgqtest.Scalar[uuid.UUID](t, db, `SELECT job_uuid FROM pgq.debounce_tokens`), got[0].UUID, "the newest")
		require.Equal(t, 999, count(t, db, "pgq.attempts WHERE outcome = 'debounced'"))
	})
}
