package faults

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgq-dev/pgq/internal/pgcluster"
)

// S37: a worker frozen (SIGSTOP) while its SQL handler runs, and kept frozen past the
// queue's retry_after (5 s), must not keep the job: its handler finishes in PostgreSQL
// and its transaction then waits for a COMMIT that a frozen worker never sends. Another
// worker must complete the job, exactly once, within 25 s of the SIGSTOP
// (max(retry_after, an idle-in-transaction timeout of 10 s) plus a poll). The frozen
// worker is woken (SIGCONT) once the other has completed the job, or after 25 s.
func TestS37FrozenWorkerCannotHoldItsJob(t *testing.T) {
	t.Parallel()
	c := pgcluster.Start(t)
	db := c.CreateDB(t, "faults")
	db.Exec(t, appSchema+`
SELECT pgq.define_queue('default', retry_after => 5);
SELECT pgq.define_job('effect', handler => 'app.effect', tries => 3);`)
	args := []string{"--concurrency", "2", "--sleep", "1", "--timeout", "4"}
	a := startWorker(t, sqlWorker, db, "A", args...)
	id := pgcluster.Scalar[string](t, db, `SELECT pgq.dispatch('effect', '{"n": 1, "ms": 3000, "who": true}')::text`)
	waitUntil(t, 10*time.Second, "A runs the job's handler", func() bool {
		w, err := pgcluster.Try[string](db, `SELECT coalesce((SELECT reserved_by FROM pgq.jobs WHERE uuid = $1::uuid), '')`, id)
		return err == nil && w == "A" && sqlHandlers(db) == 1
	})
	require.NoError(t, a.cmd.Process.Signal(syscall.SIGSTOP))
	stopped := time.Now()
	b := startWorker(t, sqlWorker, db, "B", args...)

	completedByB := func() bool {
		n, err := pgcluster.Try[int](db, `SELECT count(*)::int FROM pgq.attempts WHERE job_uuid = $1::uuid AND outcome = 'succeeded' AND worker = 'B'`, id)
		return err == nil && n == 1
	}
	inB := waitFor(25*time.Second, completedByB)
	tookB := time.Since(stopped)
	state := pgcluster.Scalar[string](t, db, `SELECT coalesce(string_agg(state, ','), 'none') FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid() AND query LIKE '%run_sql_job%'`)
	require.NoError(t, a.cmd.Process.Signal(syscall.SIGCONT))
	woke := time.Now()
	// Once woken, A reports whatever it had; the job must be gone within a few seconds.
	waitFor(10*time.Second, func() bool {
		gone, err := pgcluster.Try[bool](db, `SELECT NOT EXISTS (SELECT FROM pgq.jobs WHERE uuid = $1::uuid)`, id)
		return err == nil && gone && a.count("outcome=") > 0
	})

	history := pgcluster.Scalar[string](t, db, `SELECT coalesce(string_agg(attempt || ':' || coalesce(worker, '?') || ':' || outcome, ',' ORDER BY id), '')
		FROM pgq.attempts WHERE job_uuid = $1::uuid`, id)
	effects := pgcluster.Scalar[[]string](t, db, `SELECT coalesce(array_agg(coalesce(worker, '?') ORDER BY id), '{}') FROM app.effects`)
	completedAt := pgcluster.Scalar[*time.Time](t, db, `SELECT max(finished_at) FROM pgq.attempts WHERE job_uuid = $1::uuid AND outcome = 'succeeded'`, id)
	// recovery: from the SIGSTOP to the job's completion, by whoever.
	f := figures{jobs: 1, faults: 1, done: len(effects), duplicated: max(0, len(effects)-1), recovery: -1, recovered: true,
		failed: pgcluster.Scalar[int](t, db, `SELECT count(*)::int FROM pgq.failed_jobs`)}
	if completedAt != nil {
		f.recovery = completedAt.Sub(stopped)
	}
	f.extra = append(f.extra, fmt.Sprintf("completed_by_B_within_25s=%t a_handler_state_before_sigcont=%q sigcont_after=%s attempts=%s effects_by=%v a_last_outcome=%q",
		inB, state, woke.Sub(stopped).Round(time.Millisecond), history, effects, lastOutcome(a.logs())))
	f.log(t)

	require.True(t, inB, "B completed the job within 25 s of A's SIGSTOP (took %s; A's handler backend: %s)", tookB, state)
	require.Equal(t, []string{"B"}, effects, "the job's effect committed once, by B")
	require.Equal(t, 1, pgcluster.Scalar[int](t, db, `SELECT count(*)::int FROM pgq.attempts WHERE job_uuid = $1::uuid AND outcome = 'succeeded'`, id))
	require.Zero(t, f.failed)
	require.False(t, b.exited())
}

// lastOutcome returns the outcome= field of the last job line of a worker log.
func lastOutcome(log string) string {
	out := ""
	for _, l := range strings.Split(log, "\n") {
		if _, after, ok := strings.Cut(l, "outcome="); ok {
			out, _, _ = strings.Cut("outcome="+after, " ")
		}
	}
	return out
}
