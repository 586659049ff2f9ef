package pgq_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/pgq-dev/pgq/internal/pgqtest"
	"github.com/pgq-dev/pgq/pgq"
)

// failJob dispatches job on queue with one try and fails it for good through pgq.reserve
// and pgq.fail, as a worker does. It returns the job's uuid.
func failJob(t *testing.T, db *pgqtest.DB, queue, job string) uuid.UUID {
	t.Helper()
	id := pgqtest.Scalar[uuid.UUID](t, db, `SELECT pgq.dispatch($1, '{}', queue => $2, tries => 1)`, job, queue)
	token := pgqtest.Scalar[uuid.UUID](t, db,
		`SELECT lease_token FROM pgq.reserve('test', ARRAY[$1], 1) WHERE uuid = $2 AND pickup IS NULL`, queue, id)
	require.True(t, pgqtest.Scalar[bool](t, db, `SELECT final FROM pgq.fail($1, $2, 'boom')`, id, token))
	return id
}

// S20 with filters: FlushFailed and RetryAllFailed touch exactly the failed jobs of the
// queue, job name and age asked for, and every failed job for the zero filter.
func TestS20FailedFilters(t *testing.T) {
	t.Parallel()
	// Failed jobs: a and b on queues default and other, and an old a on other.
	type fixture struct {
		defaultA, defaultB, otherA, otherB, oldOtherA uuid.UUID
	}
	setup := func(t *testing.T) (*pgqtest.DB, *pgq.Client, fixture) {
		db := pgqtest.New(t)
		client, err := pgq.NewClient(db.Pool)
		require.NoError(t, err)
		f := fixture{
			defaultA: failJob(t, db, "default", "a"), defaultB: failJob(t, db, "default", "b"),
			otherA: failJob(t, db, "other", "a"), otherB: failJob(t, db, "other", "b"),
			oldOtherA: failJob(t, db, "other", "a"),
		}
		db.Exec(t, `UPDATE pgq.failed_jobs SET failed_at = now() - interval '2 hours' WHERE uuid = $1`, f.oldOtherA)
		return db, client, f
	}
	cases := []struct {
		name   string
		filter pgq.FailedFilter
		match  func(fixture) []uuid.UUID
	}{
		{"Queue", pgq.FailedFilter{Queue: "other"}, func(f fixture) []uuid.UUID { return []uuid.UUID{f.otherA, f.otherB, f.oldOtherA} }},
		{"Job", pgq.FailedFilter{Job: "b"}, func(f fixture) []uuid.UUID { return []uuid.UUID{f.defaultB, f.otherB} }},
		{"QueueAndJob", pgq.FailedFilter{Queue: "other", Job: "a"}, func(f fixture) []uuid.UUID { return []uuid.UUID{f.otherA, f.oldOtherA} }},
		{"OlderThan", pgq.FailedFilter{OlderThan: time.Hour}, func(f fixture) []uuid.UUID { return []uuid.UUID{f.oldOtherA} }},
		{"QueueOlderThan", pgq.FailedFilter{Queue: "default", OlderThan: time.Hour}, func(fixture) []uuid.UUID { return nil }},
		{"JobOlderThan", pgq.FailedFilter{Job: "a", OlderThan: time.Hour}, func(f fixture) []uuid.UUID { return []uuid.UUID{f.oldOtherA} }},
		{"None", pgq.FailedFilter{}, func(f fixture) []uuid.UUID {
			return []uuid.UUID{f.defaultA, f.defaultB, f.otherA, f.otherB, f.oldOtherA}
		}},
	}
	failed := func(t *testing.T, db *pgqtest.DB) []uuid.UUID {
		return pgqtest.Scalar[[]uuid.UUID](t, db, `SELECT coalesce(array_agg(uuid ORDER BY id), '{}') FROM pgq.failed_jobs`)
	}
	waiting := func(t *testing.T, db *pgqtest.DB) []uuid.UUID {
		return pgqtest.Scalar[[]uuid.UUID](t, db, `SELECT coalesce(array_agg(uuid ORDER BY id), '{}') FROM pgq.jobs`)
	}
	all := func(f fixture) []uuid.UUID {
		return []uuid.UUID{f.defaultA, f.defaultB, f.otherA, f.otherB, f.oldOtherA}
	}
	without := func(all, gone []uuid.UUID) []uuid.UUID {
		out := []uuid.UUID{}
		for _, id := range all {
			if !slices.Contains(gone, id) {
				out = append(out, id)
			}
		}
		return out
	}
	for _, tc := range cases {
		t.Run("Flush"+tc.name, func(t *testing.T) {
			t.Parallel()
			db, client, f := setup(t)
			n, err := client.FlushFailed(context.Background(), tc.filter)
			require.NoError(t, err)
			require.EqualValues(t, len(tc.match(f)), n)
			require.Equal(t, without(all(f), tc.match(f)), failed(t, db))
			require.Empty(t, waiting(t, db))
		})
		t.Run("Retry"+tc.name, func(t *testing.T) {
			t.Parallel()
			db, client, f := setup(t)
			n, err := client.RetryAllFailed(context.Background(), tc.filter)
			require.NoError(t, err)
			require.Equal(t, len(tc.match(f)), n)
			require.Equal(t, without(all(f), tc.match(f)), failed(t, db))
			require.ElementsMatch(t, tc.match(f), waiting(t, db))
		})
	}
	t.Run("NegativeOlderThan", func(t *testing.T) {
		t.Parallel()
		db, client, f := setup(t)
		_, err := client.FlushFailed(context.Background(), pgq.FailedFilter{Queue: "other", OlderThan: -time.Hour})
		require.ErrorIs(t, err, pgq.ErrInvalidArgument)
		_, err = client.RetryAllFailed(context.Background(), pgq.FailedFilter{OlderThan: -time.Hour})
		require.ErrorIs(t, err, pgq.ErrInvalidArgument)
		require.Equal(t, all(f), failed(t, db), "nothing touched")
	})
}

// S20 under concurrency: filtered flushes and retries of the same failed jobs, racing,
// handle each job once: the counts they return add up to the jobs there were, every job
// is either requeued or gone, and none is both.
func TestS20FailedFiltersConcurrent(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	client, err := pgq.NewClient(db.Pool)
	require.NoError(t, err)
	const jobs = 40
	for range jobs {
		failJob(t, db, "q", "a")
	}
	var (
		wg              sync.WaitGroup
		flushed         int64
		retried         int
		mu              sync.Mutex
		errs            []error
		ctx             = context.Background()
		flush, retryAll = pgq.FailedFilter{Queue: "q"}, pgq.FailedFilter{Job: "a"}
	)
	for range 4 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			n, err := client.FlushFailed(ctx, flush)
			mu.Lock()
			defer mu.Unlock()
			flushed += n
			errs = append(errs, err)
		}()
		go func() {
			defer wg.Done()
			n, err := client.RetryAllFailed(ctx, retryAll)
			mu.Lock()
			defer mu.Unlock()
			retried += n
			errs = append(errs, err)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	t.Logf("flushed %d, retried %d", flushed, retried)
	require.EqualValues(t, jobs, flushed+int64(retried))
	require.Zero(t, pgqtest.Scalar[int](t, db, `SELECT count(*)::int FROM pgq.failed_jobs`))
	require.Equal(t, retried, pgqtest.Scalar[int](t, db, `SELECT count(*)::int FROM pgq.jobs`))
}

// S20 under concurrency: a filtered flush or retry that meets failed jobs another
// transaction is forgetting or retrying waits for it, then skips the jobs it took: no
// error, and only the jobs it handled itself are counted.
func TestS20FailedFiltersSkipJobsTakenConcurrently(t *testing.T) {
	t.Parallel()
	for _, retry := range []bool{false, true} {
		name := map[bool]string{false: "Flush", true: "Retry"}[retry]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			db := pgqtest.New(t)
			client, err := pgq.NewClient(db.Pool)
			require.NoError(t, err)
			ctx := context.Background()
			var ids []uuid.UUID
			for range 10 {
				ids = append(ids, failJob(t, db, "q", "a"))
			}
			// Another operator forgets two jobs and retries one, and has not committed.
			tx, err := db.Pool.Begin(ctx)
			require.NoError(t, err)
			defer tx.Rollback(ctx) // a no-op once committed
			_, err = tx.Exec(ctx, `SELECT pgq.forget_failed($1), pgq.forget_failed($2), pgq.retry_failed($3)`, ids[2], ids[6], ids[4])
			require.NoError(t, err)

			done := make(chan struct{})
			var n int64
			var opErr error
			go func() {
				defer close(done)
				if retry {
					var r int
					r, opErr = client.RetryAllFailed(ctx, pgq.FailedFilter{Queue: "q", Job: "a"})
					n = int64(r)
				} else {
					n, opErr = client.FlushFailed(ctx, pgq.FailedFilter{Queue: "q", Job: "a"})
				}
			}()
			deadline := time.Now().Add(10 * time.Second)
			for pgqtest.Scalar[int](t, db, `SELECT count(*)::int FROM pg_stat_activity
				WHERE datname = current_database() AND wait_event_type = 'Lock'`) == 0 {
				require.True(t, time.Now().Before(deadline), "the %s never waited for the open transaction", name)
				time.Sleep(10 * time.Millisecond)
			}
			require.NoError(t, tx.Commit(ctx))
			<-done
			require.NoError(t, opErr)
			require.EqualValues(t, 7, n, "the three jobs the other transaction took are not counted")
			require.Zero(t, pgqtest.Scalar[int](t, db, `SELECT count(*)::int FROM pgq.failed_jobs`))
			want := 1
			if retry {
				want = 8
			}
			require.Equal(t, want, pgqtest.Scalar[int](t, db, `SELECT count(*)::int FROM pgq.jobs`))
		})
	}
}
