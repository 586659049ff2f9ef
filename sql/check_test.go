package sql_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pgq-dev/pgq/internal/pgqtest"
)

// S16: the ordering linter. Each check is made to fire on a bad setup and to stay quiet
// on the fixed one.
func TestS16OrderingLinter(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, rule   string
		bad, good    string
		worker       string // pgq.check arguments
		wantInDetail string
	}{
		{"WorkerTimeoutReachesRetryAfter", "timeout_reaches_retry_after",
			`SELECT pgq.define_queue('default', retry_after => 60)`,
			`SELECT pgq.define_queue('default', retry_after => 61)`,
			`worker_timeout => 60`, "worker --timeout 60 >= retry_after 60"},
		{"WorkerTimeoutZero", "timeout_zero", `SELECT 1`, `SELECT 1`, `worker_timeout => 0`, "--timeout 0 disables"},
		{"ClassTimeoutReachesRetryAfter", "timeout_reaches_retry_after",
			`SELECT pgq.define_job('report', timeout => 90)`,
			`SELECT pgq.define_job('report', timeout => 89)`,
			`worker_timeout => 30`, "timeout 90 >= retry_after 90 of queue default"},
		{"ClassTimeoutZero", "timeout_zero",
			`SELECT pgq.define_job('report', timeout => 0)`,
			`SELECT pgq.define_job('report', timeout => 30)`,
			`worker_timeout => 30`, "timeout 0 disables the handler timeout for this job"},
		{"UniqueForShorterThanRetries", "unique_for_shorter_than_retries",
			`SELECT pgq.define_job('sync', tries => 4, backoff => '{60,300,900}', timeout => 30, unique_for => '20 minutes')`,
			`SELECT pgq.define_job('sync', tries => 4, backoff => '{60,300,900}', timeout => 30, unique_for => '25 minutes')`,
			`worker_timeout => 30`, "unique_for 00:20:00 < backoffs + tries × timeout = 1380 s"},
		{"UniqueForUnlimitedTries", "unique_for_shorter_than_retries",
			`SELECT pgq.define_job('sync', tries => 0, unique_for => '1 hour')`,
			`SELECT pgq.define_job('sync', tries => 0, unique_for => '1 hour', retry_for => '30 minutes')`,
			`worker_timeout => 30`, "with unlimited tries"},
		{"BackoffPastRetryFor", "backoff_past_retry_for",
			`SELECT pgq.define_job('deadline', tries => 3, backoff => '{120}', retry_for => '3 minutes')`,
			`SELECT pgq.define_job('deadline', tries => 3, backoff => '{60}', retry_for => '3 minutes')`,
			`worker_timeout => 30`, "backoffs of 2 retries add up to 240 s, past retry_for 00:03:00"},
		{"ExpireAfterBelowTimeout", "expire_after_outside_timeout_retry_after",
			`SELECT pgq.define_job('inv', timeout => 30, middleware => '[{"without_overlapping": {"key": "k", "expire_after": 20}}]')`,
			`SELECT pgq.define_job('inv', timeout => 30, middleware => '[{"without_overlapping": {"key": "k", "expire_after": 45}}]')`,
			`worker_timeout => 30`, "expire_after 20 is not between timeout 30 and retry_after 90"},
		{"ExpireAfterPastRetryAfter", "expire_after_outside_timeout_retry_after",
			`SELECT pgq.define_job('inv', timeout => 30, middleware => '[{"without_overlapping": {"key": "k", "expire_after": 90}}]')`,
			`SELECT pgq.define_job('inv', timeout => 30, middleware => '[{"without_overlapping": {"key": "k", "expire_after": 89}}]')`,
			`worker_timeout => 30`, "expire_after 90 is not between timeout 30 and retry_after 90"},
		{"BackoffLongerThanTries", "backoff_longer_than_tries",
			`SELECT pgq.define_job('b', tries => 2, backoff => '{10,60}')`,
			`SELECT pgq.define_job('b', tries => 3, backoff => '{10,60}')`,
			`worker_timeout => 30`, "backoff has 2 entries but tries 2 allows only 1 retries"},
		{"UnevenBackoffBehindReleaseMiddleware", "uneven_backoff_behind_release_middleware",
			`SELECT pgq.define_limit('api', 10, '1 minute'); SELECT pgq.define_job('r', tries => 4, backoff => '{10,60,300}', middleware => '[{"rate_limited": {"limit": "api"}}]')`,
			`SELECT pgq.define_limit('api', 10, '1 minute'); SELECT pgq.define_job('r', tries => 4, backoff => '{60}', middleware => '[{"rate_limited": {"limit": "api"}}]')`,
			`worker_timeout => 30`, "release-based middleware (rate_limited) moves the backoff index"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			db := pgqtest.New(t)
			db.Exec(t, tc.bad)
			details := pgqtest.Scalar[[]string](t, db, `SELECT coalesce(array_agg(detail), '{}') FROM pgq.check(`+tc.worker+`) WHERE rule = $1`, tc.rule)
			require.Len(t, details, 1, "fires")
			require.Contains(t, details[0], tc.wantInDetail)
			require.NotEmpty(t, pgqtest.Scalar[string](t, db, `SELECT fix FROM pgq.check(`+tc.worker+`) WHERE rule = $1`, tc.rule))

			if tc.name == "WorkerTimeoutZero" {
				require.Equal(t, 0, count(t, db, "pgq.check(worker_timeout => 30) WHERE rule = $1", tc.rule), "quiet with a timeout")
				return
			}
			db.Exec(t, tc.good)
			require.Equal(t, 0, count(t, db, "pgq.check("+tc.worker+") WHERE rule = $1", tc.rule), "quiet once fixed")
		})
	}

	// a fresh install with the worker's defaults is clean
	db := pgqtest.New(t)
	require.Equal(t, 0, count(t, db, "pgq.check()"))
}

// pgq.queue_stats answers "how far behind is each queue?"; pgq.prune_all lets one caller
// at a time do the retention work.
func TestQueueStatsAndRetention(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, `SELECT pgq.dispatch('a'), pgq.dispatch('a'), pgq.dispatch('b', queue => 'mail', delay => '1 hour')`)
	db.Exec(t, `UPDATE pgq.jobs SET available_at = now() - interval '5 minutes' WHERE queue = 'default' AND id = (SELECT min(id) FROM pgq.jobs)`)
	var ready, scheduled int
	var wait float64
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT ready, scheduled, extract(epoch FROM oldest_wait) FROM pgq.queue_stats WHERE queue = 'default'`).Scan(&ready, &scheduled, &wait))
	require.Equal(t, 2, ready)
	require.InDelta(t, 300, wait, 5)
	require.Equal(t, 1, pgqtest.Scalar[int](t, db, `SELECT scheduled::int FROM pgq.queue_stats WHERE queue = 'mail'`))

	tx, err := db.Pool.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(ctx)
	var first *int64
	require.NoError(t, tx.QueryRow(ctx, `SELECT pgq.prune_all(interval '1 day')`).Scan(&first))
	require.NotNil(t, first, "the first caller does the work")
	require.Nil(t, pgqtest.Scalar[*int64](t, db, `SELECT pgq.prune_all(interval '1 day')`), "a concurrent caller returns at once")
}
