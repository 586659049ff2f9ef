package main

// Scenario tests: the Laravel notes' probes (unique and debounced jobs between two
// attempts; the three doormen: without_overlapping, rate_limited, throttles_exceptions)
// replayed through the real pgq-worker binary, with SQL-function handlers, so each test
// reads like the scenario it replays. Each names the SEMANTICS.md rules it covers.
// Handlers count their calls with sequences: nextval is not rolled back with a failed
// attempt's transaction, while a failed SQL handler's other effects are.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/pgq-dev/pgq/internal/pgqtest"
)

// ---------------------------------------------------------------------------------------
// Helpers of the scenarios

// scAttempt is one row of pgq.attempts with the columns the middleware scenarios read.
type scAttempt struct {
	Attempt    int
	Worker     string
	Outcome    string
	Middleware string
	Delay      *int
	Exception  string
}

func scAttemptsOf(t *testing.T, db *pgqtest.DB, id string) []scAttempt {
	t.Helper()
	rows, err := db.Pool.Query(context.Background(), `
		SELECT attempt, coalesce(worker, ''), outcome, coalesce(middleware, ''), delay, coalesce(exception, '')
		FROM pgq.attempts WHERE job_uuid = $1::uuid ORDER BY id`, id)
	require.NoError(t, err)
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[scAttempt])
	require.NoError(t, err)
	return out
}

// scOutcomes lists the outcomes of a job's attempts, in order.
func scOutcomes(t *testing.T, db *pgqtest.DB, id string) []string {
	t.Helper()
	return scalar[[]string](t, db,
		`SELECT coalesce(array_agg(outcome ORDER BY id), '{}') FROM pgq.attempts WHERE job_uuid = $1::uuid`, id)
}

// scCountOutcome counts a job's attempts with that outcome; for polling.
func scCountOutcome(db *pgqtest.DB, id, outcome string) int {
	n, err := try[int](db, `SELECT count(*)::int FROM pgq.attempts WHERE job_uuid = $1::uuid AND outcome = $2`, id, outcome)
	if err != nil {
		return -1
	}
	return n
}

// scMaybeDispatch runs a SQL expression returning a job uuid that may be NULL (a unique
// duplicate dropped); nil means dropped.
func scMaybeDispatch(t *testing.T, db *pgqtest.DB, call string, args ...any) *string {
	t.Helper()
	return scalar[*string](t, db, "SELECT ("+call+")::text", args...)
}

// scHoldOverlap takes the advisory lock of a without_overlapping key on a connection of
// its own, the way another worker's session would hold it, and returns a function that
// gives it back. The connection closes at the end of the test.
func scHoldOverlap(t *testing.T, db *pgqtest.DB, key string) (unlock func()) {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), db.URL)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = conn.Exec(ctx, `SELECT pg_advisory_lock(pgq._overlap_lock_id($1))`, key)
	require.NoError(t, err, "take the overlap lock of %s", key)
	return func() {
		t.Helper()
		var ok bool
		require.NoError(t, conn.QueryRow(context.Background(),
			`SELECT pg_advisory_unlock(pgq._overlap_lock_id($1))`, key).Scan(&ok))
		require.True(t, ok, "the test's connection held the overlap lock of %s", key)
	}
}

// scSecondsUntilAvailable returns how many seconds from now a waiting job becomes
// available.
func scSecondsUntilAvailable(t *testing.T, db *pgqtest.DB, id string) float64 {
	t.Helper()
	return scalar[float64](t, db,
		`SELECT extract(epoch FROM available_at - now())::float8 FROM pgq.jobs WHERE uuid = $1::uuid AND reserved_at IS NULL`, id)
}

// ---------------------------------------------------------------------------------------
// Issue 3: unique and debounced jobs between two attempts

// S21, S22: unique_for (2 s) shorter than the backoff (4 s). The first copy throws and
// waits out its backoff holding the lock: a copy dispatched then is dropped. Once the
// lock has expired a second copy is queued (delayed 30 s, so it still waits when the
// first one retries, and with a unique_for of its own of a minute, so its lock is still
// live then) and both jobs exist. The first copy's retry succeeds and, its
// release being owner-checked, leaves the second copy's lock alone: a third dispatch is
// dropped. (Laravel before 13.24 force-released here and let the third one in.)
func TestS21S22ScenarioUniqueForShorterThanBackoff(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, appSchema+`
CREATE SEQUENCE app.calls;
-- Throws on the very first call only.
CREATE FUNCTION app.sync_invoices(p jsonb) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    IF nextval('app.calls') = 1 THEN
        RAISE EXCEPTION 'vendor 500';
    END IF;
    INSERT INTO app.runs (n, worker, started, finished) VALUES (p->>'n', app.holder(p), clock_timestamp(), clock_timestamp());
END
$$;
SELECT pgq.define_job('sync_invoices', handler => 'app.sync_invoices', tries => 3, backoff => '{4}',
                      unique_for => '2 seconds', unique_by => '{account_id}');
`)
	const key = "sync_invoices:[7]"
	lockHolder := func() string {
		return scalar[string](t, db, `SELECT coalesce((SELECT job_uuid::text FROM pgq.locks WHERE kind = 'unique' AND key = $1), '')`, key)
	}
	startWorker(t, db, "W", "--sleep", "0.2", "--concurrency", "2")

	first := dispatch(t, db, `pgq.dispatch('sync_invoices', '{"account_id": 7, "n": "first"}')`)
	waitUntil(t, 5*time.Second, "the first copy's first attempt failed", func() bool { return scCountOutcome(db, first, "failed") == 1 })
	require.Equal(t, "backoff", scalar[string](t, db, `SELECT wait_reason FROM pgq.jobs WHERE uuid = $1::uuid`, first))
	require.Equal(t, first, lockHolder(), "S21: the lock is kept through the backoff")
	require.True(t, scalar[bool](t, db, `SELECT expires_at > now() FROM pgq.unique_locks WHERE key = $1`, key),
		"(test setup) the first attempt failed within unique_for")
	require.Nil(t, scMaybeDispatch(t, db, `pgq.dispatch('sync_invoices', '{"account_id": 7, "n": "during backoff"}')`),
		"S21: a copy dispatched during the backoff, while the lock lives, is dropped")

	waitUntil(t, 5*time.Second, "unique_for (2 s) ran out during the 4 s backoff", func() bool {
		v, err := try[bool](db, `SELECT expires_at <= now() FROM pgq.unique_locks WHERE key = $1`, key)
		return err == nil && v
	})
	require.True(t, jobLive(t, db, first), "the first copy still waits out its backoff")
	second := dispatch(t, db, `pgq.dispatch('sync_invoices', '{"account_id": 7, "n": "second"}',
		delay => interval '30 seconds', unique_for => interval '1 minute')`)
	require.True(t, jobLive(t, db, first) && jobLive(t, db, second), "both copies exist")
	require.Equal(t, second, lockHolder(), "the second copy took over the expired lock")
	secondToken := scalar[string](t, db, `SELECT unique_token::text FROM pgq.jobs WHERE uuid = $1::uuid`, second)

	waitUntil(t, 10*time.Second, "the first copy's retry ran", func() bool { return !jobLive(t, db, first) })
	require.Equal(t, []attempt{{1, "W", "failed"}, {2, "W", "succeeded"}}, attemptsOf(t, db, first))
	require.Equal(t, second, lockHolder(), "S22: the first copy's success left the second copy's lock alone")
	require.Equal(t, secondToken, scalar[string](t, db, `SELECT owner::text FROM pgq.unique_locks WHERE key = $1`, key))
	require.Nil(t, scMaybeDispatch(t, db, `pgq.dispatch('sync_invoices', '{"account_id": 7, "n": "third"}')`),
		"S22: a third dispatch is dropped: the second copy holds the key")
	require.True(t, jobLive(t, db, second))
	require.Equal(t, []attempt{}, attemptsOf(t, db, second), "the second copy still waits its delay")

	require.True(t, scalar[bool](t, db, `SELECT pgq.run_now($1::uuid)`, second))
	waitUntil(t, 5*time.Second, "the second copy ran", func() bool { return !jobLive(t, db, second) })
	require.Equal(t, []attempt{{1, "W", "succeeded"}}, attemptsOf(t, db, second))
	require.Equal(t, "", lockHolder(), "the second copy's success released its own lock")
	require.Equal(t, []string{"first", "second"}, scalar[[]string](t, db, `SELECT array_agg(n ORDER BY id) FROM app.runs`))
	require.Zero(t, scalar[int](t, db, `SELECT count(*)::int FROM pgq.failed_jobs`))
}

// scPushPriceSchema: app.push_price(p) writes p.price for p.product_id to app.prices (and
// appends it to app.pushes), and times out the first time it is asked to push 1000.
const scPushPriceSchema = `
CREATE SCHEMA app;
CREATE SEQUENCE app.pushes_of_1000;
CREATE TABLE app.prices (product_id int PRIMARY KEY, price int NOT NULL, written_at timestamptz NOT NULL);
CREATE TABLE app.pushes (id bigserial PRIMARY KEY, product_id int NOT NULL, price int NOT NULL, written_at timestamptz NOT NULL);
CREATE FUNCTION app.push_price(p jsonb) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    IF (p->>'price')::int = 1000 AND nextval('app.pushes_of_1000') = 1 THEN
        RAISE EXCEPTION 'push to channel timed out';
    END IF;
    INSERT INTO app.prices (product_id, price, written_at)
    VALUES ((p->>'product_id')::int, (p->>'price')::int, clock_timestamp())
    ON CONFLICT (product_id) DO UPDATE SET price = EXCLUDED.price, written_at = EXCLUDED.written_at;
    INSERT INTO app.pushes (product_id, price, written_at)
    VALUES ((p->>'product_id')::int, (p->>'price')::int, clock_timestamp());
END
$$;
`

// S23 (the price trap): an until-processing job that carries its data in the payload.
// The 1000 push times out once and waits its 3 s backoff with no lock at all (released
// right before its first attempt), so a 1200 push dispatched meanwhile goes through and
// runs at once; then the 1000 retry runs and overwrites the newer price. Nothing fails.
// pgq behaves like Laravel here (documented: use debounce for jobs that carry data).
func TestS23ScenarioUntilProcessingPriceTrap(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, scPushPriceSchema+`
SELECT pgq.define_job('push_price', handler => 'app.push_price', unique_for => '1 minute',
                      unique_until => 'processing', unique_by => '{product_id}', tries => 2, backoff => '{3}');
`)
	startWorker(t, db, "W", "--sleep", "0.2", "--concurrency", "2")

	old := dispatch(t, db, `pgq.dispatch('push_price', '{"product_id": 5, "price": 1000}')`)
	waitUntil(t, 5*time.Second, "the 1000 push failed once", func() bool { return scCountOutcome(db, old, "failed") == 1 })
	require.True(t, jobLive(t, db, old), "the 1000 push waits out its backoff")
	require.Zero(t, scalar[int](t, db, `SELECT count(*)::int FROM pgq.locks WHERE kind = 'unique'`),
		"S23: nothing is held during the backoff: the lock went right before the first attempt")

	fresh := scMaybeDispatch(t, db, `pgq.dispatch('push_price', '{"product_id": 5, "price": 1200}')`)
	require.NotNil(t, fresh, "the 1200 push goes straight through")
	waitUntil(t, 2500*time.Millisecond, "the 1200 push ran at once", func() bool { return !jobLive(t, db, *fresh) })
	require.True(t, jobLive(t, db, old), "(timing) the 1000 retry is still waiting when 1200 has run")
	require.Equal(t, 1200, scalar[int](t, db, `SELECT price FROM app.prices WHERE product_id = 5`))

	waitUntil(t, 8*time.Second, "the 1000 retry ran", func() bool { return !jobLive(t, db, old) })
	require.Equal(t, []attempt{{1, "W", "failed"}, {2, "W", "succeeded"}}, attemptsOf(t, db, old))
	require.Equal(t, []attempt{{1, "W", "succeeded"}}, attemptsOf(t, db, *fresh))
	require.Equal(t, []int{1200, 1000}, scalar[[]int](t, db, `SELECT array_agg(price ORDER BY id) FROM app.pushes`),
		"the stale retry ran after the newer copy")
	require.Equal(t, 1000, scalar[int](t, db, `SELECT price FROM app.prices WHERE product_id = 5`),
		"the trap: the stale 1000 overwrote 1200, and nothing failed")
	require.Zero(t, scalar[int](t, db, `SELECT count(*)::int FROM pgq.failed_jobs`))
	require.Zero(t, scalar[int](t, db, `SELECT count(*)::int FROM pgq.locks`))
}

// S22, S23: the until-processing retry leaves a newer copy's lock alone. The 1000 push
// times out once; a 1200 push is dispatched during the backoff, delayed so that it still
// waits (holding its lock) when the 1000 retry starts. The retry's release of the lock,
// right before its handler, is owner-checked: the 1200 copy keeps the key and a third
// dispatch is dropped until the 1200 copy starts. (Laravel before 13.24 force-released
// here and let a third copy in.)
func TestS22S23ScenarioUntilProcessingRetryLeavesNewerLock(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, scPushPriceSchema+`
SELECT pgq.define_job('push_price', handler => 'app.push_price', unique_for => '1 minute',
                      unique_until => 'processing', unique_by => '{product_id}', tries => 2, backoff => '{3}');
`)
	uniqueHolder := func() string {
		return scalar[string](t, db, `SELECT coalesce((SELECT job_uuid::text FROM pgq.locks WHERE kind = 'unique' AND key = 'push_price:[5]'), '')`)
	}
	startWorker(t, db, "W", "--sleep", "0.2", "--concurrency", "2")

	old := dispatch(t, db, `pgq.dispatch('push_price', '{"product_id": 5, "price": 1000}')`)
	waitUntil(t, 5*time.Second, "the 1000 push failed once", func() bool { return scCountOutcome(db, old, "failed") == 1 })
	fresh := dispatch(t, db, `pgq.dispatch('push_price', '{"product_id": 5, "price": 1200}', delay => interval '30 seconds')`)
	require.Equal(t, fresh, uniqueHolder())

	waitUntil(t, 8*time.Second, "the 1000 retry ran", func() bool { return !jobLive(t, db, old) })
	require.Equal(t, []attempt{{1, "W", "failed"}, {2, "W", "succeeded"}}, attemptsOf(t, db, old))
	require.Equal(t, fresh, uniqueHolder(), "S22: the retry's release at processing left the 1200 copy's lock alone")
	require.Nil(t, scMaybeDispatch(t, db, `pgq.dispatch('push_price', '{"product_id": 5, "price": 1300}')`),
		"a third dispatch is dropped while the 1200 copy waits")

	require.True(t, scalar[bool](t, db, `SELECT pgq.run_now($1::uuid)`, fresh))
	waitUntil(t, 5*time.Second, "the 1200 push ran", func() bool { return !jobLive(t, db, fresh) })
	require.Equal(t, "", uniqueHolder(), "its lock went when its handler started")
	require.Equal(t, []int{1000, 1200}, scalar[[]int](t, db, `SELECT array_agg(price ORDER BY id) FROM app.pushes`))
	require.Equal(t, 1200, scalar[int](t, db, `SELECT price FROM app.prices WHERE product_id = 5`))
}

// S24 (the price trap, debounced): the same pushes as a debounced job. The 1000 push
// times out once; the 1200 push dispatched during its backoff becomes the key's current
// dispatch, so when the 1000 retry comes up it is deleted without running and recorded
// as debounced. Only the newest runs: the final price is 1200.
func TestS24ScenarioDebouncedPriceDropsStaleRetry(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, scPushPriceSchema+`
SELECT pgq.define_job('push_price', handler => 'app.push_price', debounce_for => '1 second',
                      debounce_by => '{product_id}', tries => 2, backoff => '{3}');
`)
	w := startWorker(t, db, "W", "--sleep", "0.2", "--concurrency", "2")

	old := dispatch(t, db, `pgq.dispatch('push_price', '{"product_id": 5, "price": 1000}')`)
	waitUntil(t, 5*time.Second, "the 1000 push ran after its debounce and failed once", func() bool {
		return scCountOutcome(db, old, "failed") == 1
	})
	fresh := dispatch(t, db, `pgq.dispatch('push_price', '{"product_id": 5, "price": 1200}')`)
	require.Equal(t, fresh, scalar[string](t, db,
		`SELECT job_uuid::text FROM pgq.locks WHERE kind = 'debounce' AND key = 'push_price:[5]'`), "1200 is now current")
	waitUntil(t, 3*time.Second, "the 1200 push ran after its 1 s debounce", func() bool { return !jobLive(t, db, fresh) })
	require.True(t, jobLive(t, db, old), "(timing) the 1000 retry is still waiting when 1200 has run")

	waitUntil(t, 8*time.Second, "the 1000 retry came up", func() bool { return !jobLive(t, db, old) })
	require.Equal(t, []attempt{{1, "W", "failed"}, {2, "W", "debounced"}}, attemptsOf(t, db, old),
		"S24: the stale retry is dropped at pickup")
	require.Contains(t, scAttemptsOf(t, db, old)[1].Exception, "superseded by a newer dispatch of push_price:[5]")
	require.Equal(t, []attempt{{1, "W", "succeeded"}}, attemptsOf(t, db, fresh))
	require.Equal(t, []int{1200}, scalar[[]int](t, db, `SELECT array_agg(price ORDER BY id) FROM app.pushes`))
	require.Equal(t, 1200, scalar[int](t, db, `SELECT price FROM app.prices WHERE product_id = 5`), "only the newest ran")
	require.Zero(t, scalar[int](t, db, `SELECT count(*)::int FROM pgq.failed_jobs`), "a debounced job is not a failure")
	require.Zero(t, scalar[int](t, db, `SELECT count(*)::int FROM pgq.locks`))
	w.waitLog(t, 2*time.Second, "outcome=debounced")
}

// S23, S26: a turn-away before the handler keeps an until-processing lock. Job H holds
// the overlap key of product 88 for 4 s (its own until-processing lock went when it
// started); job J for the same product is queued, turned away by without_overlapping,
// and keeps its unique lock meanwhile, so a duplicate dispatched then is dropped. J runs
// once H is done, after which its lock is gone.
func TestS23S26ScenarioTurnAwayKeepsUntilProcessingLock(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, appSchema+`
SELECT pgq.define_job('sync_inventory', handler => 'app.slow', tries => 10,
                      unique_for => '1 minute', unique_until => 'processing', unique_by => '{product_id}',
                      middleware => '[{"without_overlapping": {"by": ["product_id"], "release_after": 1}}]');
`)
	const key = "sync_inventory:[88]"
	uniqueHolder := func() string {
		return scalar[string](t, db, `SELECT coalesce((SELECT job_uuid::text FROM pgq.locks WHERE kind = 'unique' AND key = $1), '')`, key)
	}
	w := startWorker(t, db, "W", "--sleep", "0.3", "--concurrency", "2")

	h := dispatch(t, db, `pgq.dispatch('sync_inventory', '{"product_id": 88, "n": "H", "secs": 4}')`)
	waitUntil(t, 5*time.Second, "H runs", func() bool { return reservedBy(db, h) == "W" && sqlHandlers(db) == 1 })
	require.Equal(t, "", uniqueHolder(), "H's until-processing lock went when its handler started")
	require.Equal(t, h, scalar[string](t, db, `SELECT job_uuid::text FROM pgq.locks WHERE kind = 'overlap' AND key = $1`, key),
		"H holds the overlap key")

	j := dispatch(t, db, `pgq.dispatch('sync_inventory', '{"product_id": 88, "n": "J"}')`)
	waitUntil(t, 3*time.Second, "J was turned away", func() bool { return scCountOutcome(db, j, "turned_away") >= 1 })
	require.True(t, sqlHandlers(db) == 1 && jobLive(t, db, h), "(timing) H still runs")
	ta := scAttemptsOf(t, db, j)[0]
	require.Equal(t, "turned_away", ta.Outcome)
	require.Equal(t, "without_overlapping", ta.Middleware)
	require.Contains(t, ta.Exception, "turned away by without_overlapping (key sync_inventory:[88]), released for 1s")
	require.Equal(t, j, uniqueHolder(), "S23: the turn-away kept J's until-processing lock")
	require.Nil(t, scMaybeDispatch(t, db, `pgq.dispatch('sync_inventory', '{"product_id": 88, "n": "dup"}')`),
		"a duplicate dispatched while J is held at the door is dropped")

	waitUntil(t, 10*time.Second, "J ran after H", func() bool { return !jobLive(t, db, j) })
	require.False(t, jobLive(t, db, h))
	outcomes := scOutcomes(t, db, j)
	require.Equal(t, "succeeded", outcomes[len(outcomes)-1])
	for _, o := range outcomes[:len(outcomes)-1] {
		require.Equal(t, "turned_away", o, "J's attempts: %v", outcomes)
	}
	require.Equal(t, []attempt{{1, "W", "succeeded"}}, attemptsOf(t, db, h))
	require.Equal(t, "", uniqueHolder(), "J's lock went when its handler started")
	require.Equal(t, []string{"H", "J"}, scalar[[]string](t, db, `SELECT array_agg(n ORDER BY started) FROM app.runs`))
	require.True(t, scalar[bool](t, db, `SELECT (SELECT finished FROM app.runs WHERE n = 'H') <= (SELECT started FROM app.runs WHERE n = 'J')`),
		"J started after H finished")
	require.Contains(t, w.logs(), "turned away by without_overlapping")
}

// S25: a dispatch that is both unique and debounced (per dispatch, or one half from the
// class and the other from the dispatch, or declared so on the class) is rejected with
// SQLSTATE 22023 and writes nothing: no job, no unique lock, no debounce token, and the
// lock and token already held for the same keys are left as they were. A worker then
// runs only the two good jobs.
func TestS25ScenarioDebounceAndUniqueRejected(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, appSchema+`
SELECT pgq.define_job('unique_push', handler => 'app.rec', unique_for => '1 minute', unique_by => '{product_id}');
SELECT pgq.define_job('debounced_push', handler => 'app.rec', debounce_for => '1 second', debounce_by => '{product_id}');
`)
	uniq := dispatch(t, db, `pgq.dispatch('unique_push', '{"product_id": 5, "n": "unique"}')`)
	deb := dispatch(t, db, `pgq.dispatch('debounced_push', '{"product_id": 5, "n": "debounced"}')`)
	before := func() []string {
		return scalar[[]string](t, db, `SELECT array_agg(kind || ' ' || key || ' ' || job_uuid || ' ' || token ORDER BY kind) FROM pgq.locks`)
	}
	held := before()
	require.Len(t, held, 2)

	for _, call := range []string{
		`pgq.dispatch('push', '{"product_id": 5}', unique_key => 'p5', unique_for => '1 minute', debounce_key => 'p5', debounce_for => '1 second')`,
		`pgq.dispatch('push', '{"product_id": 5}', unique_for => '1 minute', debounce_for => '1 second')`,
		`pgq.dispatch('unique_push', '{"product_id": 5}', debounce_for => '1 second')`,
		`pgq.dispatch('unique_push', '{"product_id": 6}', debounce_key => 'p6', debounce_for => '1 second')`,
		`pgq.dispatch('debounced_push', '{"product_id": 5}', unique_key => 'p5')`,
		`pgq.dispatch('debounced_push', '{"product_id": 6}', unique_for => '1 minute')`,
		`pgq.dispatch_many('push', ARRAY['{"product_id": 5}', '{"product_id": 6}']::jsonb[], unique_key => 'p', debounce_for => '1 second')`,
		`pgq.define_job('both', handler => 'app.rec', unique_for => '1 minute', debounce_for => '1 second')`,
	} {
		_, err := db.Pool.Exec(context.Background(), "SELECT "+call)
		var pgErr *pgconn.PgError
		require.True(t, errors.As(err, &pgErr), "%s: want a PostgreSQL error, got %v", call, err)
		require.Equal(t, "22023", pgErr.Code, "%s: %s", call, pgErr.Message)
		require.Contains(t, pgErr.Message, "cannot be both unique and debounced", call)
	}
	require.ElementsMatch(t, []string{uniq, deb}, scalar[[]string](t, db, `SELECT array_agg(uuid::text) FROM pgq.jobs`), "no job")
	require.Equal(t, 1, scalar[int](t, db, `SELECT count(*)::int FROM pgq.unique_locks`), "no unique lock")
	require.Equal(t, 1, scalar[int](t, db, `SELECT count(*)::int FROM pgq.debounce_tokens`), "no debounce token")
	require.Equal(t, held, before(), "the lock and token held before are untouched")
	require.Zero(t, scalar[int](t, db, `SELECT count(*)::int FROM pgq.job_classes WHERE name = 'both'`), "no class")

	w := startWorker(t, db, "W", "--sleep", "0.3")
	waitUntil(t, 5*time.Second, "the two good jobs ran", func() bool { return !jobLive(t, db, uniq) && !jobLive(t, db, deb) })
	require.Equal(t, []attempt{{1, "W", "succeeded"}}, attemptsOf(t, db, uniq))
	require.Equal(t, []attempt{{1, "W", "succeeded"}}, attemptsOf(t, db, deb), "still the current debounced dispatch")
	require.Equal(t, 2, scalar[int](t, db, `SELECT count(*)::int FROM pgq.attempts`), "nothing else ran")
	require.ElementsMatch(t, []string{"unique", "debounced"}, scalar[[]string](t, db, `SELECT array_agg(n) FROM app.runs`))
	require.False(t, w.exited())
}

// ---------------------------------------------------------------------------------------
// Issue 4: middleware, the door before the handler

// scOverlapClass declares sync_inventory behind without_overlapping by product_id, with the
// given extra settings of the middleware, handled by app.slow.
func scOverlapClass(tries int, settings string) string {
	mw := `[{"without_overlapping": {"by": ["product_id"]` + settings + `}}]`
	return `SELECT pgq.define_job('sync_inventory', handler => 'app.slow', tries => ` + strconv.Itoa(tries) +
		`, middleware => '` + mw + `');`
}

// S26: two workers, one product. Two sync_inventory jobs for product 88, two workers of
// concurrency 1; the second job is turned away at the door (attempt turned_away by
// without_overlapping, and the worker's log says so instead of printing a success), and
// runs after the first has finished: by the handlers' own clocks the runs do not
// overlap, and each job succeeded exactly once.
func TestS26ScenarioWithoutOverlappingTwoWorkers(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, appSchema+scOverlapClass(10, `, "release_after": 1`))
	a := startWorker(t, db, "A", "--sleep", "0.3", "--concurrency", "1")
	b := startWorker(t, db, "B", "--sleep", "0.3", "--concurrency", "1")
	waitUntil(t, 5*time.Second, "both workers listen", func() bool {
		n, err := try[int](db, `SELECT count(*)::int FROM pg_stat_activity
			WHERE datname = current_database() AND pid <> pg_backend_pid() AND query LIKE '-- name: ListenJobs%'`)
		return err == nil && n == 2
	})
	time.Sleep(300 * time.Millisecond) // past their first reserve: both idle

	ids := scalar[[]string](t, db, `SELECT array_agg(u::text) FROM pgq.dispatch_many('sync_inventory',
		ARRAY['{"product_id": 88, "n": "1", "secs": 2}', '{"product_id": 88, "n": "2", "secs": 2}']::jsonb[]) u`)
	require.Len(t, ids, 2)
	waitUntil(t, 15*time.Second, "both jobs finished", func() bool { return !jobLive(t, db, ids[0]) && !jobLive(t, db, ids[1]) })
	// A SQL handler's completion commits before its worker writes the line.
	waitUntil(t, 5*time.Second, "both successes logged", func() bool {
		return strings.Count(a.logs()+b.logs(), "outcome=succeeded") >= 2
	})

	logs := a.logs() + b.logs()
	t.Logf("attempts of job 1: %v; of job 2: %v", scOutcomes(t, db, ids[0]), scOutcomes(t, db, ids[1]))
	turned := scalar[int](t, db, `SELECT count(*)::int FROM pgq.attempts WHERE outcome = 'turned_away'`)
	require.GreaterOrEqual(t, turned, 1, "the second job was turned away at the door")
	require.Equal(t, turned, scalar[int](t, db,
		`SELECT count(*)::int FROM pgq.attempts WHERE outcome = 'turned_away' AND middleware = 'without_overlapping' AND started_at IS NULL`))
	require.Equal(t, turned, strings.Count(logs, `msg="job turned_away: turned away by without_overlapping`), logs)
	require.Equal(t, turned, strings.Count(logs, "outcome=turned_away"))
	for _, id := range ids {
		require.Equal(t, 1, scCountOutcome(db, id, "succeeded"), "job %s succeeded exactly once", id)
	}
	require.Equal(t, 2, strings.Count(logs, "outcome=succeeded"))
	require.Equal(t, 2, scalar[int](t, db, `SELECT count(*)::int FROM app.runs`))
	require.True(t, scalar[bool](t, db, `SELECT NOT EXISTS (
			SELECT FROM app.runs r1 JOIN app.runs r2 ON r1.id < r2.id
			WHERE r1.started < r2.finished AND r2.started < r1.finished)`),
		"the two runs overlapped in time: %v", scalar[[]string](t, db,
			`SELECT array_agg(format('%s: %s .. %s', n, started, finished) ORDER BY started) FROM app.runs`))
	require.Zero(t, scalar[int](t, db, `SELECT count(*)::int FROM pgq.locks WHERE kind = 'overlap'`), "no overlap lock left")
}

// S26 (beyond), S34, S14: kill -9 while holding the overlap lock. Worker A runs a long
// sync for product 88 and holds its overlap lease; A is killed with SIGKILL. Nobody
// renews the lease, so it runs out 10 s after A's last heartbeat, and a new sync for
// product 88, dispatched after the kill and run by worker B, succeeds within 15 s
// (Laravel's database lock stays a day). A's own job comes back through its 3 s lease.
func TestS14S26S34ScenarioWithoutOverlappingKill9(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, appSchema+`
-- Records its run, and how many other SQL handlers were running in PostgreSQL when it
-- started; slow (30 s) only when worker A runs it.
CREATE TABLE app.company (n text, other_handlers int);
CREATE FUNCTION app.sync(p jsonb) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    t0 timestamptz := clock_timestamp();
    w  text := app.holder(p);
BEGIN
    INSERT INTO app.company SELECT p->>'n', count(*) FROM pg_stat_activity
    WHERE datname = current_database() AND pid <> pg_backend_pid() AND state = 'active' AND query LIKE '%run_sql_job%';
    PERFORM pg_sleep(CASE WHEN w = 'A' THEN 30 ELSE 0.2 END);
    INSERT INTO app.runs (n, worker, started, finished) VALUES (p->>'n', w, t0, clock_timestamp());
END
$$;
SELECT pgq.define_queue('default', retry_after => 3);
-- release_after 3: a killed worker's key is free within 10 s (S34), and ten tries
-- turned away three seconds apart outlast that, for both jobs of the key.
SELECT pgq.define_job('sync_inventory', handler => 'app.sync', tries => 10,
                      middleware => '[{"without_overlapping": {"by": ["product_id"], "release_after": 3, "expire_after": 30}}]');
`)
	a := startWorker(t, db, "A", "--sleep", "1", "--concurrency", "2")
	long := dispatch(t, db, `pgq.dispatch('sync_inventory', '{"product_id": 88, "n": "long"}')`)
	waitUntil(t, 5*time.Second, "A runs the long sync", func() bool { return reservedBy(db, long) == "A" && sqlHandlers(db) == 1 })
	require.Equal(t, "A", scalar[string](t, db,
		`SELECT worker FROM pgq.locks WHERE kind = 'overlap' AND key = 'sync_inventory:[88]'`), "A holds the overlap lock")

	require.NoError(t, a.cmd.Process.Kill())
	require.Equal(t, -1, a.waitExit(t, 5*time.Second), "killed by SIGKILL")
	killed := time.Now()

	startWorker(t, db, "B", "--sleep", "0.5", "--concurrency", "2")
	next := dispatch(t, db, `pgq.dispatch('sync_inventory', '{"product_id": 88, "n": "next"}')`)
	waitUntil(t, 30*time.Second, "both syncs for product 88 finished", func() bool { return !jobLive(t, db, next) && !jobLive(t, db, long) })
	// S34's bound: the key is free 10 s after A's last heartbeat; then B's next pickup
	// (release_after 3, poll 0.5 s) runs a job of the key: A's own, back after its 3 s
	// lease, or the new one, whichever the queue's order gives first.
	first := scalar[time.Time](t, db, `SELECT min(started) FROM app.runs`)
	t.Logf("B started the first sync for product 88 %s after the kill; attempts of the new sync: %v, of A's: %v",
		first.Sub(killed).Round(time.Millisecond), scOutcomes(t, db, next), scOutcomes(t, db, long))
	require.Less(t, first.Sub(killed), 15*time.Second)
	require.Equal(t, []string{"B", "B"}, scalar[[]string](t, db, `SELECT array_agg(worker ORDER BY started) FROM app.runs`),
		"both syncs ran once, by B; A's run rolled back with its connection")
	require.True(t, scalar[bool](t, db, `SELECT NOT EXISTS (
			SELECT FROM app.runs r1 JOIN app.runs r2 ON r1.n < r2.n
			WHERE r1.started < r2.finished AND r2.started < r1.finished)`), "the two syncs ran one after the other")
	// A's SQL handler runs on in PostgreSQL until its backend notices the dead client
	// (client_connection_check_interval, 1 s); its effects cannot commit. Logged.
	t.Logf("SQL handlers running in PostgreSQL when the new sync started (A's orphaned one included when 1): %d",
		scalar[int](t, db, `SELECT other_handlers FROM app.company WHERE n = 'next'`))
	la := attemptsOf(t, db, long)
	require.Equal(t, attempt{1, "A", "lease_expired"}, la[0])
	require.Equal(t, attempt{la[len(la)-1].Attempt, "B", "succeeded"}, la[len(la)-1])
	require.Zero(t, scalar[int](t, db, `SELECT count(*)::int FROM pgq.failed_jobs`))
}

// S27, S26: expire_after caps how long one holder keeps the overlap lock, and the cap
// must not let a third job in. One worker (one session) runs sync X with expire_after 1
// for 5 s: after a second its lock is taken back while X still runs (Laravel's
// expireAfter), so sync Y (expire_after 30, 6 s) is admitted and holds the key. When X's
// handler ends, the worker gives back X's overlap keys; that must not free the lock Y now
// holds on the same session. A sync Z dispatched after X ended, while Y still runs, must
// be turned away.
func TestS26S27ScenarioExpireAfterDoesNotFreeTheNextHoldersLock(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, appSchema+scOverlapClass(5, `, "release_after": 1, "expire_after": 30`))
	const key = "sync_inventory:[88]"
	overlapHolder := func() string {
		v, _ := try[string](db, `SELECT coalesce((SELECT job_uuid::text FROM pgq.locks WHERE kind = 'overlap' AND key = $1), '')`, key)
		return v
	}
	startWorker(t, db, "W", "--sleep", "0.3", "--concurrency", "3")

	x := dispatch(t, db, `pgq.dispatch('sync_inventory', '{"product_id": 88, "n": "X", "secs": 5}',
		middleware => '[{"without_overlapping": {"by": ["product_id"], "release_after": 1, "expire_after": 1}}]')`)
	waitUntil(t, 5*time.Second, "X runs holding the key", func() bool { return overlapHolder() == x && sqlHandlers(db) == 1 })
	waitUntil(t, 4*time.Second, "X's lease ran out after its expire_after", func() bool { return overlapHolder() == "" })
	require.True(t, jobLive(t, db, x), "(timing) X still runs")

	y := dispatch(t, db, `pgq.dispatch('sync_inventory', '{"product_id": 88, "n": "Y", "secs": 6}')`)
	waitUntil(t, 3*time.Second, "Y runs holding the key", func() bool { return overlapHolder() == y })
	require.Empty(t, scOutcomes(t, db, y), "Y runs its first attempt: admitted, not turned away")

	waitUntil(t, 8*time.Second, "X finished", func() bool { return !jobLive(t, db, x) })
	require.True(t, jobLive(t, db, y) && reservedBy(db, y) == "W", "(timing) Y still runs")
	holder := overlapHolder()
	z := dispatch(t, db, `pgq.dispatch('sync_inventory', '{"product_id": 88, "n": "Z"}')`)
	waitUntil(t, 3*time.Second, "Z was picked up", func() bool {
		n, _ := try[int](db, `SELECT count(*)::int FROM pgq.attempts WHERE job_uuid = $1::uuid`, z)
		return n >= 1 || !jobLive(t, db, z)
	})
	yRunning := jobLive(t, db, y)
	zFirst := scOutcomes(t, db, z)[0]
	require.True(t, holder == y && (!yRunning || zFirst == "turned_away"),
		"S26: after X's handler ended, pgq.locks shows the key held by %q, want Y %s (expire_after 30, still running: %v): "+
			"the worker's unlock of X's keys freed the lock Y holds on the same session; Z's first attempt: %s",
		holder, y, yRunning, zFirst)

	waitUntil(t, 15*time.Second, "all done", func() bool { return !jobLive(t, db, y) && !jobLive(t, db, z) })
	require.True(t, scalar[bool](t, db, `SELECT NOT EXISTS (
			SELECT FROM app.runs r1 JOIN app.runs r2 ON r1.n = 'Y' AND r2.n = 'Z'
			WHERE r1.started < r2.finished AND r2.started < r1.finished)`), "Y and Z ran at the same time")
}

// S27, S12, S5: release_after 0 on a lock nobody gives back (held here by a psql-like
// session of the test). The job is turned away three times in a flash, each attempt
// recorded as turned_away by without_overlapping, and fails at its fourth pickup before
// its handler runs: the failed job says the handler never ran and why, instead of a bare
// MaxAttemptsExceeded. With dont_release the job is deleted at the door, recorded as
// turned_away, and is not a failure.
func TestS5S12S27ScenarioWithoutOverlappingStuckLock(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, appSchema+scOverlapClass(3, ""))
	scHoldOverlap(t, db, "sync_inventory:[88]")
	w := startWorker(t, db, "W", "--sleep", "0.2", "--concurrency", "2")

	id := dispatch(t, db, `pgq.dispatch('sync_inventory', '{"product_id": 88, "n": "1"}')`)
	start := time.Now()
	waitUntil(t, 10*time.Second, "the job failed", func() bool {
		n, _ := try[int](db, `SELECT count(*)::int FROM pgq.failed_jobs WHERE uuid = $1::uuid`, id)
		return n == 1
	})
	t.Logf("three bounces and the failure took %s", time.Since(start).Round(time.Millisecond))
	got := scAttemptsOf(t, db, id)
	require.Len(t, got, 4, "%+v", got)
	for i, at := range got[:3] {
		require.Equal(t, i+1, at.Attempt)
		require.Equal(t, "turned_away", at.Outcome)
		require.Equal(t, "without_overlapping", at.Middleware)
		require.NotNil(t, at.Delay)
		require.Equal(t, 0, *at.Delay, "release_after defaults to 0")
		require.Equal(t, "turned away by without_overlapping (key sync_inventory:[88]), released for 0s", at.Exception)
	}
	require.Equal(t, 4, got[3].Attempt)
	require.Equal(t, "exhausted", got[3].Outcome)
	exc := scalar[string](t, db, `SELECT exception FROM pgq.failed_jobs WHERE uuid = $1::uuid`, id)
	require.True(t, strings.HasPrefix(exc, "MaxAttemptsExceeded: sync_inventory attempted 3 times"), exc)
	require.Contains(t, exc, "handler never ran: turned away 3× by without_overlapping")
	require.Zero(t, scalar[int](t, db, `SELECT count(*)::int FROM app.runs`), "the handler never ran")
	require.Equal(t, 3, strings.Count(w.logs(), "msg=\"job turned_away: turned away by without_overlapping"), w.logs())
	require.Contains(t, w.logs(), "outcome=exhausted")
	require.NotContains(t, w.logs(), "outcome=succeeded", "a turn-away is never reported as a success")

	// dont_release: deleted at the door, no failure.
	dropped := dispatch(t, db, `pgq.dispatch('sync_inventory', '{"product_id": 88, "n": "drop"}',
		middleware => '[{"without_overlapping": {"by": ["product_id"], "dont_release": true}}]')`)
	waitUntil(t, 5*time.Second, "the dont_release job is gone", func() bool { return !jobLive(t, db, dropped) })
	got = scAttemptsOf(t, db, dropped)
	require.Len(t, got, 1, "%+v", got)
	require.Equal(t, "turned_away", got[0].Outcome)
	require.Equal(t, "without_overlapping", got[0].Middleware)
	require.Nil(t, got[0].Delay, "not sent back to wait")
	require.Contains(t, got[0].Exception, "deleted (dont_release)")
	require.Zero(t, scalar[int](t, db, `SELECT count(*)::int FROM pgq.failed_jobs WHERE uuid = $1::uuid`, dropped),
		"dont_release is not a failure")
	require.Zero(t, scalar[int](t, db, `SELECT count(*)::int FROM app.runs`))
}

// S28: a rate limit of 1 per minute. Two webhooks, the worker run with --once twice: the
// first run pushes the first webhook; in the second run the other one is over budget
// and is sent back, one attempt spent, to wait until the window resets plus 3 s (about
// 63 s), without running and without being reported as a success.
func TestS28ScenarioRateLimitedOnePerMinute(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, appSchema+`
SELECT pgq.define_limit('webhooks', 1, '1 minute');
SELECT pgq.define_job('push_webhook', handler => 'app.rec', tries => 3,
                      middleware => '[{"rate_limited": {"limit": "webhooks"}}]');
`)
	first := dispatch(t, db, `pgq.dispatch('push_webhook', '{"order_id": 1, "n": "1"}')`)
	second := dispatch(t, db, `pgq.dispatch('push_webhook', '{"order_id": 2, "n": "2"}')`)

	run1 := startWorker(t, db, "run1", "--once", "--sleep", "1")
	require.Equal(t, 0, run1.waitExit(t, 10*time.Second))
	require.Equal(t, []attempt{{1, "run1", "succeeded"}}, attemptsOf(t, db, first))
	require.Equal(t, []attempt{}, attemptsOf(t, db, second))

	run2 := startWorker(t, db, "run2", "--once", "--sleep", "1")
	require.Equal(t, 0, run2.waitExit(t, 10*time.Second))
	got := scAttemptsOf(t, db, second)
	require.Len(t, got, 1, "%+v", got)
	require.Equal(t, "turned_away", got[0].Outcome)
	require.Equal(t, "rate_limited", got[0].Middleware)
	require.NotNil(t, got[0].Delay)
	require.InDelta(t, 62, *got[0].Delay, 2, "window rest + 3 s")
	require.Contains(t, got[0].Exception, "turned away by rate_limited (limit webhooks")

	require.True(t, jobLive(t, db, second), "back in the queue")
	require.Equal(t, 1, scalar[int](t, db, `SELECT attempts FROM pgq.jobs WHERE uuid = $1::uuid`, second), "one attempt spent")
	require.Equal(t, "turned_away", scalar[string](t, db, `SELECT wait_reason FROM pgq.jobs WHERE uuid = $1::uuid`, second))
	wait := scSecondsUntilAvailable(t, db, second)
	require.True(t, wait >= 55 && wait <= 65, "available in %.1fs, want about 63 s", wait)
	require.InDelta(t, float64(*got[0].Delay), scalar[float64](t, db, `SELECT extract(epoch FROM j.available_at - a.finished_at)::float8
		FROM pgq.jobs j JOIN pgq.attempts a ON a.job_uuid = j.uuid WHERE j.uuid = $1::uuid`, second), 0.01,
		"available_at is the turn-away plus its delay")

	require.Equal(t, []string{"1"}, scalar[[]string](t, db, `SELECT array_agg(n) FROM app.runs`), "only the first webhook ran")
	require.Contains(t, run2.logs(), `msg="job turned_away: turned away by rate_limited`)
	require.NotContains(t, run2.logs(), "outcome=succeeded", "the bounced webhook is not reported as done")
	var used, limit int
	var state string
	require.NoError(t, db.Pool.QueryRow(context.Background(),
		`SELECT used, max, state FROM pgq.limits WHERE kind = 'rate_limit' AND name = 'webhooks'`).Scan(&used, &limit, &state))
	require.Equal(t, []any{1, 1, "exhausted"}, []any{used, limit, state})
}

// S29: a circuit of 2 exceptions per 60 s. The vendor always answers 500; the class
// allows 10 tries behind throttles_exceptions (max_exceptions 2, decay 60, backoff 0).
// Three attempts: two reach the vendor and fail (the breaker releases them at once), the
// third is turned away at the door with the circuit open and waits until the circuit
// closes plus 3 s. Two handler calls for three attempts. Then the vendor comes back, the
// decay passes (simulated by moving the circuit's window back) and a success clears the
// circuit.
func TestS29ScenarioThrottlesExceptionsCircuit(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, appSchema+`
CREATE SEQUENCE app.vendor_calls;
CREATE TABLE app.vendor (up boolean NOT NULL);
INSERT INTO app.vendor VALUES (false);
CREATE FUNCTION app.call_vendor(p jsonb) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    PERFORM nextval('app.vendor_calls');
    IF NOT (SELECT up FROM app.vendor) THEN
        RAISE EXCEPTION 'vendor 500';
    END IF;
    INSERT INTO app.runs (n, started, finished) VALUES (p->>'n', clock_timestamp(), clock_timestamp());
END
$$;
SELECT pgq.define_job('call_vendor', handler => 'app.call_vendor', tries => 10,
                      middleware => '[{"throttles_exceptions": {"max_exceptions": 2, "decay": 60, "backoff": 0}}]');
`)
	calls := func() int {
		return scalar[int](t, db, `SELECT CASE WHEN is_called THEN last_value ELSE 0 END::int FROM app.vendor_calls`)
	}
	w := startWorker(t, db, "W", "--sleep", "0.2", "--concurrency", "2")
	id := dispatch(t, db, `pgq.dispatch('call_vendor', '{"order_id": 7, "n": "7"}')`)
	waitUntil(t, 5*time.Second, "three attempts", func() bool {
		n, _ := try[int](db, `SELECT count(*)::int FROM pgq.attempts WHERE job_uuid = $1::uuid`, id)
		return n >= 3
	})
	time.Sleep(500 * time.Millisecond) // a fourth attempt would come now if the circuit let it

	got := scAttemptsOf(t, db, id)
	require.Len(t, got, 3, "%+v", got)
	require.Equal(t, []string{"failed", "failed", "turned_away"}, []string{got[0].Outcome, got[1].Outcome, got[2].Outcome})
	require.Equal(t, 2, calls(), "three attempts, two calls")
	for _, at := range got[:2] {
		require.Equal(t, "vendor 500", at.Exception)
		require.NotNil(t, at.Delay)
		require.Equal(t, 0, *at.Delay, "the breaker's backoff")
	}
	require.Equal(t, "throttles_exceptions", got[2].Middleware)
	require.Contains(t, got[2].Exception, "turned away by throttles_exceptions (circuit call_vendor open: 2 exceptions within 60s)")
	require.NotNil(t, got[2].Delay)
	require.InDelta(t, 63, *got[2].Delay, 1)
	wait := scSecondsUntilAvailable(t, db, id)
	require.True(t, wait >= 55 && wait <= 65, "available in %.1fs, want about 63 s", wait)
	require.Equal(t, 3, scalar[int](t, db, `SELECT attempts FROM pgq.jobs WHERE uuid = $1::uuid`, id))
	require.Zero(t, scalar[int](t, db, `SELECT count(*)::int FROM pgq.failed_jobs`), "tries 10: nothing failed for good")

	var state, lastExc string
	var used, limit int
	require.NoError(t, db.Pool.QueryRow(context.Background(),
		`SELECT state, used, max, last_exception FROM pgq.limits WHERE kind = 'circuit' AND key = 'call_vendor'`).
		Scan(&state, &used, &limit, &lastExc))
	require.Equal(t, "open", state)
	require.Equal(t, []any{2, 2, "vendor 500"}, []any{used, limit, lastExc})
	require.Contains(t, w.logs(), `msg="job turned_away: turned away by throttles_exceptions`)
	require.NotContains(t, w.logs(), "outcome=succeeded")

	// The vendor is back and the decay has passed: the job runs, and its success clears
	// the circuit.
	db.Exec(t, `UPDATE app.vendor SET up = true`)
	db.Exec(t, `UPDATE pgq.circuits SET window_start = window_start - interval '61 seconds' WHERE key = 'call_vendor'`)
	require.True(t, scalar[bool](t, db, `SELECT pgq.run_now($1::uuid)`, id))
	waitUntil(t, 5*time.Second, "the job succeeded", func() bool { return !jobLive(t, db, id) })
	require.Equal(t, "succeeded", scOutcomes(t, db, id)[3])
	require.Equal(t, 3, calls())
	require.Zero(t, scalar[int](t, db, `SELECT count(*)::int FROM pgq.circuits`), "a success clears the circuit")
	require.Zero(t, scalar[int](t, db, `SELECT count(*)::int FROM pgq.limits WHERE kind = 'circuit'`))
}

// S12 (beyond), S18: MaxAttemptsExceeded carries the turn-away counts and the last real
// exception. tries 3: the first attempt reaches the vendor and throws 'vendor 500'; then
// the overlap key is held by someone else and the next two attempts are turned away; the
// fourth pickup fails the job before its handler, and the failed job says both.
func TestS12S18ScenarioExhaustedCarriesLastExceptionAndTurnAways(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, appSchema+`
CREATE FUNCTION app.boom(p jsonb) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'vendor 500';
END
$$;
SELECT pgq.define_job('sync_inventory', handler => 'app.boom', tries => 3, backoff => '{2}',
                      middleware => '[{"without_overlapping": {"by": ["product_id"]}}]');
`)
	startWorker(t, db, "W", "--sleep", "0.2", "--concurrency", "2")
	id := dispatch(t, db, `pgq.dispatch('sync_inventory', '{"product_id": 88}')`)
	waitUntil(t, 5*time.Second, "the first attempt threw", func() bool { return scCountOutcome(db, id, "failed") == 1 })
	scHoldOverlap(t, db, "sync_inventory:[88]") // before the 2 s backoff ends
	require.Equal(t, []string{"failed"}, scOutcomes(t, db, id), "(timing) the lock was taken during the backoff")

	waitUntil(t, 10*time.Second, "the job failed for good", func() bool {
		n, _ := try[int](db, `SELECT count(*)::int FROM pgq.failed_jobs WHERE uuid = $1::uuid`, id)
		return n == 1
	})
	require.Equal(t, []string{"failed", "turned_away", "turned_away", "exhausted"}, scOutcomes(t, db, id))
	exc := scalar[string](t, db, `SELECT exception FROM pgq.failed_jobs WHERE uuid = $1::uuid`, id)
	require.True(t, strings.HasPrefix(exc, "MaxAttemptsExceeded: sync_inventory attempted 3 times"), exc)
	require.Contains(t, exc, "last exception (attempt 1): vendor 500")
	require.Contains(t, exc, "turned away 2× by without_overlapping")
	require.NotContains(t, exc, "handler never ran")
}

// S8, S7: turn-aways shift the backoff index. backoff {10,60,300}: the job is turned
// away twice by a held overlap lock, then reaches its handler, which throws: that third
// attempt waits backoff[3] = 300 s, not 10 s. (Each turn-away waits its release_after,
// 30 s, cut short here with pgq.run_now.)
func TestS7S8ScenarioTurnAwaysShiftBackoff(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, appSchema+`
CREATE FUNCTION app.boom(p jsonb) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'vendor 500';
END
$$;
SELECT pgq.define_job('sync_inventory', handler => 'app.boom', tries => 5, backoff => '{10,60,300}',
                      middleware => '[{"without_overlapping": {"by": ["product_id"], "release_after": 30}}]');
`)
	unlock := scHoldOverlap(t, db, "sync_inventory:[88]")
	w := startWorker(t, db, "W", "--sleep", "0.2", "--concurrency", "2")
	id := dispatch(t, db, `pgq.dispatch('sync_inventory', '{"product_id": 88}')`)
	waitUntil(t, 5*time.Second, "turned away once", func() bool { return scCountOutcome(db, id, "turned_away") == 1 })
	require.True(t, scalar[bool](t, db, `SELECT pgq.run_now($1::uuid)`, id))
	waitUntil(t, 5*time.Second, "turned away twice", func() bool { return scCountOutcome(db, id, "turned_away") == 2 })
	unlock()
	require.True(t, scalar[bool](t, db, `SELECT pgq.run_now($1::uuid)`, id))
	waitUntil(t, 5*time.Second, "the handler threw", func() bool { return scCountOutcome(db, id, "failed") == 1 })

	got := scAttemptsOf(t, db, id)
	require.Len(t, got, 3, "%+v", got)
	for _, at := range got[:2] {
		require.Equal(t, "turned_away", at.Outcome)
		require.NotNil(t, at.Delay)
		require.Equal(t, 30, *at.Delay, "a turn-away waits its release_after, not the backoff")
	}
	require.Equal(t, "failed", got[2].Outcome)
	require.Equal(t, 3, got[2].Attempt)
	require.Equal(t, "vendor 500", got[2].Exception)
	require.NotNil(t, got[2].Delay)
	require.Equal(t, 300, *got[2].Delay, "S8: the first exception, at attempt 3, waits backoff[3]")
	require.Equal(t, "backoff", scalar[string](t, db, `SELECT wait_reason FROM pgq.jobs WHERE uuid = $1::uuid`, id))
	wait := scSecondsUntilAvailable(t, db, id)
	require.True(t, wait > 290 && wait <= 300, "available in %.1fs, want 300 s", wait)
	require.Contains(t, w.logs(), "delay=5m0s")
}

// S33, S4, S26: a job whose middleware cannot be evaluated must not stop the queue. A
// sync_inventory job keyed by product_id whose payload lacks product_id, or whose
// release_after (used when it is turned away: product 88 is taken) or expire_after (used
// when it is admitted: product 77 is free) is not a whole number of seconds, is either
// rejected at dispatch (22023, nothing written) or, once queued, fails on its own with a
// clear exception, while the worker keeps serving the other jobs: a rec job without
// middleware, and a sync_inventory job for product 88 dispatched just before it (whose
// overlap lock must not be left behind by a reservation that failed).
func TestS4S26S33ScenarioBrokenMiddlewareDoesNotStopTheQueue(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, call string }{
		{"payload lacks the by field", `pgq.dispatch('sync_inventory', '{"sku": 1, "n": "bad"}')`},
		{"fractional release_after", `pgq.dispatch('sync_inventory', '{"product_id": 88, "n": "bad"}',
			middleware => '[{"without_overlapping": {"by": ["product_id"], "release_after": 1.5}}]')`},
		{"fractional expire_after", `pgq.dispatch('sync_inventory', '{"product_id": 77, "n": "bad"}',
			middleware => '[{"without_overlapping": {"by": ["product_id"], "expire_after": 2.5}}]')`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			db := pgqtest.New(t)
			db.Exec(t, appSchema+scOverlapClass(3, `, "release_after": 1`)+
				`SELECT pgq.define_job('rec', handler => 'app.rec');`)
			good := []string{
				dispatch(t, db, `pgq.dispatch('sync_inventory', '{"product_id": 88, "n": "good sync"}')`),
				dispatch(t, db, `pgq.dispatch('rec', '{"n": "good rec"}')`),
			}
			var bad string
			var pgErr *pgconn.PgError
			if err := db.Pool.QueryRow(context.Background(), "SELECT ("+tc.call+")::text").Scan(&bad); errors.As(err, &pgErr) {
				require.Equal(t, "22023", pgErr.Code, "rejected at dispatch: %s", pgErr.Message)
				require.Equal(t, 2, scalar[int](t, db, `SELECT count(*)::int FROM pgq.live_jobs`), "nothing written")
				bad = ""
			} else {
				require.NoError(t, err)
			}

			// leaked describes who holds the advisory lock of product 88, for the messages.
			leaked := func() string {
				return fmt.Sprintf("backends holding the advisory lock of sync_inventory:[88]: %v; pgq.locks shows %v",
					scalar[[]string](t, db, `SELECT coalesce(array_agg(a.pid || ' ' || a.state || ': ' || left(regexp_replace(a.query, '\s+', ' ', 'g'), 60)), '{}')
						FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
						WHERE l.locktype = 'advisory' AND l.granted
						  AND (l.classid::bigint << 32 | l.objid::bigint) = pgq._overlap_lock_id('sync_inventory:[88]')`),
					scalar[[]string](t, db, `SELECT coalesce(array_agg(kind || ' ' || key), '{}') FROM pgq.locks`))
			}

			w := startWorker(t, db, "W", "--sleep", "0.3", "--concurrency", "3")
			waitUntil(t, 8*time.Second, "the good jobs ran", func() bool { return !jobLive(t, db, good[0]) && !jobLive(t, db, good[1]) })
			require.Equal(t, []string{"succeeded"}, scOutcomes(t, db, good[1]), "the rec job")
			require.Equal(t, "succeeded", scOutcomes(t, db, good[0])[len(scOutcomes(t, db, good[0]))-1],
				"the good sync for product 88 must run; its attempts: %v; %s", scOutcomes(t, db, good[0]), leaked())
			if bad != "" {
				waitUntil(t, 5*time.Second, "the bad job failed on its own", func() bool {
					n, _ := try[int](db, `SELECT count(*)::int FROM pgq.failed_jobs WHERE uuid = $1::uuid`, bad)
					return n == 1
				})
				t.Logf("the bad job failed with: %s", scalar[string](t, db, `SELECT exception FROM pgq.failed_jobs WHERE uuid = $1::uuid`, bad))
			}
			// No overlap lock is left behind: a later sync for product 88 runs.
			later := dispatch(t, db, `pgq.dispatch('sync_inventory', '{"product_id": 88, "n": "later sync"}')`)
			waitUntil(t, 8*time.Second, "the later sync is done", func() bool { return !jobLive(t, db, later) })
			require.Equal(t, []string{"succeeded"}, scOutcomes(t, db, later), "a later sync for product 88 must run; %s", leaked())
			require.False(t, w.exited())
			require.NotContains(t, w.logs(), "reserve failed")
		})
	}
}
