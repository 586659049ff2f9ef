package main

import (
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgq-dev/pgq/internal/pgqtest"
)

// S99, S34 through the binary: a limit of 2 over two workers of concurrency 4 never
// runs more than 2 handlers (sampled every 20 ms, the handlers of a killed worker's
// orphaned backends included); worker A is killed with SIGKILL while it holds places,
// and B and C run every job, each once, without spending an attempt on waits.
//
// A handler holds a shared advisory lock from its start until its transaction ends,
// which is when its place is freed, and the sampler counts the holders in pg_locks: one
// consistent snapshot of the lock table. pg_stat_activity is read backend by backend,
// so a sampler descheduled halfway through can see a handler that has since committed
// beside the one that took its place.
func TestS34S99E2EConcurrencyLimitAcrossWorkersAndKill9(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, appSchema+`
SELECT pgq.define_queue('default', retry_after => 3);
SELECT pgq.define_concurrency('vendor', 2);
CREATE FUNCTION app.placed(p jsonb) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_advisory_xact_lock_shared(`+placedLock+`);
    PERFORM app.slow(p);
END
$$;
SELECT pgq.define_job('slow', handler => 'app.placed', tries => 3,
                      middleware => '[{"concurrency_limited": {"limit": "vendor"}}]');
SELECT pgq.dispatch_many('slow', ARRAY(SELECT jsonb_build_object('n', i, 'secs', 0.3) FROM generate_series(1, 16) i));
`)
	var most atomic.Int32
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			if n := int32(placedHandlers(db)); n > most.Load() {
				most.Store(n)
			}
		}
	}()
	a := startWorker(t, db, "A", "--sleep", "1", "--concurrency", "4")
	waitUntil(t, 10*time.Second, "A runs two handlers", func() bool { return placedHandlers(db) == 2 })
	require.NoError(t, a.cmd.Process.Kill())
	require.Equal(t, -1, a.waitExit(t, 5*time.Second), "killed by SIGKILL")

	// Not --stop-when-empty: a job waiting for a place is not ready, so a worker with
	// only waiting jobs left would stop.
	b := startWorker(t, db, "B", "--sleep", "1", "--concurrency", "4")
	c := startWorker(t, db, "C", "--sleep", "1", "--concurrency", "4")
	waitUntil(t, 60*time.Second, "every job ran", func() bool {
		n, _ := try[int](db, `SELECT count(*)::int FROM pgq.jobs`)
		return n == 0
	})
	for _, w := range []*proc{b, c} {
		w.signal(t, syscall.SIGTERM)
		require.Equal(t, 0, w.waitExit(t, 30*time.Second))
	}
	close(stop)
	wg.Wait()

	require.LessOrEqual(t, most.Load(), int32(2), "never more than the limit running")
	require.Equal(t, 16, scalar[int](t, db, `SELECT count(DISTINCT n)::int FROM app.runs`))
	require.Equal(t, 16, scalar[int](t, db, `SELECT count(*)::int FROM app.runs`), "each job ran once")
	require.Zero(t, scalar[int](t, db, `SELECT count(*)::int FROM pgq.failed_jobs`))
	require.Zero(t, scalar[int](t, db, `SELECT count(*)::int FROM pgq.attempts WHERE outcome = 'turned_away'`),
		"waiting for a place is not a turn-away")
	// Committed runs never overlap more than 2 at a time either.
	require.LessOrEqual(t, scalar[int](t, db, `SELECT max(s)::int FROM (SELECT sum(d) OVER (ORDER BY ts, d) AS s FROM
		(SELECT started AS ts, 1 AS d FROM app.runs UNION ALL SELECT finished, -1 FROM app.runs) e) x`), 2)
}

// placedLock is the advisory lock (two int4 keys, so objsubid 2 in pg_locks) that
// app.placed holds, shared, for its transaction.
const placedLock = "20251, 99"

// placedHandlers counts the transactions of db holding placedLock: app.placed handlers
// that started and whose transaction has not ended, a killed worker's orphans included.
func placedHandlers(db *pgqtest.DB) int {
	n, err := try[int](db, `SELECT count(*)::int FROM pg_locks
		WHERE locktype = 'advisory' AND granted AND classid = 20251 AND objid = 99 AND objsubid = 2
		  AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`)
	if err != nil {
		return -1
	}
	return n
}
