package dashboard

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgq-dev/pgq/internal/dbsqlc"
	"github.com/pgq-dev/pgq/internal/pgqtest"
)

// The chart's counts: the settled minutes are read once and kept, the unsettled ones on
// every request; nothing is counted twice as minutes settle, and minutes older than the
// chart are dropped. A row recorded late in a minute already kept is the one thing missed.
func TestOutcomeCountsKeepSettledMinutes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgqtest.New(t)
	q := dbsqlc.New(db.Pool)
	now := time.Now().Truncate(time.Minute).Add(30 * time.Second)
	add := func(at time.Time, outcome string, n int) {
		db.Exec(t, `INSERT INTO pgq.attempts (job_uuid, job, queue, attempt, finished_at, outcome)
			SELECT gen_random_uuid(), 'j', 'q', 1, $1, $2 FROM generate_series(1, $3)`, at, outcome, n)
	}
	total := func(rows []*dbsqlc.DashboardOutcomesPerMinuteRow, from time.Time) map[string]int64 {
		sums := map[string]int64{}
		for _, r := range rows {
			if !r.Minute.Before(from) {
				sums[r.Outcome] += r.Attempts
			}
		}
		return sums
	}
	add(now.Add(-90*time.Minute), "succeeded", 7) // before the chart
	add(now.Add(-50*time.Minute), "succeeded", 3)
	add(now.Add(-20*time.Minute), "failed", 2)
	add(now.Add(-time.Minute), "succeeded", 4) // not settled yet
	add(now, "succeeded", 1)

	var c outcomeCounts
	start := chartStart(now)
	rows, err := c.since(ctx, q, start, now)
	require.NoError(t, err)
	require.Equal(t, map[string]int64{"succeeded": 8, "failed": 2}, total(rows, start))
	require.Equal(t, now.Add(-settleTime).Truncate(time.Minute), c.settled)

	// Five minutes later: the minute that was not settled is now, and is counted once;
	// new attempts are counted; a late row in a kept minute is not.
	later := now.Add(5 * time.Minute)
	add(later, "timed_out", 5)
	add(now.Add(-20*time.Minute), "failed", 100) // late, in a settled minute
	start = chartStart(later)
	rows, err = c.since(ctx, q, start, later)
	require.NoError(t, err)
	require.Equal(t, map[string]int64{"succeeded": 8, "failed": 2, "timed_out": 5}, total(rows, start))

	// Two hours on, the old minutes are gone from the chart and the cache.
	much := now.Add(2 * time.Hour)
	rows, err = c.since(ctx, q, chartStart(much), much)
	require.NoError(t, err)
	require.Empty(t, total(rows, chartStart(much)))
	for m := range c.counts {
		require.False(t, m.Before(chartStart(much)), "minute %s kept past the chart", m)
	}
}
