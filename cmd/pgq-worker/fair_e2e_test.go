package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgq-dev/pgq/internal/pgqtest"
)

// S114 S120: a fair queue drained by two workers of the binary runs every job once: a
// big tenant's bulk dispatch and small tenants' single jobs alike, and the small
// tenants' jobs are not left behind the big one's backlog.
func TestS114S120E2EFairQueueDrainedByTheBinary(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, appSchema+`
SELECT pgq.define_queue('exports', fair_by => 'tenant');
SELECT pgq.define_job('rec', queue => 'exports', handler => 'app.slow');
SELECT pgq.dispatch_many('rec', ARRAY(SELECT jsonb_build_object('tenant', 'big', 'n', 'big' || i) FROM generate_series(1, 600) i));
SELECT pgq.dispatch('rec', jsonb_build_object('tenant', 't' || i, 'n', 'small' || i)) FROM generate_series(1, 20) i;
`)
	a := startWorker(t, db, "A", "--queue", "exports", "--concurrency", "4", "--sleep", "1", "--stop-when-empty")
	b := startWorker(t, db, "B", "--queue", "exports", "--concurrency", "4", "--sleep", "1", "--stop-when-empty")
	require.Equal(t, 0, a.waitExit(t, 60*time.Second))
	require.Equal(t, 0, b.waitExit(t, 60*time.Second))

	require.Equal(t, 620, scalar[int](t, db, `SELECT count(*)::int FROM app.runs`))
	require.Equal(t, 620, scalar[int](t, db, `SELECT count(DISTINCT n)::int FROM app.runs`), "each job ran once")
	require.Equal(t, 620, scalar[int](t, db, `SELECT count(*)::int FROM pgq.attempts WHERE outcome = 'succeeded'`))
	require.Zero(t, scalar[int](t, db, `SELECT count(*)::int FROM pgq.jobs`))
	// The small tenants' jobs ran among the first big ones, not after the backlog.
	require.Less(t, scalar[int](t, db, `SELECT max(id)::int FROM app.runs WHERE n LIKE 'small%'`), 100)
}
