package sql_test

// Schedules (S60-S66) through their SQL functions, with the injected clock (as_of) of
// pgq.fire_schedule instead of waiting for ticks. The ticks handed to fire_schedule are
// what a worker computes with the cron library (internal/schedule, tested there).

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pgq-dev/pgq/internal/pgqtest"
)

// scheduleRow is what pgq.schedules says of a schedule.
type scheduleRow struct {
	State     string
	NextRunAt *time.Time
	LastTick  *time.Time
	Version   int64
	Skipped   int64
	LastJob   *uuid.UUID
	LastRun   *time.Time
	LastError *string
}

func scheduleState(t *testing.T, db *pgqtest.DB, name string) scheduleRow {
	t.Helper()
	var s scheduleRow
	require.NoError(t, db.Pool.QueryRow(ctx, `
		SELECT state, next_run_at, last_tick, version, skipped_ticks, last_job_uuid, last_run_at, last_error
		FROM pgq.schedules WHERE name = $1`, name).
		Scan(&s.State, &s.NextRunAt, &s.LastTick, &s.Version, &s.Skipped, &s.LastJob, &s.LastRun, &s.LastError))
	return s
}

func planSchedule(t *testing.T, db *pgqtest.DB, name string, version int64, next time.Time) bool {
	t.Helper()
	return pgqtest.Scalar[bool](t, db, `SELECT pgq.plan_schedule($1, $2, $3)`, name, version, next)
}

// fireSchedule calls pgq.fire_schedule as a worker does and returns the jobs dispatched.
func fireSchedule(t *testing.T, q interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}, name string, version int64, expected time.Time, ticks []time.Time, next time.Time, skipped int64, asOf time.Time) []uuid.UUID {
	t.Helper()
	rows, err := q.Query(ctx, `SELECT * FROM pgq.fire_schedule($1, $2, $3, $4, $5, $6, $7)`,
		name, version, expected, ticks, next, skipped, asOf)
	require.NoError(t, err)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	require.NoError(t, err)
	return ids
}

// tickKeys lists the unique keys of the live jobs of job, in tick order.
func tickKeys(t *testing.T, db *pgqtest.DB, job string) []string {
	t.Helper()
	return pgqtest.Scalar[[]string](t, db,
		`SELECT coalesce(array_agg(unique_key ORDER BY unique_key), '{}') FROM pgq.jobs WHERE job = $1`, job)
}

// minutes returns n ticks a minute apart from t0.
func minutes(t0 time.Time, n int) []time.Time {
	out := make([]time.Time, n)
	for i := range out {
		out[i] = t0.Add(time.Duration(i) * time.Minute)
	}
	return out
}

var t0 = time.Date(2030, 1, 7, 10, 0, 0, 0, time.UTC)

// S60: a schedule defined from psql is stored pending (a worker computes its first tick)
// and shown by pgq.schedules; the same definition again changes nothing, and another
// payload or catch_up keeps its ticks.
func TestS60ScheduleFromPSQL(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	var state string
	var next *time.Time
	said := pgqtest.Scalar[string](t, db, `
		SELECT pgq.schedule('nightly_report', '30 2 * * *', 'report', '{"account": 7}',
			timezone => 'Europe/Berlin', queue => 'reports', catch_up => 'all', tries => 3, backoff => '{60}')`)
	require.Equal(t, "schedule nightly_report: job report at 30 2 * * * in Europe/Berlin, queue reports, catch_up all, pending: a running worker computes its next tick within a second", said)
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT state, next_run_at FROM pgq.schedules WHERE name = 'nightly_report'`).
		Scan(&state, &next))
	require.Equal(t, "pending", state)
	require.Nil(t, next)
	require.Equal(t, []string{"nightly_report"}, pgqtest.Scalar[[]string](t, db, `SELECT array_agg(name) FROM pgq.due_schedules()`))

	require.True(t, planSchedule(t, db, "nightly_report", 1, t0))
	require.False(t, planSchedule(t, db, "nightly_report", 1, t0.Add(time.Hour)), "planned once")
	db.Exec(t, `SELECT pgq.schedule('nightly_report', '30 2 * * *', 'report', '{"account": 8}', timezone => 'Europe/Berlin',
		queue => 'reports', catch_up => 'latest')`)
	s := scheduleState(t, db, "nightly_report")
	require.Equal(t, "active", s.State)
	require.Equal(t, t0, s.NextRunAt.UTC(), "a new payload or catch_up keeps the ticks")
	require.EqualValues(t, 1, s.Version)

	db.Exec(t, `SELECT pgq.schedule('every_second', '* * * * * *', 'tick')`)
	db.Exec(t, `SELECT pgq.schedule('macro', '@every 1h30m', 'tick')`)
	require.Equal(t, []string{"every_second", "macro", "nightly_report"},
		pgqtest.Scalar[[]string](t, db, `SELECT array_agg(name ORDER BY name) FROM pgq.schedules`))
	require.True(t, pgqtest.Scalar[bool](t, db, `SELECT pgq.unschedule('macro')`))
	require.False(t, pgqtest.Scalar[bool](t, db, `SELECT pgq.unschedule('macro')`))
}

// S60: a bad expression, time zone, catch_up, name or option is refused at define time
// with 22023 and a message that says what is wrong; nothing is written.
func TestS60ScheduleRejectsBadInput(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, `SELECT pgq.define_job('debounced', debounce_for => '10 seconds')`)
	for _, tc := range []struct{ name, call, msg string }{
		{"Words", `pgq.schedule('s', 'every day', 'j')`, "invalid cron expression 'every day' of schedule s: expected 5 fields"},
		{"SevenFields", `pgq.schedule('s', '0 0 0 * * * *', 'j')`, "found 7"},
		{"MinuteRange", `pgq.schedule('s', '60 * * * *', 'j')`, "the minute field: 60 is above 59"},
		{"BackwardRange", `pgq.schedule('s', '0 0 * * FRI-MON', 'j')`, "range FRI-MON starts after it ends"},
		{"ZeroStep", `pgq.schedule('s', '*/0 * * * *', 'j')`, "step must be positive"},
		{"UnknownName", `pgq.schedule('s', '0 0 * JANUARY *', 'j')`, "'JANUARY' is not a number or a month name (JAN-DEC)"},
		{"NeverFires", `pgq.schedule('s', '0 0 30 2 *', 'j')`, "it never fires: day of month 30 never falls in month 2"},
		{"EmptyList", `pgq.schedule('s', '0 0 * * ,', 'j')`, "the day of week field ',' matches nothing"},
		{"UnknownMacro", `pgq.schedule('s', '@reboot', 'j')`, "unknown macro @reboot"},
		{"SubSecond", `pgq.schedule('s', '@every 500ms', 'j')`, "@every needs whole seconds, at least 1s, got 500ms"},
		{"Fraction", `pgq.schedule('s', '@every 1.5h', 'j')`, "whole numbers with units"},
		{"ZoneInExpression", `pgq.schedule('s', 'TZ=Europe/Berlin 0 0 * * *', 'j')`, "give the time zone as the schedule's timezone"},
		{"Empty", `pgq.schedule('s', '', 'j')`, "the expression is empty"},
		{"NullCron", `pgq.schedule('s', NULL, 'j')`, "invalid cron expression NULL"},
		{"UnknownZone", `pgq.schedule('s', '@daily', 'j', timezone => 'Mars/Olympus_Mons')`, "unknown time zone 'Mars/Olympus_Mons'"},
		{"ZoneCase", `pgq.schedule('s', '@daily', 'j', timezone => 'europe/berlin')`, "case-sensitive: 'Europe/Berlin', not 'europe/berlin'"},
		{"Abbreviation", `pgq.schedule('s', '@daily', 'j', timezone => 'CEST')`, "'CEST' is an abbreviation or an offset"},
		{"Offset", `pgq.schedule('s', '@daily', 'j', timezone => '+02')`, "abbreviation or an offset"},
		{"NullZone", `pgq.schedule('s', '@daily', 'j', timezone => NULL)`, "the time zone is empty"},
		{"CatchUp", `pgq.schedule('s', '@daily', 'j', catch_up => 'some')`, "catch_up of schedule s must be latest, none or all, got 'some'"},
		{"ScheduleName", `pgq.schedule('bad name', '@daily', 'j')`, "invalid schedule name 'bad name'"},
		{"JobName", `pgq.schedule('s', '@daily', 'drop table;')`, "invalid job name 'drop table;'"},
		{"QueueName", `pgq.schedule('s', '@daily', 'j', queue => '')`, "invalid queue name ''"},
		{"NullPayload", `pgq.schedule('s', '@daily', 'j', NULL)`, "payload of schedule s must be JSON"},
		{"Tries", `pgq.schedule('s', '@daily', 'j', tries => -1)`, "tries must be >= 0"},
		{"Backoff", `pgq.schedule('s', '@daily', 'j', backoff => '{}')`, "backoff must have at least one entry"},
		{"RetryFor", `pgq.schedule('s', '@daily', 'j', retry_for => '0 seconds')`, "retry_for must be positive"},
		{"Middleware", `pgq.schedule('s', '@daily', 'j', middleware => '[{"nope": {}}]')`, "nope"},
		{"MiddlewareKey", `pgq.schedule('s', '@daily', 'j', middleware => '[{"without_overlapping": {"by": ["id"]}}]')`, "lacks field 'id'"},
		{"Debounced", `pgq.schedule('s', '@daily', 'debounced')`, "job debounced is debounced"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := db.Pool.Exec(ctx, "SELECT "+tc.call)
			require.Error(t, err)
			require.Equal(t, "22023", pgCode(err), err.Error())
			require.Contains(t, err.Error(), tc.msg)
		})
	}
	require.Zero(t, pgqtest.Scalar[int](t, db, `SELECT count(*)::int FROM pgq.schedule_entries`), "nothing written")
}

// S61: a firing advances next_run_at only from the tick the worker started from, under
// the definition version it read, and dispatches in the same transaction: a replay, a
// stale version and the loser of a race all dispatch nothing. The job is unique on
// schedule:tick, and pgq.due_schedules shows what is due, and what is due within the
// horizon a worker sleeps through.
func TestS61FireIsFencedOnTheTick(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, `SELECT pgq.schedule('every_minute', '* * * * *', 'tick', '{"n": 1}', queue => 'ticks', priority => 5)`)
	require.True(t, planSchedule(t, db, "every_minute", 1, t0))

	due := func(asOf time.Time, horizon string) int {
		return pgqtest.Scalar[int](t, db, `SELECT count(*)::int FROM pgq.due_schedules($1, $2::interval)`, asOf, horizon)
	}
	require.Zero(t, due(t0.Add(-time.Second), "0"))
	require.Equal(t, 1, due(t0.Add(-time.Second), "1 second"))
	require.Equal(t, 1, due(t0, "0"))

	ids := fireSchedule(t, db.Pool, "every_minute", 1, t0, []time.Time{t0}, t0.Add(time.Minute), 0, t0.Add(300*time.Millisecond))
	require.Len(t, ids, 1)
	var key, queue string
	var priority int
	var payload map[string]any
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT unique_key, queue, priority, payload FROM pgq.jobs WHERE uuid = $1`, ids[0]).
		Scan(&key, &queue, &priority, &payload))
	require.Equal(t, "tick:every_minute:2030-01-07T10:00:00Z", key)
	require.Equal(t, "ticks", queue)
	require.Equal(t, 5, priority)
	require.Equal(t, map[string]any{"n": 1.0}, payload)
	s := scheduleState(t, db, "every_minute")
	require.Equal(t, t0.Add(time.Minute), s.NextRunAt.UTC())
	require.Equal(t, t0, s.LastTick.UTC())
	require.Equal(t, ids[0], *s.LastJob)

	require.Empty(t, fireSchedule(t, db.Pool, "every_minute", 1, t0, []time.Time{t0}, t0.Add(time.Minute), 0, t0.Add(time.Second)),
		"a replay of the same firing")
	require.Empty(t, fireSchedule(t, db.Pool, "every_minute", 2, t0.Add(time.Minute), []time.Time{t0.Add(time.Minute)},
		t0.Add(2*time.Minute), 0, t0.Add(time.Minute)), "another version")

	// Two workers fire the same tick at once: the second waits for the first's row lock,
	// then finds next_run_at moved and does nothing.
	t1 := t0.Add(time.Minute)
	tx, err := db.Pool.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(ctx)
	require.Len(t, fireSchedule(t, tx, "every_minute", 1, t1, []time.Time{t1}, t1.Add(time.Minute), 0, t1), 1)
	var second []uuid.UUID
	var wg sync.WaitGroup
	wg.Go(func() {
		second = fireSchedule(t, db.Pool, "every_minute", 1, t1, []time.Time{t1}, t1.Add(time.Minute), 0, t1)
	})
	time.Sleep(200 * time.Millisecond)
	require.NoError(t, tx.Commit(ctx))
	wg.Wait()
	require.Empty(t, second)
	require.Equal(t, []string{"tick:every_minute:2030-01-07T10:00:00Z", "tick:every_minute:2030-01-07T10:01:00Z"}, tickKeys(t, db, "tick"))

	// Inconsistent ticks are a worker's bug: refused.
	t2 := t1.Add(time.Minute)
	for _, bad := range []struct {
		ticks []time.Time
		next  time.Time
		asOf  time.Time
	}{
		{[]time.Time{t1}, t2.Add(time.Minute), t2},                               // a tick before expected
		{[]time.Time{t2.Add(time.Minute)}, t2.Add(2 * time.Minute), t2},          // a tick after as_of
		{[]time.Time{t2, t2}, t2.Add(time.Minute), t2},                           // not ascending
		{[]time.Time{t2}, t2, t2},                                                // next not after as_of
		{minutes(t2, 101), t2.Add(101 * time.Minute), t2.Add(100 * time.Minute)}, // more than the bound
	} {
		_, err := db.Pool.Exec(ctx, `SELECT * FROM pgq.fire_schedule('every_minute', 1, $1, $2, $3, 0, $4)`, t2, bad.ticks, bad.next, bad.asOf)
		require.Equal(t, "22023", pgCode(err), "%v", err)
	}
}

// S62: after a ten-tick outage (the workers were down from 10:00 to 10:09:45), catch_up
// 'latest' fires one job for the most recent tick, 'none' fires nothing, 'all' fires all
// ten; each skipped tick is counted and next_run_at moves to the first tick after now.
// A tick within the grace (30 s) is not missed: every policy fires it. 'all' fires at
// most pgq._schedule_max_catch_up() ticks (the latest); the worker counts the rest.
func TestS62CatchUpAfterATenTickOutage(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	ticks := minutes(t0, 10) // 10:00 .. 10:09, all missed
	for _, tc := range []struct {
		catchUp    string
		asOf       time.Time
		fired      []time.Time
		skipped    int64
		lastTickAt time.Time
	}{
		{"latest", t0.Add(9*time.Minute + 45*time.Second), ticks[9:], 9, ticks[9]},
		{"none", t0.Add(9*time.Minute + 45*time.Second), nil, 10, ticks[9]},
		{"all", t0.Add(9*time.Minute + 45*time.Second), ticks, 0, ticks[9]},
		// back at 10:09:20: the 10:09 tick is 20 s late, within the grace, so on time
		{"latest", t0.Add(9*time.Minute + 20*time.Second), ticks[9:], 9, ticks[9]},
		{"none", t0.Add(9*time.Minute + 20*time.Second), ticks[9:], 9, ticks[9]},
		{"all", t0.Add(9*time.Minute + 20*time.Second), ticks, 0, ticks[9]},
	} {
		t.Run(tc.catchUp+"/"+tc.asOf.Format("15:04:05"), func(t *testing.T) {
			name := "s_" + tc.catchUp + "_" + tc.asOf.Format("150405")
			db.Exec(t, `SELECT pgq.schedule($1, '* * * * *', $1, catch_up => $2)`, name, tc.catchUp)
			require.True(t, planSchedule(t, db, name, 1, t0))
			ids := fireSchedule(t, db.Pool, name, 1, t0, ticks, t0.Add(10*time.Minute), 0, tc.asOf)
			require.Len(t, ids, len(tc.fired))
			var want []string
			for _, tk := range tc.fired {
				want = append(want, name+":"+name+":"+tk.Format("2006-01-02T15:04:05Z"))
			}
			if want == nil {
				want = []string{}
			}
			require.Equal(t, want, tickKeys(t, db, name))
			s := scheduleState(t, db, name)
			require.Equal(t, tc.skipped, s.Skipped)
			require.Equal(t, t0.Add(10*time.Minute), s.NextRunAt.UTC())
			require.Equal(t, tc.lastTickAt, s.LastTick.UTC())
			if len(ids) > 0 {
				require.Equal(t, ids[len(ids)-1], *s.LastJob)
				require.Equal(t, tc.asOf, s.LastRun.UTC())
			} else {
				require.Nil(t, s.LastJob)
			}
		})
	}

	t.Run("AllIsBounded", func(t *testing.T) {
		// A per-second schedule down for 150 ticks: the worker hands over the latest 100
		// and says it left 50 out.
		db.Exec(t, `SELECT pgq.schedule('s_bounded', '* * * * * *', 's_bounded', catch_up => 'all')`)
		require.True(t, planSchedule(t, db, "s_bounded", 1, t0))
		var last100 []time.Time
		for i := 50; i < 150; i++ {
			last100 = append(last100, t0.Add(time.Duration(i)*time.Second))
		}
		asOf := t0.Add(149*time.Second + 500*time.Millisecond)
		require.Len(t, fireSchedule(t, db.Pool, "s_bounded", 1, t0, last100, t0.Add(150*time.Second), 50, asOf), 100)
		require.EqualValues(t, 50, scheduleState(t, db, "s_bounded").Skipped)
	})
}

// S64: a new expression or time zone makes the schedule pending under a new version: a
// firing or planning computed under the old one does nothing, and the first tick after
// the change must come after the last tick handled, so no tick fires twice. A new
// payload applies from the next tick.
func TestS64ChangesWhileFiring(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, `SELECT pgq.schedule('s', '* * * * *', 'tick', '{"v": 1}')`)
	require.True(t, planSchedule(t, db, "s", 1, t0))
	require.Len(t, fireSchedule(t, db.Pool, "s", 1, t0, []time.Time{t0}, t0.Add(time.Minute), 0, t0), 1)

	db.Exec(t, `SELECT pgq.schedule('s', '* * * * *', 'tick', '{"v": 2}')`)
	require.EqualValues(t, 1, scheduleState(t, db, "s").Version, "a new payload keeps the ticks")
	t1 := t0.Add(time.Minute)
	require.Len(t, fireSchedule(t, db.Pool, "s", 1, t1, []time.Time{t1}, t1.Add(time.Minute), 0, t1), 1)
	require.Equal(t, 2, pgqtest.Scalar[int](t, db, `SELECT (payload->>'v')::int FROM pgq.jobs WHERE unique_key LIKE '%10:01:00Z'`))

	db.Exec(t, `SELECT pgq.schedule('s', '*/2 * * * *', 'tick', '{"v": 3}', timezone => 'Europe/Berlin')`)
	s := scheduleState(t, db, "s")
	require.Equal(t, "pending", s.State)
	require.EqualValues(t, 2, s.Version)
	t2 := t1.Add(time.Minute)
	require.Empty(t, fireSchedule(t, db.Pool, "s", 1, t2, []time.Time{t2}, t2.Add(time.Minute), 0, t2), "computed under version 1")
	require.False(t, planSchedule(t, db, "s", 1, t2), "planned under version 1")
	_, err := db.Pool.Exec(ctx, `SELECT pgq.plan_schedule('s', 2, $1)`, t1)
	require.Equal(t, "22023", pgCode(err), "a first tick at or before the last tick handled")
	require.True(t, planSchedule(t, db, "s", 2, t2))
	require.Len(t, fireSchedule(t, db.Pool, "s", 2, t2, []time.Time{t2}, t2.Add(2*time.Minute), 0, t2), 1)
	require.Equal(t, 3, pgqtest.Scalar[int](t, db, `SELECT (payload->>'v')::int FROM pgq.jobs WHERE unique_key LIKE '%10:02:00Z'`))

	// A worker that cannot compute a pending schedule's tick says why on the row.
	db.Exec(t, `SELECT pgq.schedule('s', '0 * * * *', 'tick')`)
	require.False(t, pgqtest.Scalar[bool](t, db, `SELECT pgq.plan_schedule('s', 3, NULL, 'unknown time zone')`))
	require.Equal(t, "unknown time zone", *scheduleState(t, db, "s").LastError)
	require.True(t, planSchedule(t, db, "s", 3, t0.Add(time.Hour)))
	require.Nil(t, scheduleState(t, db, "s").LastError)
}

// S65: a paused schedule is not due and its ticks never fire (a firing computed before
// the pause is fenced off); resuming makes it pending from now. A run now dispatches
// its job at once, paused or not, without moving its ticks. Each action is recorded in
// pgq.actions with the schedule's name; an unknown name gives NULL.
func TestS65PauseResumeRunNow(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, `SELECT pgq.schedule('s', '* * * * *', 'tick', '{"v": 1}', queue => 'ticks')`)
	require.True(t, planSchedule(t, db, "s", 1, t0))

	require.True(t, pgqtest.Scalar[bool](t, db, `SELECT pgq.pause_schedule('s')`))
	require.False(t, pgqtest.Scalar[bool](t, db, `SELECT pgq.pause_schedule('s')`), "already paused")
	s := scheduleState(t, db, "s")
	require.Equal(t, "paused", s.State)
	require.Nil(t, s.NextRunAt)
	require.Zero(t, pgqtest.Scalar[int](t, db, `SELECT count(*)::int FROM pgq.due_schedules($1)`, t0.Add(time.Hour)))
	require.Empty(t, fireSchedule(t, db.Pool, "s", 1, t0, []time.Time{t0}, t0.Add(time.Minute), 0, t0))
	require.False(t, planSchedule(t, db, "s", 2, t0))

	id := pgqtest.Scalar[uuid.UUID](t, db, `SELECT pgq.run_schedule('s')`)
	var key *string
	var queue string
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT unique_key, queue FROM pgq.jobs WHERE uuid = $1`, id).Scan(&key, &queue))
	require.Nil(t, key, "a run now is not a tick")
	require.Equal(t, "ticks", queue)
	s = scheduleState(t, db, "s")
	require.Equal(t, id, *s.LastJob)
	require.NotNil(t, s.LastRun)
	require.Equal(t, "paused", s.State, "run now leaves the ticks alone")

	require.True(t, pgqtest.Scalar[bool](t, db, `SELECT pgq.resume_schedule('s')`))
	require.False(t, pgqtest.Scalar[bool](t, db, `SELECT pgq.resume_schedule('s')`), "not paused")
	s = scheduleState(t, db, "s")
	require.Equal(t, "pending", s.State)
	require.EqualValues(t, 3, s.Version, "pause and resume each fence off older computations")
	require.True(t, planSchedule(t, db, "s", 3, t0.Add(time.Hour)))

	require.Equal(t, []string{"pause|s|", "pause|s|", "run_now|s|ticks", "resume|s|", "resume|s|"},
		pgqtest.Scalar[[]string](t, db, `SELECT array_agg(action || '|' || schedule || '|' || coalesce(queue, '') ORDER BY id) FROM pgq.actions`))
	require.Equal(t, id, pgqtest.Scalar[uuid.UUID](t, db, `SELECT job_uuid FROM pgq.actions WHERE action = 'run_now'`))
	require.True(t, pgqtest.Scalar[bool](t, db,
		`SELECT pgq.pause_schedule('nope') IS NULL AND pgq.resume_schedule('nope') IS NULL`))

	// pgq.schedule(paused => ...) pauses and resumes too.
	db.Exec(t, `SELECT pgq.schedule('s', '* * * * *', 'tick', paused => true)`)
	require.Equal(t, "paused", scheduleState(t, db, "s").State)
	db.Exec(t, `SELECT pgq.schedule('s', '* * * * *', 'tick')`)
	require.Equal(t, "pending", scheduleState(t, db, "s").State)
}

// S61: when the job class changed so that a tick's dispatch is refused (here it became
// debounced, which excludes the tick's unique key), the firing still moves on: the tick
// is handled, the reason is kept in last_error, and the next dispatch clears it.
func TestS61DispatchRefusedIsRecorded(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, `SELECT pgq.schedule('s', '* * * * *', 'tick')`)
	require.True(t, planSchedule(t, db, "s", 1, t0))
	db.Exec(t, `SELECT pgq.define_job('tick', debounce_for => '10 seconds')`)
	require.Empty(t, fireSchedule(t, db.Pool, "s", 1, t0, []time.Time{t0}, t0.Add(time.Minute), 0, t0))
	s := scheduleState(t, db, "s")
	require.Contains(t, *s.LastError, "tick 2030-01-07T10:00:00Z: pgq: a job cannot be both unique and debounced")
	require.Equal(t, t0.Add(time.Minute), s.NextRunAt.UTC())
	require.Equal(t, t0, s.LastTick.UTC())

	db.Exec(t, `SELECT pgq.define_job('tick')`)
	t1 := t0.Add(time.Minute)
	require.Len(t, fireSchedule(t, db.Pool, "s", 1, t1, []time.Time{t1}, t1.Add(time.Minute), 0, t1), 1)
	require.Nil(t, scheduleState(t, db, "s").LastError)
}
