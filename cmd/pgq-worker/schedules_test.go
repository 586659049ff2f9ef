package main

// Schedules through the binary (S61, S64-S66): real workers racing for real ticks, and
// the schedules command. The scheduled jobs go to a queue no worker serves, so they stay
// in pgq.jobs and each one's tick can be read from its unique key.

import (
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgq-dev/pgq/internal/pgqtest"
)

// watchSchedules records, by triggers that pgq knows nothing of, every job inserted
// (with its unique key and payload) and every advance of a schedule's next_run_at from
// a tick to the next. A fence that let two workers through would show as one tick
// advanced twice even when the tick's unique lock then dropped the second job. A change
// of expression, a pause or a resume sets next_run_at to NULL (pending): not an advance,
// and the first tick planned after it may be the one it replaced. The trigger functions
// are SECURITY DEFINER: they fire inside pgq's functions, which run as pgq_owner.
const watchSchedules = `
CREATE SCHEMA watch;
CREATE TABLE watch.jobs (unique_key text, payload jsonb, at timestamptz DEFAULT clock_timestamp());
CREATE FUNCTION watch.job() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER AS $$
BEGIN
    INSERT INTO watch.jobs (unique_key, payload) VALUES (NEW.unique_key, NEW.payload);
    RETURN NULL;
END $$;
CREATE TRIGGER watch AFTER INSERT ON pgq.jobs FOR EACH ROW EXECUTE FUNCTION watch.job();
CREATE TABLE watch.advances (schedule text, from_tick timestamptz, to_tick timestamptz);
CREATE FUNCTION watch.advance() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER AS $$
BEGIN
    INSERT INTO watch.advances VALUES (NEW.name, OLD.next_run_at, NEW.next_run_at);
    RETURN NULL;
END $$;
CREATE TRIGGER watch AFTER UPDATE OF next_run_at ON pgq.schedule_entries FOR EACH ROW
    WHEN (OLD.next_run_at IS NOT NULL AND NEW.next_run_at IS NOT NULL AND NEW.next_run_at <> OLD.next_run_at)
    EXECUTE FUNCTION watch.advance();
`

// tickJob is one job a schedule dispatched: its tick (from its unique key) and payload.
type tickJob struct {
	Tick    time.Time
	V       int
	Created time.Time
}

func tickJobs(t *testing.T, db *pgqtest.DB, job string) []tickJob {
	t.Helper()
	rows, err := db.Pool.Query(t.Context(), `
		SELECT substring(unique_key FROM '[^:]+:[^:]+:(.*)$'), coalesce((payload->>'v')::int, 0), created_at
		FROM pgq.jobs WHERE job = $1 ORDER BY unique_key`, job)
	require.NoError(t, err)
	defer rows.Close()
	var out []tickJob
	for rows.Next() {
		var key string
		var j tickJob
		require.NoError(t, rows.Scan(&key, &j.V, &j.Created))
		tk, err := time.Parse("2006-01-02T15:04:05Z", key)
		require.NoError(t, err)
		j.Tick = tk
		out = append(out, j)
	}
	require.NoError(t, rows.Err())
	return out
}

// requireNoDoubleFiring checks the watch tables: no job inserted twice for one tick, no
// tick advanced from twice.
func requireNoDoubleFiring(t *testing.T, db *pgqtest.DB) {
	t.Helper()
	require.Zero(t, scalar[int](t, db,
		`SELECT count(*)::int FROM (SELECT unique_key FROM watch.jobs GROUP BY 1 HAVING count(*) > 1) d`),
		"a tick dispatched twice")
	require.Zero(t, scalar[int](t, db,
		`SELECT count(*)::int FROM (SELECT schedule, from_tick FROM watch.advances GROUP BY 1, 2 HAVING count(*) > 1) d`),
		"a tick advanced from twice: the fence let two workers through")
}

// S61, S66: four workers and a per-second schedule: twenty consecutive ticks, each
// dispatched exactly once (no gap, no duplicate, no tick advanced twice), each within
// about a second of its time.
func TestS61S66E2EFourWorkersOneJobPerTick(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, watchSchedules)
	var workers []*proc
	for _, name := range []string{"w1", "w2", "w3", "w4"} {
		workers = append(workers, startWorker(t, db, name, "--queue", "default", "--sleep", "1"))
	}
	for _, w := range workers {
		w.waitLog(t, 10*time.Second, "worker started")
	}
	db.Exec(t, `SELECT pgq.schedule('every_second', '* * * * * *', 'tick', queue => 'ticks')`)
	waitUntil(t, 40*time.Second, "22 ticks fired", func() bool {
		n, err := try[int](db, `SELECT count(*)::int FROM pgq.jobs WHERE job = 'tick'`)
		return err == nil && n >= 22
	})

	jobs := tickJobs(t, db, "tick")
	// The first tick is whenever a worker planned the schedule; twenty full ticks after it.
	window := jobs[1:21]
	for i := 1; i < len(window); i++ {
		require.Equal(t, time.Second, window[i].Tick.Sub(window[i-1].Tick), "ticks %s and %s", window[i-1].Tick, window[i].Tick)
	}
	requireNoDoubleFiring(t, db)

	var late []time.Duration
	for _, j := range window {
		late = append(late, j.Created.Sub(j.Tick))
	}
	sort.Slice(late, func(i, k int) bool { return late[i] < late[k] })
	// Typically tens of milliseconds; the bound leaves room for a loaded CI machine.
	require.Less(t, late[len(late)-1], 3*time.Second, "every tick fired within moments of its time")
	require.GreaterOrEqual(t, late[0], time.Duration(0), "no tick fired early")
	var fired []string
	for _, w := range workers {
		fired = append(fired, w.name+"="+strconv.Itoa(strings.Count(w.logs(), `msg="schedule fired"`)))
	}
	t.Logf("%d ticks, each dispatched once; dispatch after the tick: min %s, median %s, max %s; firings won per worker: %s",
		len(window), late[0].Round(time.Millisecond), late[len(late)/2].Round(time.Millisecond),
		late[len(late)-1].Round(time.Millisecond), strings.Join(fired, " "))
}

// S64, S66: a schedule changed while two workers fire it. A new payload applies from
// the next tick without a gap in the ticks; a new expression restarts the ticks from
// the change (every two seconds now), and no tick of either definition fires twice.
// A worker started with --no-schedules fires nothing.
func TestS64S66E2EScheduleUpdatedWhileWorkersRun(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, watchSchedules)
	quiet := startWorker(t, db, "quiet", "--queue", "default", "--no-schedules")
	quiet.waitLog(t, 10*time.Second, "worker started")
	db.Exec(t, `SELECT pgq.schedule('changing', '* * * * * *', 'tick', '{"v": 1}', queue => 'ticks')`)
	time.Sleep(2500 * time.Millisecond)
	require.Equal(t, "pending", scalar[string](t, db, `SELECT state FROM pgq.schedules WHERE name = 'changing'`),
		"a worker with --no-schedules leaves schedules alone")

	a := startWorker(t, db, "a", "--queue", "default")
	b := startWorker(t, db, "b", "--queue", "default")
	count := func(v int) int {
		n, _ := try[int](db, `SELECT count(*)::int FROM pgq.jobs WHERE job = 'tick' AND payload->>'v' = $1`, strconv.Itoa(v))
		return n
	}
	waitUntil(t, 20*time.Second, "4 ticks of version 1", func() bool { return count(1) >= 4 })
	db.Exec(t, `SELECT pgq.schedule('changing', '* * * * * *', 'tick', '{"v": 2}', queue => 'ticks')`)
	waitUntil(t, 10*time.Second, "3 ticks with the new payload", func() bool { return count(2) >= 3 })
	db.Exec(t, `SELECT pgq.schedule('changing', '*/2 * * * * *', 'tick', '{"v": 3}', queue => 'ticks')`)
	changed := scalar[time.Time](t, db, `SELECT updated_at FROM pgq.schedule_entries WHERE name = 'changing'`)
	waitUntil(t, 15*time.Second, "3 ticks of the new expression", func() bool { return count(3) >= 3 })
	a.signal(t, syscall.SIGTERM)
	b.signal(t, syscall.SIGTERM)
	require.Equal(t, 0, a.waitExit(t, 10*time.Second))
	require.Equal(t, 0, b.waitExit(t, 10*time.Second))

	jobs := tickJobs(t, db, "tick")
	requireNoDoubleFiring(t, db)
	for i := 1; i < len(jobs); i++ {
		prev, cur := jobs[i-1], jobs[i]
		require.GreaterOrEqual(t, cur.V, prev.V, "payloads change forward only")
		if cur.V < 3 {
			require.Equal(t, time.Second, cur.Tick.Sub(prev.Tick), "a new payload keeps the ticks: %s after %s", cur.Tick, prev.Tick)
		}
	}
	for _, j := range jobs {
		if j.V == 3 {
			require.Zero(t, j.Tick.Second()%2, "every two seconds: %s", j.Tick)
			require.True(t, j.Tick.After(changed), "ticks of the new expression start after the change: %s", j.Tick)
		} else {
			require.False(t, j.Tick.After(changed.Add(time.Second)), "no tick of the old expression after the change: %s", j.Tick)
		}
	}
	require.Zero(t, strings.Count(quiet.logs(), "schedule fired"))
}

// S65: pgq-worker schedules list, run-now, pause and resume, with their exit codes.
func TestS65E2ESchedulesCLI(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, `SELECT pgq.schedule('nightly', '30 2 * * *', 'report', '{"a": 1}', timezone => 'Europe/Berlin', queue => 'reports')`)
	db.Exec(t, `SELECT pgq.schedule('often', '@every 5m', 'ping', catch_up => 'none')`)
	db.Exec(t, `SELECT pgq.plan_schedule('nightly', 1, '2026-03-29 01:30:00+00')`)

	out, errOut, code := cli(t, db, "schedules", "list")
	require.Equal(t, 0, code, errOut)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 3)
	require.Regexp(t, `^NAME\s+CRON\s+TIMEZONE\s+JOB\s+CATCH UP\s+STATE\s+NEXT RUN`, lines[0])
	require.Regexp(t, `^nightly\s+30 2 \* \* \*\s+Europe/Berlin\s+report\s+latest\s+active\s+2026-03-29 03:30:00 CEST\s+-\s+-\s+0\s+-$`, lines[1])
	require.Regexp(t, `^often\s+@every 5m\s+UTC\s+ping\s+none\s+pending\s+pending\s+-`, lines[2])

	out, errOut, code = cli(t, db, "schedules", "pause", "nightly")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "nightly paused\n", out)
	out, _, code = cli(t, db, "schedules", "pause", "nightly")
	require.Equal(t, 0, code)
	require.Equal(t, "nightly was already paused\n", out)

	out, errOut, code = cli(t, db, "schedules", "run-now", "nightly")
	require.Equal(t, 0, code, errOut)
	require.Regexp(t, `^nightly dispatched job [0-9a-f-]{36}\n$`, out)
	id := strings.TrimSpace(strings.TrimPrefix(out, "nightly dispatched job "))
	require.Equal(t, "reports", scalar[string](t, db, `SELECT queue FROM pgq.jobs WHERE uuid = $1::uuid`, id))
	require.Equal(t, "nightly", scalar[string](t, db, `SELECT schedule FROM pgq.actions WHERE action = 'run_now'`))

	out, _, code = cli(t, db, "schedules", "resume", "nightly")
	require.Equal(t, 0, code)
	require.Equal(t, "nightly resumed\n", out)
	out, _, code = cli(t, db, "schedules", "resume", "nightly")
	require.Equal(t, 0, code)
	require.Equal(t, "nightly was not paused\n", out)
	out, _, _ = cli(t, db, "schedules", "list")
	require.Regexp(t, `nightly\s.*\spending\s+pending\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\d CES?T\s+`+id, out)

	_, errOut, code = cli(t, db, "schedules", "pause", "nope")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "pause schedule nope: pgq: not found")
	_, errOut, code = cli(t, db, "schedules", "run-now")
	require.Equal(t, 2, code)
	require.Contains(t, errOut, "takes one schedule name")
	_, _, code = cli(t, db, "schedules", "resume", "a", "b")
	require.Equal(t, 2, code)
	_, _, code = cli(t, db, "schedules")
	require.Equal(t, 2, code)
	_, errOut, code = cli(t, db, "schedules", "delete", "x")
	require.Equal(t, 2, code)
	require.Contains(t, errOut, `unknown command "delete"`)
}
