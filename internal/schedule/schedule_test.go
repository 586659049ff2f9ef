package schedule_test

// Tick computation with a fixed clock: no test waits for real time.

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgq-dev/pgq/internal/schedule"
)

func berlin(t *testing.T) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation("Europe/Berlin")
	require.NoError(t, err)
	return loc
}

// ticksBetween lists the ticks of s in (from, to].
func ticksBetween(s *schedule.Spec, from, to time.Time) []time.Time {
	var out []time.Time
	for t := s.Next(from); !t.IsZero() && !t.After(to); t = s.Next(t) {
		out = append(out, t)
	}
	return out
}

func wall(ts []time.Time, loc *time.Location) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.In(loc).Format("2006-01-02 15:04:05 MST")
	}
	return out
}

func mustNew(t *testing.T, expr, tz string) *schedule.Spec {
	t.Helper()
	s, err := schedule.New(expr, tz)
	require.NoError(t, err)
	return s
}

// A daily 02:30 in Europe/Berlin fires once on every calendar day: on the
// spring-forward day (29 March 2026, 02:00 CET -> 03:00 CEST) 02:30 does not exist and
// fires at 03:30 CEST, the instant 02:30 CET would have been; on the fall-back day
// (25 October 2026, 03:00 CEST -> 02:00 CET) 02:30 happens twice and fires at its first
// occurrence only. robfig/cron alone skips the first and fires twice on the second.
func TestS63DailyInBerlinFiresOncePerCalendarDay(t *testing.T) {
	t.Parallel()
	loc := berlin(t)
	s := mustNew(t, "30 2 * * *", "Europe/Berlin")

	spring := ticksBetween(s, time.Date(2026, 3, 27, 12, 0, 0, 0, loc), time.Date(2026, 3, 31, 12, 0, 0, 0, loc))
	require.Equal(t, []string{
		"2026-03-28 02:30:00 CET",
		"2026-03-29 03:30:00 CEST", // 02:30 does not exist that day
		"2026-03-30 02:30:00 CEST",
		"2026-03-31 02:30:00 CEST",
	}, wall(spring, loc))
	require.Equal(t, "2026-03-29T01:30:00Z", spring[1].UTC().Format(time.RFC3339), "the instant of 02:30 at the old offset, as PostgreSQL reads it")

	fall := ticksBetween(s, time.Date(2026, 10, 23, 12, 0, 0, 0, loc), time.Date(2026, 10, 27, 12, 0, 0, 0, loc))
	require.Equal(t, []string{
		"2026-10-24 02:30:00 CEST",
		"2026-10-25 02:30:00 CEST", // the first of the two 02:30s; 02:30 CET does not fire
		"2026-10-26 02:30:00 CET",
		"2026-10-27 02:30:00 CET",
	}, wall(fall, loc))
}

// Schedules whose hour field is * follow real time through both transitions: an hourly
// schedule fires 23 times on the spring-forward day and 25 on the fall-back day, a
// per-second one every second of either, never twice at one instant. Fixed hours fire
// each wall-clock time once: every 15 minutes during hour 2 fires four times on both
// days, and an every-two-hours schedule fires the skipped 02:00 at 03:00 CEST.
func TestS63DaylightSavingDays(t *testing.T) {
	t.Parallel()
	loc := berlin(t)
	springDay := [2]time.Time{time.Date(2026, 3, 29, 0, 0, 0, 0, loc), time.Date(2026, 3, 30, 0, 0, 0, 0, loc)}
	fallDay := [2]time.Time{time.Date(2026, 10, 25, 0, 0, 0, 0, loc), time.Date(2026, 10, 26, 0, 0, 0, 0, loc)}
	day := func(s *schedule.Spec, d [2]time.Time) []time.Time {
		return ticksBetween(s, d[0].Add(-time.Second), d[1].Add(-time.Second))
	}
	distinct := func(ts []time.Time) {
		for i := 1; i < len(ts); i++ {
			require.True(t, ts[i].After(ts[i-1]), "ticks ascend strictly: %s then %s", ts[i-1], ts[i])
		}
	}

	hourly := mustNew(t, "@hourly", "Europe/Berlin")
	require.Len(t, day(hourly, springDay), 23)
	require.Len(t, day(hourly, fallDay), 25)
	distinct(day(hourly, fallDay))
	require.Equal(t, []string{"2026-10-25 02:00:00 CEST", "2026-10-25 02:00:00 CET"},
		wall(day(hourly, fallDay)[2:4], loc), "an hourly schedule fires in both 2 o'clocks")

	perSecond := mustNew(t, "* * * * * *", "Europe/Berlin")
	spring := day(perSecond, springDay)
	require.Len(t, spring, 23*3600)
	distinct(spring)
	fall := day(perSecond, fallDay)
	require.Len(t, fall, 25*3600)
	distinct(fall)

	quarter := mustNew(t, "*/15 2 * * *", "Europe/Berlin")
	require.Equal(t, []string{"2026-03-29 03:00:00 CEST", "2026-03-29 03:15:00 CEST", "2026-03-29 03:30:00 CEST", "2026-03-29 03:45:00 CEST"},
		wall(day(quarter, springDay), loc))
	require.Equal(t, []string{"2026-10-25 02:00:00 CEST", "2026-10-25 02:15:00 CEST", "2026-10-25 02:30:00 CEST", "2026-10-25 02:45:00 CEST"},
		wall(day(quarter, fallDay), loc))

	twoHourly := mustNew(t, "0 */2 * * *", "Europe/Berlin")
	require.Equal(t, []string{"2026-03-29 00:00:00 CET", "2026-03-29 03:00:00 CEST", "2026-03-29 04:00:00 CEST"},
		wall(day(twoHourly, springDay)[:3], loc))
	require.Len(t, day(twoHourly, springDay), 12)
	require.Len(t, day(twoHourly, fallDay), 12)

	// @every is absolute time: 25 hours of ticks on the fall-back day.
	every := mustNew(t, "@every 1h", "Europe/Berlin")
	var n int
	for tk := every.Next(fallDay[0].Add(-time.Hour)); tk.Before(fallDay[1]); tk = every.Next(tk) {
		n++
	}
	require.Equal(t, 25, n)
}

// Daylight saving in the southern hemisphere and a half-hour shift follow the same
// rules: a daily time in the gap fires once, at the old offset.
func TestS63OtherZones(t *testing.T) {
	t.Parallel()
	// Lord Howe Island moves by 30 minutes: on 4 October 2026, 02:00 becomes 02:30.
	loc, err := time.LoadLocation("Australia/Lord_Howe")
	require.NoError(t, err)
	s := mustNew(t, "15 2 * * *", "Australia/Lord_Howe")
	got := ticksBetween(s, time.Date(2026, 10, 3, 12, 0, 0, 0, loc), time.Date(2026, 10, 5, 12, 0, 0, 0, loc))
	require.Len(t, got, 2)
	require.Equal(t, "2026-10-04 02:45:00", got[0].In(loc).Format(time.DateTime))
}

// Due lists the ticks from next_run_at to now, the latest MaxCatchUp at most, how many
// earlier ones it left out, and the next tick: for a per-minute cron, for @every, and
// for a per-second schedule down for ten days (more ticks than it walks one by one).
func TestS62DueTicks(t *testing.T) {
	t.Parallel()
	minutely := mustNew(t, "* * * * *", "UTC")
	first := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	now := first.Add(9*time.Minute + 30*time.Second) // ten ticks due: 10:00 .. 10:09
	ticks, left, next := minutely.Due(first, now, schedule.MaxCatchUp)
	require.Len(t, ticks, 10)
	require.Equal(t, first, ticks[0])
	require.Equal(t, first.Add(9*time.Minute), ticks[9])
	require.Zero(t, left)
	require.Equal(t, first.Add(10*time.Minute), next)

	ticks, left, next = minutely.Due(first, now, 3)
	require.Equal(t, []time.Time{first.Add(7 * time.Minute), first.Add(8 * time.Minute), first.Add(9 * time.Minute)}, ticks)
	require.EqualValues(t, 7, left)
	require.Equal(t, first.Add(10*time.Minute), next)

	ticks, left, next = minutely.Due(first, first.Add(-time.Second), 3)
	require.Empty(t, ticks)
	require.Zero(t, left)
	require.Equal(t, first, next, "nothing due yet")

	every := mustNew(t, "@every 90s", "UTC")
	ticks, left, next = every.Due(first, first.Add(10*time.Minute), 4)
	require.Equal(t, []time.Time{first.Add(270 * time.Second), first.Add(360 * time.Second), first.Add(450 * time.Second), first.Add(540 * time.Second)}, ticks)
	require.EqualValues(t, 3, left) // 0, 90, 180
	require.Equal(t, first.Add(630*time.Second), next)

	perSecond := mustNew(t, "* * * * * *", "UTC")
	now = first.Add(10*24*time.Hour + 500*time.Millisecond)
	start := time.Now()
	ticks, left, next = perSecond.Due(first, now, schedule.MaxCatchUp)
	require.Less(t, time.Since(start), 5*time.Second)
	require.Len(t, ticks, schedule.MaxCatchUp)
	require.Equal(t, now.Truncate(time.Second), ticks[len(ticks)-1])
	require.Equal(t, now.Truncate(time.Second).Add(-99*time.Second), ticks[0])
	require.GreaterOrEqual(t, left, int64(100_000), "a lower bound past the walk")
	require.Equal(t, now.Truncate(time.Second).Add(time.Second), next)
}

// A pending schedule's first tick is the first after now; @every counts from it.
func TestS60NextFromNow(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 5, 1, 10, 0, 0, 400_000_000, time.UTC)
	require.Equal(t, time.Date(2026, 5, 1, 10, 0, 1, 0, time.UTC), mustNew(t, "* * * * * *", "UTC").Next(now))
	require.Equal(t, time.Date(2026, 5, 1, 10, 0, 30, 0, time.UTC), mustNew(t, "@every 30s", "UTC").Next(now))
	require.Equal(t, time.Date(2026, 5, 1, 11, 0, 0, 0, time.UTC), mustNew(t, "@hourly", "UTC").Next(now))
	require.Equal(t, time.Date(2026, 5, 4, 8, 0, 0, 0, time.UTC), mustNew(t, "0 10 * * MON", "Europe/Berlin").Next(now))
	require.Equal(t, time.Date(2028, 2, 28, 23, 0, 0, 0, time.UTC), mustNew(t, "0 0 29 2 *", "Europe/Berlin").Next(now),
		"the next 29 February, midnight in Berlin")
}
