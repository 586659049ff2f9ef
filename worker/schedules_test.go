package worker

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgq-dev/pgq/internal/dbsqlc"
	"github.com/pgq-dev/pgq/internal/pgqtest"
)

func newTestSchedules(db *pgqtest.DB) *schedules {
	return newSchedules(dbsqlc.New(db.Pool), slog.New(slog.NewTextHandler(io.Discard, nil)))
}

// tickTimes lists the ticks of the jobs dispatched for job, from their unique keys.
func tickTimes(t *testing.T, db *pgqtest.DB, job string) []time.Time {
	t.Helper()
	keys := pgqtest.Scalar[[]string](t, db,
		`SELECT coalesce(array_agg(substring(unique_key FROM '[^:]+:[^:]+:(.*)$') ORDER BY unique_key), '{}') FROM pgq.jobs WHERE job = $1`, job)
	out := make([]time.Time, len(keys))
	for i, k := range keys {
		tk, err := time.Parse("2006-01-02T15:04:05Z", k)
		require.NoError(t, err)
		out[i] = tk
	}
	return out
}

// nextRunAt is the schedule's next tick; it fails the test while the schedule is pending.
func nextRunAt(t *testing.T, db *pgqtest.DB, name string) time.Time {
	t.Helper()
	next := pgqtest.Scalar[*time.Time](t, db, `SELECT next_run_at FROM pgq.schedules WHERE name = $1`, name)
	require.NotNil(t, next, "schedule %s is planned", name)
	return next.UTC()
}

// S61, S66: two workers' rounds, run at the same moments, plan a pending schedule once
// and dispatch each tick of a per-second schedule once: ten ticks, ten jobs, no gap.
// A round waits until the next tick when it is due within a second.
func TestS61S66RoundsOfTwoWorkers(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	ctx := context.Background()
	db.Exec(t, `SELECT pgq.schedule('every_second', '* * * * * *', 'tick', queue => 'ticks')`)
	workers := []*schedules{newTestSchedules(db), newTestSchedules(db)}
	start := time.Date(2030, 1, 7, 10, 0, 0, 250_000_000, time.UTC)

	wait, err := workers[0].runOnce(ctx, start)
	require.NoError(t, err)
	require.Equal(t, start.Truncate(time.Second).Add(time.Second), nextRunAt(t, db, "every_second"))
	require.Equal(t, time.Second, wait, "planned, not yet due within the round it asked about")
	wait, err = workers[1].runOnce(ctx, start.Add(10*time.Millisecond))
	require.NoError(t, err)
	require.LessOrEqual(t, wait, 745*time.Millisecond, "woken for the tick, not a second later")

	for i := 1; i <= 10; i++ {
		now := start.Add(time.Duration(i) * time.Second)
		var wg sync.WaitGroup
		for _, w := range workers {
			wg.Go(func() {
				_, err := w.runOnce(ctx, now)
				require.NoError(t, err)
			})
		}
		wg.Wait()
	}
	ticks := tickTimes(t, db, "tick")
	require.Len(t, ticks, 10)
	for i, tk := range ticks {
		require.Equal(t, start.Truncate(time.Second).Add(time.Duration(i+1)*time.Second), tk)
	}
}

// S62, S66: a worker back after ten minutes down hands the missed ticks of a per-minute
// schedule to pgq.fire_schedule, which keeps what catch_up says: all ten, the latest, or
// none but the one still on time.
func TestS62S66CatchUpThroughARound(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	ctx := context.Background()
	start := time.Date(2030, 1, 7, 10, 0, 0, 500_000_000, time.UTC)
	w := newTestSchedules(db)
	for _, c := range []string{"all", "latest", "none"} {
		db.Exec(t, `SELECT pgq.schedule($1, '* * * * *', $1, catch_up => $1)`, c)
	}
	_, err := w.runOnce(ctx, start)
	require.NoError(t, err)
	back := start.Add(10*time.Minute + 10*time.Second) // 10:01 .. 10:10 due, 10:10 on time
	_, err = w.runOnce(ctx, back)
	require.NoError(t, err)
	minute := func(m int) time.Time { return time.Date(2030, 1, 7, 10, m, 0, 0, time.UTC) }
	require.Len(t, tickTimes(t, db, "all"), 10)
	require.Equal(t, []time.Time{minute(10)}, tickTimes(t, db, "latest"))
	require.Equal(t, []time.Time{minute(10)}, tickTimes(t, db, "none"), "10:10 is 10 s late: on time")
	for c, skipped := range map[string]int64{"all": 0, "latest": 9, "none": 9} {
		require.Equal(t, skipped, pgqtest.Scalar[int64](t, db, `SELECT skipped_ticks FROM pgq.schedules WHERE name = $1`, c), c)
		require.Equal(t, minute(11), nextRunAt(t, db, c))
	}
}

// S63, S66: through the worker's rounds, a daily 02:30 in Europe/Berlin dispatches one
// job on each calendar day around both transitions of 2026 (at 03:30 CEST on the
// spring-forward day, at the first 02:30 on the fall-back day), and an hourly schedule
// 23 and 25 jobs on those days.
func TestS63S66DaylightSavingThroughRounds(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	ctx := context.Background()
	berlin, err := time.LoadLocation("Europe/Berlin")
	require.NoError(t, err)
	w := newTestSchedules(db)
	// run drives the rounds from `from` to `to` as a worker's sleeps would: to each next
	// tick, a moment after it.
	run := func(name string, from, to time.Time) {
		_, err := w.runOnce(ctx, from)
		require.NoError(t, err)
		for now := nextRunAt(t, db, name).Add(200 * time.Millisecond); now.Before(to); now = nextRunAt(t, db, name).Add(200 * time.Millisecond) {
			_, err := w.runOnce(ctx, now)
			require.NoError(t, err)
		}
	}
	inBerlin := func(ts []time.Time) []string {
		out := make([]string, len(ts))
		for i, t := range ts {
			out[i] = t.In(berlin).Format("2006-01-02 15:04 MST")
		}
		return out
	}

	db.Exec(t, `SELECT pgq.schedule('daily_spring', '30 2 * * *', 'daily_spring', timezone => 'Europe/Berlin')`)
	run("daily_spring", time.Date(2026, 3, 27, 12, 0, 0, 0, berlin), time.Date(2026, 3, 31, 12, 0, 0, 0, berlin))
	require.Equal(t, []string{"2026-03-28 02:30 CET", "2026-03-29 03:30 CEST", "2026-03-30 02:30 CEST", "2026-03-31 02:30 CEST"},
		inBerlin(tickTimes(t, db, "daily_spring")))

	db.Exec(t, `SELECT pgq.schedule('daily_fall', '30 2 * * *', 'daily_fall', timezone => 'Europe/Berlin')`)
	run("daily_fall", time.Date(2026, 10, 23, 12, 0, 0, 0, berlin), time.Date(2026, 10, 27, 12, 0, 0, 0, berlin))
	require.Equal(t, []string{"2026-10-24 02:30 CEST", "2026-10-25 02:30 CEST", "2026-10-26 02:30 CET", "2026-10-27 02:30 CET"},
		inBerlin(tickTimes(t, db, "daily_fall")))

	for _, tc := range []struct {
		day  time.Time
		jobs int
	}{{time.Date(2026, 3, 29, 0, 0, 0, 0, berlin), 23}, {time.Date(2026, 10, 25, 0, 0, 0, 0, berlin), 25}} {
		name := "hourly_" + tc.day.Format("0102")
		db.Exec(t, `SELECT pgq.schedule($1, '@hourly', $1, timezone => 'Europe/Berlin')`, name)
		run(name, tc.day.Add(-time.Minute), tc.day.AddDate(0, 0, 1).Add(-time.Minute))
		require.Len(t, tickTimes(t, db, name), tc.jobs, name)
	}
}
