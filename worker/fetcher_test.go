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

// The fetcher's runOnce on its own, without Run's loop: one reserve of at most the free
// slots, its jobs started, and what it sets for the next reserve. The reporter's
// batchers, started afterwards, report what the handlers left waiting.
func TestFetcherRunOnce(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	client, err := pgq.NewClient(db.Pool)
	require.NoError(t, err)
	ctx := context.Background()
	_, err = client.DispatchMany(ctx, "hold", []any{1, 2, 3, 4, 5})
	require.NoError(t, err)

	w, err := New(db.WorkerPool, WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))), WithConcurrency(4))
	require.NoError(t, err)
	release := make(chan struct{})
	Handle(w, "hold", Handler[int]{Run: func(context.Context, *Job[int]) error {
		<-release
		return nil
	}})
	require.NoError(t, w.session.open(ctx))
	defer w.session.close(ctx)
	defer close(w.executor.stopped)

	f := w.fetcher
	require.NoError(t, f.runOnce(ctx, 3))
	require.Equal(t, 3, f.reserved)
	require.True(t, f.fetch, "a full reserve: the next one is due at once")
	require.EqualValues(t, 3, w.executor.busy.Load())

	require.NoError(t, f.runOnce(ctx, 3))
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
