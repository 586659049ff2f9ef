package worker

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pgq-dev/pgq/internal/dbsqlc"
)

// metrics are the worker's Prometheus series. A nil *metrics records nothing.
type metrics struct {
	outcomes  *prometheus.CounterVec
	duration  *prometheus.HistogramVec
	leases    *prometheus.CounterVec
	turnAways *prometheus.CounterVec
	ahead     *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer, q *dbsqlc.Queries) (*metrics, error) {
	m := &metrics{
		outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pgq_jobs_total", Help: "Job attempts by outcome (succeeded, failed, timed_out, released, turned_away, exhausted, debounced, lease_lost).",
		}, []string{"job", "queue", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "pgq_handler_duration_seconds", Help: "Handler run time of attempts that ran.",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 10),
		}, []string{"job", "queue"}),
		leases: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pgq_leases_total", Help: "Lease heartbeats: extended, or lost (the handler was cancelled).",
		}, []string{"result"}),
		turnAways: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pgq_turn_aways_total", Help: "Jobs turned away before their handler, by middleware.",
		}, []string{"middleware"}),
		ahead: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pgq_reserved_ahead_total", Help: "Jobs reserved ahead of a free slot (S84): reserved, then started or given_back.",
		}, []string{"result"}),
	}
	for _, c := range []prometheus.Collector{m.outcomes, m.duration, m.leases, m.turnAways, m.ahead, &queueCollector{q: q}, &batchCollector{q: q}} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *metrics) outcome(job, queue, outcome string, ran time.Duration) {
	if m == nil {
		return
	}
	m.outcomes.WithLabelValues(job, queue, outcome).Inc()
	if ran > 0 {
		m.duration.WithLabelValues(job, queue).Observe(ran.Seconds())
	}
}

func (m *metrics) turnedAway(middleware string) {
	if m != nil {
		m.turnAways.WithLabelValues(middleware).Inc()
	}
}

func (m *metrics) reservedAhead(result string, n int) {
	if m != nil && n > 0 {
		m.ahead.WithLabelValues(result).Add(float64(n))
	}
}

func (m *metrics) lease(result string, n int) {
	if m != nil && n > 0 {
		m.leases.WithLabelValues(result).Add(float64(n))
	}
}

// queueCollector reads pgq.queue_stats at scrape time: queue depth and oldest wait.
type queueCollector struct{ q *dbsqlc.Queries }

var (
	queueDepth = prometheus.NewDesc("pgq_queue_jobs", "Jobs per queue and state (ready, scheduled, retrying, running, failed).", []string{"queue", "state"}, nil)
	queueWait  = prometheus.NewDesc("pgq_queue_oldest_wait_seconds", "How long the oldest ready job of the queue has waited.", []string{"queue"}, nil)
)

func (c *queueCollector) Describe(ch chan<- *prometheus.Desc) { ch <- queueDepth; ch <- queueWait }

func (c *queueCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	rows, err := c.q.QueueStatsList(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(queueDepth, err)
		return
	}
	for _, r := range rows {
		for state, n := range map[string]int64{"ready": r.Ready, "scheduled": r.Scheduled, "retrying": r.Retrying, "running": r.Running, "failed": r.Failed} {
			ch <- prometheus.MustNewConstMetric(queueDepth, prometheus.GaugeValue, float64(n), r.Queue, state)
		}
		ch <- prometheus.MustNewConstMetric(queueWait, prometheus.GaugeValue, r.OldestWait.Seconds(), r.Queue)
	}
}

// batchCollector reads pgq.batches, pgq.stalled and pgq.limits at scrape time: batches
// by state, the members of the batches that have not finished by state, the stalled
// chains and batches (S95), and the named concurrency limits' handlers running (S99).
type batchCollector struct{ q *dbsqlc.Queries }

var (
	batchCount = prometheus.NewDesc("pgq_batches",
		"Batches by state (running, cancelling, succeeded, failed, cancelled), as long as pgq keeps them (--keep-history).", []string{"state"}, nil)
	batchJobs = prometheus.NewDesc("pgq_batch_jobs",
		"Members of the batches that have not finished (running or cancelling), by state: unfinished, succeeded, failed, cancelled.", []string{"state"}, nil)
	stalledCount = prometheus.NewDesc("pgq_stalled",
		"Chains and batches that stalled (S95): a job ready for longer than its queue's retry_after while none of theirs ran.", []string{"kind"}, nil)
	batchStates        = []string{"running", "cancelling", "succeeded", "failed", "cancelled"}
	concurrencyRunning = prometheus.NewDesc("pgq_concurrency_running",
		"Handlers running under each named concurrency limit (pgq.define_concurrency, S99), over all its keys.", []string{"limit"}, nil)
	concurrencyLimit = prometheus.NewDesc("pgq_concurrency_limit",
		"Each named concurrency limit: the handlers one of its keys may run at once (S99).", []string{"limit"}, nil)
)

func (c *batchCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- batchCount
	ch <- batchJobs
	ch <- stalledCount
	ch <- concurrencyRunning
	ch <- concurrencyLimit
}

func (c *batchCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	rows, err := c.q.BatchStatsList(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(batchCount, err)
		return
	}
	batches := map[string]int64{}
	members := map[string]int64{}
	for _, r := range rows {
		batches[r.State] = r.Batches
		if r.State == "running" || r.State == "cancelling" {
			members["unfinished"] += r.Unfinished
			members["succeeded"] += r.Succeeded
			members["failed"] += r.Failed
			members["cancelled"] += r.Cancelled
		}
	}
	for _, state := range batchStates {
		ch <- prometheus.MustNewConstMetric(batchCount, prometheus.GaugeValue, float64(batches[state]), state)
	}
	for _, state := range []string{"unfinished", "succeeded", "failed", "cancelled"} {
		ch <- prometheus.MustNewConstMetric(batchJobs, prometheus.GaugeValue, float64(members[state]), state)
	}
	stalled, err := c.q.StalledCountList(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(stalledCount, err)
		return
	}
	byKind := map[string]int64{}
	for _, r := range stalled {
		byKind[r.Kind] = r.Stalled
	}
	for _, kind := range []string{"batch", "chain"} {
		ch <- prometheus.MustNewConstMetric(stalledCount, prometheus.GaugeValue, float64(byKind[kind]), kind)
	}
	limits, err := c.q.ConcurrencyStatsList(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(concurrencyRunning, err)
		return
	}
	for _, r := range limits {
		ch <- prometheus.MustNewConstMetric(concurrencyRunning, prometheus.GaugeValue, float64(r.Running), r.Name)
		ch <- prometheus.MustNewConstMetric(concurrencyLimit, prometheus.GaugeValue, float64(r.MaxPerKey), r.Name)
	}
}
