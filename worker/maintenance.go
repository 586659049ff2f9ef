package worker

import (
	"context"
	"time"

	"github.com/pgq-dev/pgq/internal/dbsqlc"
)

// checkConfig runs the ordering linter (pgq.check, S16) with this worker's defaults and
// logs each problem as a warning.
func (w *Worker) checkConfig(ctx context.Context) {
	findings, err := w.q.CheckList(ctx, dbsqlc.CheckListParams{
		WorkerTimeout: int32(w.cfg.timeout / time.Second), WorkerTries: int32(w.cfg.tries),
	})
	if err != nil {
		w.log.Warn("configuration check failed", "err", err)
		return
	}
	for _, f := range findings {
		w.log.Warn("configuration problem: "+f.Detail, "object", f.Object, "rule", f.Rule, "fix", f.Fix)
	}
}

// retain prunes history and failed jobs by age every hour (pgq.prune_all). Every worker
// calls it; PostgreSQL lets one at a time do the work.
func (w *Worker) retain(ctx context.Context) {
	if w.cfg.historyRetention <= 0 {
		return
	}
	var failed *time.Duration
	if w.cfg.failedRetention > 0 {
		failed = &w.cfg.failedRetention
	}
	for {
		n, err := w.q.RetentionPrune(ctx, dbsqlc.RetentionPruneParams{HistoryOlderThan: w.cfg.historyRetention, FailedOlderThan: failed})
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			w.log.Warn("retention prune failed", "err", err)
		case n > 0:
			w.log.Info("retention pruned old rows", "rows", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(w.cfg.pruneEvery):
		}
	}
}

// vacuum keeps pgq.jobs vacuumed under load. Every reservation and completion leaves a
// dead entry at the head of the reserve index, which each reserve then walks past until
// a VACUUM removes it: without one, reserving gets slower the more jobs have run (in
// the steady-state benchmark, about 6,300 jobs/s without against 7,500-8,700 with).
// Autovacuum looks at a table at most once a minute (autovacuum_naptime); at thousands
// of jobs a second that is too late. Each second, the worker vacuums the table once the
// statistics count vacuumAfter dead rows, if its role owns the table; a vacuum already
// running (another worker's or autovacuum's) makes it skip.
func (w *Worker) vacuum(ctx context.Context) {
	if w.cfg.vacuumAfter <= 0 {
		return
	}
	everySecond(ctx, func() {
		due, err := w.q.JobsVacuumDue(ctx, int64(w.cfg.vacuumAfter))
		if err != nil || due == nil || !*due {
			return
		}
		start := time.Now()
		if err := w.q.JobsVacuum(ctx); err != nil && ctx.Err() == nil {
			w.log.Warn("vacuum of pgq.jobs failed", "err", err)
			return
		}
		w.log.Debug("vacuumed pgq.jobs", "took", time.Since(start))
	})
}
