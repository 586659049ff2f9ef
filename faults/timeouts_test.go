package faults

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgq-dev/pgq/internal/pgcluster"
)

// S35, S37: the role the workers connect as has statement_timeout = 1ms and
// lock_timeout = 1ms (ALTER ROLE … SET), as an operator might set to protect the
// server from runaway queries. A worker's own calls (reserve, heartbeat, complete) must
// not be cut short by settings meant for application queries, nor may their
// cancellations be charged to the jobs: a drain of 1,000 jobs completes within a minute,
// every job once, none failed.
func TestS35S37RoleTimeoutsDoNotStopTheDrain(t *testing.T) {
	t.Parallel()
	for _, k := range []kind{sqlWorker, goWorker} {
		name := map[kind]string{sqlWorker: "SQLHandlers", goWorker: "GoHandlers"}[k]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			jobs := 1000
			c := pgcluster.Start(t)
			db := c.CreateDB(t, "faults")
			handler := "NULL"
			if k == sqlWorker {
				handler = "'app.effect'"
			}
			db.Exec(t, appSchema+fmt.Sprintf(`SELECT pgq.define_job('effect', handler => %s);`, handler))
			dispatchEffects(t, db, "effect", jobs, 0)
			// The workers' login role (pgcluster.WorkerLogin).
			c.Exec(t, `ALTER ROLE `+pgcluster.WorkerLogin+` SET statement_timeout = '1ms'`)
			c.Exec(t, `ALTER ROLE `+pgcluster.WorkerLogin+` SET lock_timeout = '1ms'`)

			fl := startFleet(t, k, db, 2, false, "--tries", "1", "--concurrency", "8", "--sleep", "1", "--timeout", "10")
			start := time.Now()
			ok := waitFor(time.Minute, func() bool { return drained(db) })
			f := measure(t, db, jobs, nil)
			f.drain = time.Since(start)
			f.exits = len(fl.exits())
			for _, e := range fl.exits() {
				t.Logf("worker exit: %s", e)
			}
			f.extra = append(f.extra, fmt.Sprintf("drained_within_60s=%t statement_timeouts_logged=%d lock_timeouts_logged=%d log_errors=%d",
				ok, fl.count("statement timeout"), fl.count("lock timeout"), fl.count("level=ERROR")))
			f.log(t)
			if errs := grepLines(fl.procs()[0].logs(), "level=ERROR", "level=WARN"); errs != "" {
				t.Logf("W1's first warnings and errors:\n%s", head(errs, 5))
			}

			require.True(t, ok, "the drain completed within a minute: %d of %d jobs done, %d left", f.done, jobs, f.left)
			require.Zero(t, f.failed, "jobs in pgq.failed_jobs (S35)")
			require.Zero(t, f.lost)
			require.Zero(t, f.duplicated)
			require.Equal(t, jobs, f.done)
		})
	}
}
