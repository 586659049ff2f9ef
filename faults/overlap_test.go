package faults

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgq-dev/pgq/internal/pgcluster"
)

// overlapMiddleware keeps jobs with one payload k from running at once.
const overlapMiddleware = `'[{"without_overlapping": {"by": ["k"], "release_after": %d}}]'`

// S34: two workers drain without_overlapping jobs (three keys, handlers of 100-300 ms)
// while their connections are terminated once a second. A worker whose session is
// terminated loses its overlap locks with it while it lives; its handlers must not go on
// beside the next job of their key. Among committed runs no two of one key may overlap
// in time, and every job runs exactly once.
//
// AllConnections terminates every backend of the workers' database (sessions, handlers,
// listeners, heartbeats); SessionsOnly terminates only the sessions holding overlap
// locks, so the handlers of a worker that just lost its locks run on.
func TestS34NoOverlapWhenWorkerConnectionsAreTerminated(t *testing.T) {
	t.Parallel()
	for _, tc := range []terminations{
		{name: "AllConnections", where: "datname = $1 AND application_name <> $2",
			jobs: size(120, 420), minMs: 100, maxMs: 300},
		// One-key advisory locks (objsubid 1) are overlap locks; a napping session's locks
		// have two keys. Handlers of 600-1000 ms leave the other worker time to reserve
		// the freed key before they end, whatever its nap or poll is doing.
		{name: "SessionsOnly", where: "datname = $1 AND application_name <> $2 AND pid IN (SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 1 AND granted)",
			jobs: size(45, 150), minMs: 600, maxMs: 1000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			noOverlapUnderTerminations(t, tc)
		})
	}
}

// terminations is a run of noOverlapUnderTerminations: which backends to terminate
// (a condition on pg_stat_activity, $1 the database, $2 pgcluster.AppName), how many jobs,
// how long their handlers sleep.
type terminations struct {
	name         string
	where        string
	jobs         int // enough that the drain outlasts the terminations: at most 3 run at once
	minMs, maxMs int
}

func noOverlapUnderTerminations(t *testing.T, tc terminations) {
	jobs, where := tc.jobs, tc.where
	period := span(6*time.Second, 20*time.Second)
	keys := []string{"a", "b", "c"}

	c := pgcluster.Start(t)
	db := c.CreateDB(t, "faults")
	db.Exec(t, appSchema+`
SELECT pgq.define_queue('default', retry_after => 5);
SELECT pgq.define_job('ov', handler => 'app.effect', middleware => `+fmt.Sprintf(overlapMiddleware, 0)+`);`)

	// A feeder keeps two jobs waiting per key: with release_after 0 every reserve turns
	// away every waiting job of a held key, so a whole backlog up front would be churned
	// through on each reserve.
	var dispatched atomic.Int64
	stopFeeder := make(chan struct{})
	var feeder sync.WaitGroup
	feeder.Go(func() {
		for next := 1; next <= jobs; {
			select {
			case <-stopFeeder:
				return
			case <-time.After(20 * time.Millisecond):
			}
			waiting := map[string]int{}
			rows, err := db.Pool.Query(t.Context(), `SELECT payload->>'k', count(*)::int FROM pgq.jobs WHERE reserved_at IS NULL GROUP BY 1`)
			if err != nil {
				continue
			}
			for rows.Next() {
				var k string
				var n int
				if rows.Scan(&k, &n) == nil {
					waiting[k] = n
				}
			}
			rows.Close()
			for _, k := range keys {
				for ; waiting[k] < 2 && next <= jobs; waiting[k]++ {
					_, err := db.Pool.Exec(t.Context(), `SELECT pgq.dispatch('ov', jsonb_build_object('n', $1::int, 'k', $2::text, 'ms', $3::int, 'who', true))`,
						next, k, tc.minMs+next*37%(tc.maxMs-tc.minMs+1))
					if err != nil {
						break
					}
					next++
					dispatched.Add(1)
				}
			}
		}
	})
	t.Cleanup(func() { close(stopFeeder); feeder.Wait() })

	fl := startFleet(t, sqlWorker, db, 2, false, "--tries", "0", "--concurrency", "3", "--sleep", "1", "--timeout", "4")
	start := time.Now()
	waitUntil(t, 30*time.Second, "the first job ran", func() bool { return effectsCount(db) > 0 })

	var rounds []time.Time
	terminated := 0
	tick := time.NewTicker(time.Second)
	for time.Since(start) < period {
		<-tick.C
		terminated += c.TerminateBackends(t, where, db.Name, pgcluster.AppName)
		rounds = append(rounds, time.Now())
	}
	tick.Stop()
	ranDuring := effectsCount(db)
	ok := waitFor(time.Minute, func() bool { return dispatched.Load() == int64(jobs) && drained(db) })

	f := measure(t, db, jobs, rounds)
	f.drain = time.Since(start)
	f.exits = len(fl.exits())
	overlaps := pgcluster.Scalar[int](t, db, `SELECT count(*)::int FROM app.effects a JOIN app.effects b
		ON a.k = b.k AND a.id < b.id AND a.started < b.finished AND b.started < a.finished`)
	turnAways := pgcluster.Scalar[int](t, db, `SELECT count(*)::int FROM pgq.attempts WHERE outcome = 'turned_away'`)
	// A handler cancelled because its worker's session went is released (no other release
	// happens here: a turn-away is logged as turned_away).
	f.extra = append(f.extra, fmt.Sprintf("overlapping_pairs=%d backends_terminated=%d runs_during_faults=%d turn_aways=%d handlers_cancelled_for_lost_session=%d overlap_unlock_failures=%d",
		overlaps, terminated, ranDuring, turnAways, fl.count("outcome=released"), fl.count("overlap unlock failed")))
	f.log(t)
	if overlaps > 0 {
		t.Logf("overlapping runs (first 5):\n%s", pgcluster.Scalar[string](t, db, `SELECT string_agg(r, E'\n') FROM (
			SELECT format('key %s: job %s by %s [%s, %s] and job %s by %s [%s, %s]', a.k, a.n, a.worker, a.started::time, a.finished::time,
			              b.n, b.worker, b.started::time, b.finished::time) AS r
			FROM app.effects a JOIN app.effects b ON a.k = b.k AND a.id < b.id AND a.started < b.finished AND b.started < a.finished
			ORDER BY a.id LIMIT 5) s`))
	}

	require.Zero(t, overlaps, "pairs of committed runs of one key that overlapped in time (S34)")
	require.True(t, ok, "the drain ended: %d dispatched of %d, %d left", dispatched.Load(), jobs, f.left)
	require.Zero(t, f.lost, "jobs that never ran")
	require.Zero(t, f.duplicated, "jobs that ran twice")
	require.Zero(t, f.failed, "jobs in pgq.failed_jobs")
	require.Equal(t, jobs, f.done)
}

// S34: a worker killed with SIGKILL while it holds overlap keys (three 30 s SQL handlers)
// gives its keys up: another worker, which was turned away by them while the first one
// lived, runs the next job of each key within 15 s of the kill.
func TestS34OverlapKeysComeBackAfterKill9(t *testing.T) {
	t.Parallel()
	c := pgcluster.Start(t)
	db := c.CreateDB(t, "faults")
	db.Exec(t, appSchema+`SELECT pgq.define_job('hold', handler => 'app.effect', tries => 0, middleware => `+
		fmt.Sprintf(overlapMiddleware, 1)+`);`)
	keys := []string{"a", "b", "c"}

	a := startWorker(t, sqlWorker, db, "A", "--concurrency", "3", "--sleep", "1")
	for i, k := range keys {
		db.Exec(t, `SELECT pgq.dispatch('hold', jsonb_build_object('n', $1::int, 'k', $2::text, 'ms', 30000, 'who', true))`, i+1, k)
	}
	waitUntil(t, 10*time.Second, "A runs the three long jobs", func() bool {
		n, err := pgcluster.Try[int](db, `SELECT count(*)::int FROM pgq.jobs WHERE reserved_by = 'A' AND cardinality(overlap_keys) = 1`)
		return err == nil && n == 3 && sqlHandlers(db) == 3
	})
	handlersOfA := pgcluster.Scalar[[]int32](t, db, `SELECT array_agg(pid) FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid() AND state = 'active' AND query LIKE '%run_sql_job%'`)

	b := startWorker(t, sqlWorker, db, "B", "--concurrency", "3", "--sleep", "1")
	for i, k := range keys {
		db.Exec(t, `SELECT pgq.dispatch('hold', jsonb_build_object('n', $1::int, 'k', $2::text, 'ms', 200, 'who', true))`, 4+i, k)
	}
	waitUntil(t, 15*time.Second, "each next job was turned away while A holds its key", func() bool {
		n, err := pgcluster.Try[int](db, `SELECT count(DISTINCT j.uuid)::int FROM pgq.attempts a JOIN pgq.jobs j ON j.uuid = a.job_uuid
			WHERE a.outcome = 'turned_away' AND (j.payload->>'n')::int >= 4`)
		return err == nil && n == 3
	})
	require.Zero(t, effectsCount(db), "no job ran beside A's")

	require.NoError(t, a.cmd.Process.Kill())
	<-a.done
	killed := time.Now()

	// Until every next job ran (or 30 s): when did A's orphaned handlers end in PostgreSQL?
	var handlersGone time.Duration = -1
	ran := waitFor(30*time.Second, func() bool {
		if handlersGone < 0 {
			if n, err := pgcluster.Try[int](db, `SELECT count(*)::int FROM pg_stat_activity WHERE pid = ANY ($1)`, handlersOfA); err == nil && n == 0 {
				handlersGone = time.Since(killed)
			}
		}
		n, err := pgcluster.Try[int](db, `SELECT count(*)::int FROM app.effects WHERE n >= 4`)
		return err == nil && n == 3 && handlersGone >= 0
	})
	type run struct {
		K      string
		Worker string
		After  time.Duration
	}
	var runs []run
	rows, err := db.Pool.Query(t.Context(), `SELECT k, coalesce(worker, ''), started FROM app.effects WHERE n >= 4 ORDER BY k`)
	require.NoError(t, err)
	var worst time.Duration
	for rows.Next() {
		var r run
		var started time.Time
		require.NoError(t, rows.Scan(&r.K, &r.Worker, &started))
		r.After = started.Sub(killed).Round(time.Millisecond)
		worst = max(worst, r.After)
		runs = append(runs, r)
	}
	require.NoError(t, rows.Err())
	beside := 0
	for _, r := range runs {
		if handlersGone < 0 || r.After < handlersGone {
			beside++ // started while A's handler of its key still ran in PostgreSQL
		}
	}
	f := figures{jobs: 6, faults: 1, done: len(runs), recovery: worst, recovered: true, exits: 1}
	f.extra = append(f.extra, fmt.Sprintf("next_runs=%v a_handlers_ended_after=%s started_beside_a_dying_handler=%d",
		runs, handlersGone.Round(time.Millisecond), beside))
	f.log(t)

	require.True(t, ran, "every next job ran within 30 s of the kill: %v", runs)
	require.Len(t, runs, 3)
	for _, r := range runs {
		require.Equal(t, "B", r.Worker)
		require.Less(t, r.After, 15*time.Second, "the next job of key %s started %s after the kill", r.K, r.After)
	}
	require.False(t, b.exited())
}

// sqlHandlers counts the backends of db running a SQL job handler now.
func sqlHandlers(db *pgcluster.DB) int {
	n, err := pgcluster.Try[int](db, `SELECT count(*)::int FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid()
		  AND state = 'active' AND query LIKE '%run_sql_job%'`)
	if err != nil {
		return -1
	}
	return n
}
