package faults

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgq-dev/pgq/internal/pgcluster"
)

// restartDrain drains jobs with three workers of kind k at --tries tries while PostgreSQL is
// restarted twice: -m fast once 30% of the jobs are done, -m immediate at 60%. It returns
// the figures once no job is left (or after the give-up) and whether the drain ended.
func restartDrain(t *testing.T, k kind, tries int) (figures, bool) {
	jobs := size(1000, 5000)
	c := pgcluster.Start(t)
	db := c.CreateDB(t, "faults")
	handler := "NULL"
	if k == sqlWorker {
		handler = "'app.effect'"
	}
	// A lease that outlasts the outage, so that the workers' heartbeats can keep it (S36
	// holds for as long as the lease can), and short enough that a job a worker lost
	// track of comes back within the test. An immediate restart took 4.1 s of crash
	// recovery on a loaded CI machine, while a lease of 5 s, renewed once a third of it
	// has passed, has as little as 3.3 s left when the server goes: those jobs' leases
	// ended in the outage, and another worker's reserve took them as it came back.
	db.Exec(t, appSchema+fmt.Sprintf(`
SELECT pgq.define_queue('default', retry_after => 12);
SELECT pgq.define_job('effect', handler => %s);`, handler))
	dispatchEffects(t, db, "effect", jobs, 50)

	fl := startFleet(t, k, db, 3, false, "--tries", fmt.Sprint(tries), "--concurrency", "4", "--sleep", "1", "--timeout", "4")
	start := time.Now()
	var faultsEnded []time.Time
	var outage time.Duration // the longest restart, which the leases must outlast
	for _, step := range []struct {
		pct  int
		mode string
	}{{30, "fast"}, {60, "immediate"}} {
		waitUntil(t, time.Minute, fmt.Sprintf("%d%% of the jobs ran", step.pct), func() bool {
			return effectsCount(db) >= jobs*step.pct/100
		})
		began := time.Now()
		c.Restart(t, step.mode)
		faultsEnded = append(faultsEnded, time.Now())
		outage = max(outage, time.Since(began))
	}
	ok := waitFor(span(time.Minute, 2*time.Minute), func() bool { return drained(db) })
	f := measure(t, db, jobs, faultsEnded)
	f.drain = time.Since(start)
	f.exits = len(fl.exits())
	for _, e := range fl.exits() {
		t.Logf("worker exit: %s", e)
	}
	outcomes := pgcluster.Scalar[string](t, db, `SELECT coalesce(string_agg(outcome || ':' || n, ',' ORDER BY outcome), '')
		FROM (SELECT outcome, count(*) AS n FROM pgq.attempts GROUP BY outcome) s`)
	f.extra = append(f.extra, "attempts="+outcomes, fmt.Sprintf("outage_max=%s", outage.Round(time.Millisecond)),
		fmt.Sprintf("log_errors=%d", fl.count("level=ERROR")), fmt.Sprintf("log_warnings=%d", fl.count("level=WARN")),
		// Go handlers' effect inserts that committed while a restart lost their answer:
		// their retry found the run's row (gohandlers), and it is one run.
		fmt.Sprintf("effect_answers_lost=%d", fl.count("the effect had been recorded")))
	f.log(t)
	if f.failed > 0 {
		t.Logf("failed jobs, by exception: %s", pgcluster.Scalar[string](t, db, `SELECT coalesce(string_agg(e || ' ×' || n, E'\n  '), '')
			FROM (SELECT left(exception, 160) AS e, count(*) AS n FROM pgq.failed_jobs GROUP BY 1 ORDER BY 2 DESC LIMIT 5) s`))
	}
	return f, ok
}

// S35, S36: PostgreSQL restarted (-m fast, then -m immediate) in the middle of a drain of
// SQL-handler jobs, with the worker at --tries 1. A restart is not the handler's fault
// (S35): no job may fail for it or lose an attempt to it. And no report may be lost to it
// (S36): every job's effect is committed exactly once and every job is done.
func TestS35S36SQLDrainSurvivesPostgresRestarts(t *testing.T) {
	t.Parallel()
	f, ok := restartDrain(t, sqlWorker, 1)
	require.True(t, ok, "the drain ended: %d jobs left", f.left)
	require.Zero(t, f.failed, "jobs in pgq.failed_jobs (S35: a restart is not the handler's fault)")
	require.Zero(t, f.lost, "jobs whose effect never committed")
	require.Zero(t, f.duplicated, "jobs whose effect committed twice")
	require.Equal(t, f.jobs, f.done)
}

// S36: the same restarts under Go handlers, whose completion is a call of its own after
// the handler returned. At --tries 1 a completion lost to a restart shows as a job that
// ran and yet failed (its lease expires, and it is exhausted at pickup); at --tries 3 it
// shows as a second run (a job with two recorded runs is a duplicate). Neither may
// happen, nor may a job fail.
func TestS36GoDrainSurvivesPostgresRestarts(t *testing.T) {
	t.Parallel()
	for _, tries := range []int{1, 3} {
		t.Run(fmt.Sprintf("Tries%d", tries), func(t *testing.T) {
			t.Parallel()
			f, ok := restartDrain(t, goWorker, tries)
			require.True(t, ok, "the drain ended: %d jobs left", f.left)
			require.Zero(t, f.duplicated, "jobs run twice (S36: a completion lost to a restart)")
			require.Zero(t, f.failed, "jobs in pgq.failed_jobs (S35, S36)")
			require.Zero(t, f.lost, "jobs that never ran")
			require.Equal(t, f.jobs, f.done)
		})
	}
}
