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
		w.log.Warn("configuration problem: "+deref(f.Detail), "object", deref(f.Object), "rule", deref(f.Rule), "fix", deref(f.Fix))
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
