package worker

import (
	"context"
	"log/slog"
	"slices"
	"time"

	"github.com/pgq-dev/pgq/internal/dbsqlc"
	"github.com/pgq-dev/pgq/internal/version"
)

// registryEvery is how often a worker writes its row of pgq.workers while it runs. A
// row not written for pgq._worker_ttl() (a minute) counts as a dead worker's (S87).
const registryEvery = 10 * time.Second

// registry keeps the worker's row of pgq.workers current (S87): the queues it serves and
// the job names of its Go handlers, written when it starts, every registryEvery while
// it runs, and deleted when it stops. pgq.check, pgq-worker dispatch and the dashboard
// read it to tell a queue no worker serves, or a job name nothing handles. A write that
// fails costs nothing but that information: it is logged once and tried again later.
type registry struct {
	// Set by New; read-only.
	q        *dbsqlc.Queries
	cfg      *config
	log      *slog.Logger
	handlers map[string]handler // complete once Run starts

	failing bool // owned by the goroutine calling seen: the last write failed
}

// seen writes the worker's row; starting marks its start.
func (r *registry) seen(ctx context.Context, starting bool) {
	names := make([]string, 0, len(r.handlers))
	for name := range r.handlers {
		names = append(names, name)
	}
	slices.Sort(names)
	v := version.String()
	err := r.q.WorkerSeen(ctx, dbsqlc.WorkerSeenParams{
		Worker: r.cfg.name, Queues: r.cfg.queues, Handlers: names, Version: &v, Starting: starting,
	})
	switch {
	case err != nil && ctx.Err() == nil && !r.failing:
		r.log.Warn("could not record this worker in pgq.workers; pgq-worker check and dispatch may say no worker serves its queues", "err", err)
		r.failing = true
	case err == nil && r.failing:
		r.failing = false
	}
}

// run writes the row every registryEvery until ctx is done.
func (r *registry) run(ctx context.Context) {
	tick := time.NewTicker(registryEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			r.seen(ctx, false)
		}
	}
}

// stopped deletes the worker's row.
func (r *registry) stopped(ctx context.Context) {
	if err := r.q.WorkerStopped(ctx, r.cfg.name); err != nil && ctx.Err() == nil {
		r.log.Warn("could not remove this worker from pgq.workers; it ages out in a minute", "err", err)
	}
}
