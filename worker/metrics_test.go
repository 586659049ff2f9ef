package worker_test

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/pgq-dev/pgq/internal/pgqtest"
	"github.com/pgq-dev/pgq/worker"
)

// S95: the batch gauges, read at scrape time through the worker role: pgq_batches by
// state, pgq_batch_jobs for the members of the batches that have not finished, and
// pgq_stalled by kind.
func TestS95BatchMetrics(t *testing.T) {
	t.Parallel()
	b := setup(t)
	db := b.db
	reg := prometheus.NewRegistry()
	b.worker(t, worker.WithMetrics(reg))

	running := pgqtest.Scalar[string](t, db, `SELECT pgq.dispatch_batch('[{"job": "a"}, {"job": "a"}, {"job": "a"}]', queue => 'm', allow_failures => true)::text`)
	db.Exec(t, `SELECT pgq.dispatch_batch('[{"job": "a"}]', queue => 'm2')`)
	db.Exec(t, `SELECT pgq.complete(array_agg(uuid), array_agg(lease_token)) FROM pgq.reserve('w', '{m2}', 10)`)
	db.Exec(t, `SELECT pgq.fail(uuid, lease_token, 'boom') FROM pgq.reserve('w', '{m}', 1)`)
	db.Exec(t, `UPDATE pgq.jobs SET available_at = now() - interval '1 hour' WHERE batch_id = $1::uuid`, running)
	db.Exec(t, `UPDATE pgq.job_ends SET ended_at = now() - interval '1 hour' WHERE batch_id = $1::uuid`, running)

	got := map[string]float64{}
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if !strings.HasPrefix(f.GetName(), "pgq_batch") && f.GetName() != "pgq_stalled" {
			continue
		}
		for _, m := range f.GetMetric() {
			got[f.GetName()+"{"+m.GetLabel()[0].GetValue()+"}"] = m.GetGauge().GetValue()
		}
	}
	require.Equal(t, map[string]float64{
		"pgq_batches{running}": 1, "pgq_batches{cancelling}": 0, "pgq_batches{succeeded}": 1, "pgq_batches{failed}": 0,
		"pgq_batches{cancelled}":     0,
		"pgq_batch_jobs{unfinished}": 2, "pgq_batch_jobs{succeeded}": 0, "pgq_batch_jobs{failed}": 1, "pgq_batch_jobs{cancelled}": 0,
		"pgq_stalled{batch}": 1, "pgq_stalled{chain}": 0,
	}, got)
}

// S99: each named concurrency limit's gauges, read through the worker role: the
// handlers running over all its keys, and its limit per key.
func TestS99ConcurrencyMetrics(t *testing.T) {
	t.Parallel()
	b := setup(t)
	db := b.db
	reg := prometheus.NewRegistry()
	b.worker(t, worker.WithMetrics(reg))
	db.Exec(t, `SELECT pgq.define_concurrency('vendor', 2); SELECT pgq.define_concurrency('idle', 5)`)
	db.Exec(t, `SELECT pgq.dispatch('v', jsonb_build_object('t', i % 2), queue => 'c',
		middleware => '[{"concurrency_limited": {"limit": "vendor", "by": ["t"]}}]') FROM generate_series(1, 6) i`)
	db.Exec(t, `SELECT count(*) FROM pgq.reserve('w', '{c}', 10)`)

	got := map[string]float64{}
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if strings.HasPrefix(f.GetName(), "pgq_concurrency") {
			for _, m := range f.GetMetric() {
				got[f.GetName()+"{"+m.GetLabel()[0].GetValue()+"}"] = m.GetGauge().GetValue()
			}
		}
	}
	require.Equal(t, map[string]float64{
		"pgq_concurrency_running{vendor}": 4, "pgq_concurrency_limit{vendor}": 2,
		"pgq_concurrency_running{idle}": 0, "pgq_concurrency_limit{idle}": 5,
	}, got, "two keys of vendor, two running each")
}
