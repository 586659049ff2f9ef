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
	for _, c := range []prometheus.Collector{m.outcomes, m.duration, m.leases, m.turnAways, m.ahead, &queueCollector{q: q}} {
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
