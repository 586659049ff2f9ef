package faults

import (
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgq-dev/pgq/internal/pgcluster"
)

// S111, S35, S36: a drain of short SQL jobs by two workers, which run them in groups (several to
// a transaction, S109), through a kill -9 of a worker at 25% of the jobs, a restart of
// PostgreSQL with -m immediate at 50% and another kill -9 at 75%, at --tries 1. Every
// group those faults cut short was lost before its commit: its jobs go back uncounted
// (the killed workers' when their leases end, the restart's at once), so no job is
// lost, none runs twice, none fails and no attempt is charged: each job succeeds on its
// attempt 1. That the jobs ran in groups is read from the transactions of their effects.
func TestS109S111S35S36GroupedSQLDrainSurvivesKillsAndRestarts(t *testing.T) {
	t.Parallel()
	jobs := size(1000, 5000)
	c := pgcluster.Start(t)
	db := c.CreateDB(t, "faults")
	db.Exec(t, appSchema+`
ALTER TABLE app.effects ADD COLUMN xact xid8 NOT NULL DEFAULT pg_current_xact_id();
SELECT pgq.define_queue('default', retry_after => 12);
SELECT pgq.define_job('effect', handler => 'app.effect');`)
	dispatchEffects(t, db, "effect", jobs, 0)

	// Two workers at --concurrency 64, each with 32 SQL connections: jobs wait for a
	// connection, and run in groups; a budget of 100 ms lets groups form on a loaded
	// machine too, where each job takes longer.
	fl := startFleet(t, sqlWorker, db, 2, true, "--tries", "1", "--concurrency", "64", "--sleep", "1", "--timeout", "4",
		"--sql-group-budget", "100ms")
	start := time.Now()
	var faultsEnded []time.Time
	for i, step := range []struct {
		pct   int
		fault string
	}{{25, "kill"}, {50, "restart"}, {75, "kill"}} {
		waitUntil(t, time.Minute, fmt.Sprintf("%d%% of the jobs ran", step.pct), func() bool {
			return effectsCount(db) >= jobs*step.pct/100
		})
		if step.fault == "restart" {
			c.Restart(t, "immediate")
		} else {
			procs := fl.procs()
			procs[len(procs)-1-i%len(procs)].kill() // SIGKILL; the fleet starts it again
		}
		faultsEnded = append(faultsEnded, time.Now())
	}
	ok := waitFor(span(time.Minute, 2*time.Minute), func() bool { return drained(db) })
	f := measure(t, db, jobs, faultsEnded)
	f.drain = time.Since(start)
	f.exits = len(fl.exits())
	groups := pgcluster.Scalar[int](t, db, `SELECT count(DISTINCT xact)::int FROM app.effects`)
	later := pgcluster.Scalar[int](t, db, `SELECT count(*)::int FROM pgq.attempts WHERE outcome = 'succeeded' AND attempt > 1`)
	f.extra = append(f.extra, fmt.Sprintf("transactions=%d", groups), fmt.Sprintf("succeeded_after_attempt_1=%d", later),
		"attempts="+pgcluster.Scalar[string](t, db, `SELECT coalesce(string_agg(outcome || ':' || n, ',' ORDER BY outcome), '')
			FROM (SELECT outcome, count(*) AS n FROM pgq.attempts GROUP BY outcome) s`))
	f.log(t)

	require.True(t, ok, "the drain ended: %d jobs left", f.left)
	require.Zero(t, f.lost, "jobs whose effect never committed")
	require.Zero(t, f.duplicated, "jobs whose effect committed twice")
	require.Zero(t, f.failed, "jobs in pgq.failed_jobs")
	require.Zero(t, later, "jobs that spent an attempt before the one that succeeded (S35, S111: none is charged)")
	require.Zero(t, pgcluster.Scalar[int](t, db, `SELECT count(*)::int FROM pgq.attempts
		WHERE outcome = 'lease_expired' AND exception NOT LIKE '%attempt given back'`), "lease ends charged as attempts")
	require.Equal(t, f.jobs, f.done)
	require.Less(t, groups, jobs*3/4, "jobs shared transactions")
}

// S111, S35: a round the server does not answer is the group's loss, not the running
// job's. A grouped job's backend is stopped (SIGSTOP) while its handler sleeps, so its
// statement_timeout cannot fire; the worker's own timer (the round's timeouts and a
// second) ends the round, the job is given back uncounted, runs alone next and
// succeeds on its first counted attempt, its effect committed once.
func TestS111S35RoundTheServerDoesNotAnswerIsGivenBack(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("stopping a PostgreSQL backend takes root (the server runs as postgres)")
	}
	c := pgcluster.Start(t)
	db := c.CreateDB(t, "faults")
	db.Exec(t, `
CREATE SCHEMA app;
CREATE TABLE app.stalls (n int, query text);
CREATE FUNCTION app.stall(p jsonb) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO app.stalls VALUES ((p->>'n')::int, current_query());
    PERFORM pg_sleep((p->>'secs')::float);
END $$;
SELECT pgq.define_queue('default', retry_after => 30);
SELECT pgq.define_job('stall', handler => 'app.stall', timeout => 1, tries => 1);`)
	startFleet(t, sqlWorker, db, 1, false, "--concurrency", "4", "--sleep", "0.1")
	ran := func(n int) bool {
		return pgcluster.Scalar[int](t, db, `SELECT count(*)::int FROM app.stalls WHERE n = $1`, n) == 1
	}
	dispatch := func(n int, secs float64) string {
		return pgcluster.Scalar[string](t, db, `SELECT pgq.dispatch('stall', jsonb_build_object('n', $1::int, 'secs', $2::float))::text`, n, secs)
	}
	sleeping := func(grouped bool) int {
		p, err := pgcluster.Try[int](db, `SELECT coalesce(max(pid), 0) FROM pg_stat_activity
			WHERE wait_event = 'PgSleep' AND (NOT $1 OR query LIKE '%JobRunSQLGrouped%')`, grouped)
		require.NoError(t, err)
		return p
	}
	// The class's first job runs alone, the next ones in groups once one has run short
	// (on a loaded machine a run can take long, and the next runs alone too): short jobs
	// until one runs in a group, then one that sleeps half a second, until it sleeps in
	// a group.
	var id string
	var pid, n int
	for pid == 0 {
		for {
			n++
			require.Less(t, n, 50, "no job of the class ran in a group")
			dispatch(n, 0)
			waitUntil(t, 10*time.Second, fmt.Sprintf("job %d ran", n), func() bool { return ran(n) })
			if strings.Contains(pgcluster.Scalar[string](t, db, `SELECT query FROM app.stalls WHERE n = $1`, n), "JobRunSQLGrouped") {
				break
			}
		}
		n++
		id = dispatch(n, 0.5)
		waitUntil(t, 10*time.Second, fmt.Sprintf("job %d sleeps", n), func() bool { return sleeping(false) > 0 })
		if pid = sleeping(true); pid == 0 {
			waitUntil(t, 10*time.Second, fmt.Sprintf("job %d ran", n), func() bool { return ran(n) })
		}
	}
	require.NoError(t, syscall.Kill(pid, syscall.SIGSTOP))
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGCONT) }) // before the cluster stops
	time.Sleep(4 * time.Second)                                  // past the worker's timer: 1 s of timeout and 1 s of slack
	require.NoError(t, syscall.Kill(pid, syscall.SIGCONT))

	waitUntil(t, 20*time.Second, "the stopped job ended", func() bool {
		n, err := pgcluster.Try[int](db, `SELECT count(*)::int FROM pgq.live_jobs WHERE uuid = $1::uuid`, id)
		return err == nil && n == 0
	})
	outcomes := pgcluster.Scalar[[]string](t, db, `SELECT array_agg(outcome || ':' || attempt ORDER BY finished_at) FROM pgq.attempts WHERE job_uuid = $1::uuid`, id)
	require.Equal(t, []string{"interrupted:1", "succeeded:1"}, outcomes, "given back uncounted, then run")
	require.Contains(t, pgcluster.Scalar[string](t, db, `SELECT exception FROM pgq.attempts WHERE job_uuid = $1::uuid AND outcome = 'interrupted'`, id),
		"did not answer")
	require.True(t, ran(n), "its effect committed once")
	require.Contains(t, pgcluster.Scalar[string](t, db, `SELECT query FROM app.stalls WHERE n = $1`, n), "JobRunSQL :exec",
		"its next attempt ran alone")
}
