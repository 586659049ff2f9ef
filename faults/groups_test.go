package faults

import (
	"fmt"
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
