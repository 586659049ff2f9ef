package worker

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgq-dev/pgq/internal/dbsqlc"
	"github.com/pgq-dev/pgq/internal/pgqtest"
	"github.com/pgq-dev/pgq/pgq"
)

// dispatchHolds dispatches n jobs "hold" with the payloads 1 to n, in a new database.
func dispatchHolds(t *testing.T, n int) *pgqtest.DB {
	t.Helper()
	db := pgqtest.New(t)
	client, err := pgq.NewClient(db.Pool)
	require.NoError(t, err)
	payloads := make([]any, n)
	for i := range payloads {
		payloads[i] = i + 1
	}
	_, err = client.DispatchMany(context.Background(), "hold", payloads)
	require.NoError(t, err)
	return db
}

// openFetcher opens w's session for driving its fetcher without Run; at the end of the
// test the waiting handler goroutines exit and the session closes.
func openFetcher(t *testing.T, w *Worker) *fetcher {
	t.Helper()
	require.NoError(t, w.session.open(context.Background()))
	t.Cleanup(func() { w.session.close(context.Background()) })
	t.Cleanup(func() { close(w.executor.stopped) })
	return w.fetcher
}

// The fetcher's runOnce on its own, without Run's loop: one reserve of at most the free
// slots, its jobs started, and what it sets for the next reserve. The reporter's
// batchers, started afterwards, report what the handlers left waiting.
func TestFetcherRunOnce(t *testing.T) {
	t.Parallel()
	db := dispatchHolds(t, 5)
	ctx := context.Background()
	w, err := New(db.WorkerPool, WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))), WithConcurrency(6))
	require.NoError(t, err)
	release := make(chan struct{})
	Handle(w, "hold", Handler[int]{Run: func(context.Context, *Job[int]) error {
		<-release
		return nil
	}})
	f := openFetcher(t, w)
	require.NoError(t, f.runOnce(ctx, 3, 0))
	require.Equal(t, 3, f.reserved)
	require.True(t, f.fetch, "a full reserve: the next one is due at once")
	require.EqualValues(t, 3, w.executor.busy.Load())

	require.NoError(t, f.runOnce(ctx, 3, 0))
	require.Equal(t, 5, f.reserved, "the two jobs left")
	require.False(t, f.fetch, "a short reserve: the next one waits for a wake-up, a freed slot or the poll")
	require.False(t, f.coolUntil.IsZero(), "and for the cooldown")
	require.Equal(t, 5, w.active.count())

	close(release)
	require.Eventually(t, func() bool { return w.executor.busy.Load() == 0 }, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, 5, w.active.count(), "held until their completions are reported")
	stop := w.reporter.start()
	stop()
	require.Zero(t, w.active.count())
	require.Equal(t, 5, pgqtest.Scalar[int](t, db, `SELECT count(*)::int FROM pgq.attempts WHERE outcome = 'succeeded'`))
}

// S27, S34: overlap leases need renewing while a renewal can move their end: always
// when a key has no expire_after; otherwise until the TTL from the last renewal reaches
// the reservation + the largest expire_after.
func TestS27S34OverlapRenewingUntilExpireAfter(t *testing.T) {
	t.Parallel()
	at := time.Now()
	keys := &dbsqlc.JobReserveRow{OverlapKeys: []string{"k"}}
	for _, c := range []struct {
		name    string
		row     *dbsqlc.JobReserveRow
		freeAt  time.Time
		renewed time.Time
		want    bool
	}{
		{"no key", &dbsqlc.JobReserveRow{}, time.Time{}, at, false},
		{"a key without expire_after", keys, time.Time{}, at.Add(-time.Hour), true},
		{"expire_after within the TTL", keys, at.Add(time.Second), at, false},
		{"expire_after past the TTL", keys, at.Add(30 * time.Second), at, true},
		{"renewed until the TTL reaches it", keys, at.Add(30 * time.Second), at.Add(19 * time.Second), true},
		{"the TTL reaches it", keys, at.Add(30 * time.Second), at.Add(20 * time.Second), false},
	} {
		a := &active{row: c.row, overlapFreeAt: c.freeAt, overlapRenewed: c.renewed}
		require.Equal(t, c.want, a.overlapRenewing(), c.name)
	}
}

// S34: the worker's idea of an overlap lease's length is pgq._overlap_ttl(), and its
// renewal, cancellation and grace fit inside it.
func TestS34OverlapTTLMatchesSQL(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	require.Equal(t, overlapTTL, pgqtest.Scalar[time.Duration](t, db, `SELECT pgq._overlap_ttl()`))
	require.Less(t, overlapRenewWithin+time.Second+overlapGrace, overlapTTL,
		"a handler whose lease went unrenewed is cancelled and given up on before the lease can run out")
}

// S84: a reserve that asks for jobs ahead of its free slots starts those it has slots
// for and keeps the rest waiting, in reserve order; a waiting job starts as a slot
// frees, with its whole timeout; one that waits past its bound, and every one still
// waiting at a stop, goes back to wait, never started and not counted.
func TestS84ReserveAhead(t *testing.T) {
	t.Parallel()
	db := dispatchHolds(t, 6)
	ctx := context.Background()
	const timeout = 3 * time.Second
	w, err := New(db.WorkerPool, WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))), WithConcurrency(2),
		WithTimeout(timeout))
	require.NoError(t, err)
	release := make(chan struct{})
	type start struct {
		n        int
		deadline time.Time
	}
	started := make(chan start, 6)
	Handle(w, "hold", Handler[int]{Run: func(ctx context.Context, j *Job[int]) error {
		d, _ := ctx.Deadline()
		started <- start{j.Args, d}
		<-release
		return nil
	}})
	f := openFetcher(t, w)
	next := func() start {
		select {
		case s := <-started:
			return s
		case <-time.After(10 * time.Second):
			t.Fatal("no handler started")
			return start{}
		}
	}

	sent := time.Now()
	require.NoError(t, f.runOnce(ctx, 2, 2))
	require.True(t, f.full, "every job asked for came")
	require.EqualValues(t, 2, w.executor.busy.Load(), "two slots, two handlers")
	require.Len(t, f.waiting, 2, "two reserved ahead")
	require.ElementsMatch(t, []int{1, 2}, []int{next().n, next().n})
	require.False(t, f.startWaiting(ctx), "no slot is free")

	time.Sleep(300 * time.Millisecond)
	release <- struct{}{}
	require.Eventually(t, func() bool { return w.executor.busy.Load() == 1 }, 10*time.Second, time.Millisecond)
	require.False(t, f.startWaiting(ctx), "one slot freed, one job still waits")
	s := next()
	require.Equal(t, 3, s.n, "the waiting jobs start in reserve order")
	require.Greater(t, s.deadline.Sub(sent), timeout+250*time.Millisecond,
		"its timeout runs from its start, not from the reserve")

	require.Len(t, f.waiting, 1)
	require.WithinDuration(t, sent.Add(aheadWaitMax), f.waiting[0].until, 100*time.Millisecond, "its bound: 1 s")
	time.Sleep(time.Until(f.waiting[0].until))
	require.True(t, f.startWaiting(ctx), "job 4 waited its longest")
	require.Empty(t, f.waiting)
	notCounted := `SELECT count(*)::int FROM pgq.jobs j JOIN pgq.attempts a ON a.job_uuid = j.uuid
		WHERE (j.payload->>0)::int = $1 AND j.reserved_at IS NULL AND j.attempts = 0
		  AND a.outcome = 'interrupted' AND a.exception LIKE $2`
	require.Equal(t, 1, pgqtest.Scalar[int](t, db, notCounted, 4, "reserved ahead of a free slot, none came free in time: never started%"))

	// A stop: the jobs reserved ahead go back.
	require.NoError(t, f.runOnce(ctx, 0, 2))
	require.Len(t, f.waiting, 2)
	stopped, cancel := context.WithCancel(ctx)
	cancel()
	require.NoError(t, f.run(stopped))
	require.Empty(t, f.waiting)
	for _, n := range []int{5, 6} {
		require.Equal(t, 1, pgqtest.Scalar[int](t, db, notCounted, n, "the worker stopped before a slot came free: never started%"), "job %d", n)
	}

	close(release)
	stop := w.reporter.start()
	require.Eventually(t, func() bool { return w.active.count() == 0 }, 10*time.Second, 10*time.Millisecond)
	stop()
	require.Equal(t, 3, pgqtest.Scalar[int](t, db, `SELECT count(*)::int FROM pgq.attempts WHERE outcome = 'succeeded'`))
	require.Equal(t, 3, pgqtest.Scalar[int](t, db, `SELECT count(*)::int FROM pgq.jobs WHERE reserved_at IS NULL AND attempts = 0`),
		"jobs 4, 5 and 6 wait again, no attempt used")
}
