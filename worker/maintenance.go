package worker

import (
	"context"
	"log/slog"
	"time"

	"github.com/pgq-dev/pgq/internal/dbsqlc"
)

// maintenance keeps the database in shape for the queue: the configuration check at
// start, the retention prune every WithRetention interval, the vacuum of pgq.jobs under
// load and the rotation of its slots. Each loop runs on its own goroutine; only the
// vacuum loop keeps state between rounds.
type maintenance struct {
	// Set by New; read-only.
	q   *dbsqlc.Queries
	cfg *config
	log *slog.Logger

	// Owned by the vacuum loop: while a held xmin horizon keeps vacuums from removing
	// dead rows, the next try is not before vacuumNext. From a hold's start until the
	// table is back to shrinkTo bytes after it, vacuums give its empty end back (S79),
	// those from shrinkNext on: after one that gave nothing back, not before
	// shrinkWait has passed.
	vacuumWait time.Duration
	vacuumNext time.Time
	shrinkTo   int64 // 0: not shrinking
	shrinkWait time.Duration
	shrinkNext time.Time
}

// checkConfig runs the ordering linter (pgq.check, S16) with this worker's defaults and
// logs each problem about the queues it serves, or about its own settings, as a
// warning: another queue's classes are the business of its workers.
func (m *maintenance) checkConfig(ctx context.Context) {
	findings, err := m.q.CheckList(ctx, dbsqlc.CheckListParams{
		WorkerTimeout: int32(m.cfg.timeout / time.Second), WorkerTries: int32(m.cfg.tries), Queues: m.cfg.queues,
	})
	if err != nil {
		m.log.Warn("configuration check failed", "err", err)
		return
	}
	for _, f := range findings {
		m.log.Warn("configuration problem: "+f.Detail, "object", f.Object, "rule", f.Rule, "fix", f.Fix)
	}
}

// retain prunes history and failed jobs by age at once and then every pruneEvery (an
// hour). Every worker calls it; PostgreSQL lets one at a time do the work.
func (m *maintenance) retain(ctx context.Context) {
	if m.cfg.historyRetention <= 0 {
		return
	}
	for {
		m.retainOnce(ctx)
		select {
		case <-ctx.Done():
			return
		case <-time.After(m.cfg.pruneEvery):
		}
	}
}

// retainOnce is one prune (pgq.prune_all).
func (m *maintenance) retainOnce(ctx context.Context) {
	var failed *time.Duration
	if m.cfg.failedRetention > 0 {
		failed = &m.cfg.failedRetention
	}
	n, err := m.q.RetentionPrune(ctx, dbsqlc.RetentionPruneParams{HistoryOlderThan: m.cfg.historyRetention, FailedOlderThan: failed})
	switch {
	case ctx.Err() != nil:
	case err != nil:
		m.log.Warn("retention prune failed", "err", err)
	case n > 0:
		m.log.Info("retention pruned old rows", "rows", n)
	}
}

// vacuum keeps pgq.jobs vacuumed under load. Every reservation and completion leaves a
// dead entry at the head of the reserve index, which each reserve then walks past until
// a VACUUM removes it: without one, reserving gets slower the more jobs have run (in
// the steady-state benchmark, about 6,300 jobs/s without against 7,500-8,700 with).
// Autovacuum looks at a table at most once a minute (autovacuum_naptime); at thousands
// of jobs a second that is too late. Each second, the worker vacuums the table once the
// statistics count vacuumAfter dead rows; a vacuum already running (another worker's or
// autovacuum's) makes it skip. Before PostgreSQL 17 only the table's owner may vacuum
// it (17 adds MAINTAIN, which migrate grants the worker role), and VACUUM cannot run
// inside a function, so a worker that may not (the least-privilege setup on 15 and 16,
// S47) says so once and leaves the table to autovacuum.
func (m *maintenance) vacuum(ctx context.Context) {
	if m.cfg.vacuumAfter <= 0 {
		return
	}
	allowed, err := m.q.JobsVacuumAllowed(ctx)
	if err != nil {
		return
	}
	if !allowed {
		m.log.Info("pgq.jobs is left to autovacuum: this role does not own it, and only its owner may vacuum it",
			"hint", "run a worker as a member of the pgq owner role, or tune autovacuum on pgq.jobs (README, Security)")
		return
	}
	everySecond(ctx, func() { m.vacuumOnce(ctx) })
}

// vacuumOnce vacuums pgq.jobs if it is due. A vacuum that leaves vacuumAfter dead rows
// or more, beyond those that died while it ran (horizonHeld), could not remove them: a
// transaction, a snapshot or a replication slot holds the xmin horizon back. Vacuuming
// again each second would only read the whole table (which grows as long as the hold
// lasts) to no end, so the next try waits 2 s, then 4, 8, up to a minute, until a
// vacuum removes them again. Reserving does not need the vacuum meanwhile: it starts at
// its marks (S77). And a vacuum that took d waits 3d before the next, so vacuuming a
// table bloated by a long hold takes at most a quarter of the time.
func (m *maintenance) vacuumOnce(ctx context.Context) {
	if time.Now().Before(m.vacuumNext) {
		return
	}
	before, err := m.q.JobsDeadTuples(ctx)
	if err != nil || before.Dead < int64(m.cfg.vacuumAfter) {
		return
	}
	start := time.Now()
	waited, err := m.vacuumJobs(ctx)
	if err != nil && ctx.Err() == nil {
		m.log.Warn("vacuum of pgq.jobs failed", "err", err)
		return
	}
	took := time.Since(start)
	m.log.Debug("vacuumed pgq.jobs", "took", took)
	// At most a quarter of the time: after a long hold the table is large, its first
	// vacuums take minutes, and back to back they would take a core from the handlers.
	// Not after a vacuum that may have spent its time waiting for a lock.
	if !waited {
		m.vacuumNext = time.Now().Add(3 * took)
	}
	after, err := m.q.JobsDeadTuples(ctx)
	if err != nil {
		return
	}
	if !horizonHeld(after.Dead, after.Died-before.Died, int64(m.cfg.vacuumAfter)) {
		if m.vacuumWait > 0 {
			m.log.Info("pgq.jobs: vacuum removes dead rows again", "dead_rows_left", after.Dead)
		}
		m.vacuumWait = 0
		return
	}
	if m.vacuumWait == 0 {
		if size, err := m.q.JobsSize(ctx); err == nil && m.shrinkTo == 0 {
			m.shrinkTo = 2 * size
		}
		m.log.Info("pgq.jobs: vacuum could not remove dead rows: something holds the xmin horizon back (an idle transaction, a long query, a replication slot); vacuuming less often until it can",
			"dead_rows_left", after.Dead, "before", before.Dead)
	}
	m.vacuumWait = min(max(2*m.vacuumWait, 2*time.Second), time.Minute)
	if next := time.Now().Add(m.vacuumWait); next.After(m.vacuumNext) {
		m.vacuumNext = next
	}
}

// vacuumJobs vacuums pgq.jobs. From the time a held horizon is found until, the hold
// over, the table is back to twice its size then, it also gives back the empty pages at
// the table's end (S79). Under a hold the table grows at its end, since no page has
// room that a vacuum could free; those pages hold the rows the hold keeps, so VACUUM
// does not try to cut them. Once the hold ends, vacuum frees every page, the jobs still
// in the last ones finish, and new rows go to the free pages at the front. (After a
// 90 s hold at 5,000 jobs/s the table went from 200 MB to 8.7 MB in one vacuum, under
// load, with no rise in the wait.) At other times the worker's vacuums leave the
// table's end alone: a table at its working size has little to give back, and each
// truncation takes an exclusive lock, which standbys replay.
//
// VACUUM waits up to 5 s a slot for that lock, trying every 50 ms: a transaction that
// holds a lock on a slot for longer (a report reading pgq.jobs) makes it give up, with
// nothing given back. So the time of a vacuum that gave nothing back may be waiting,
// not work (waited), and sets no pause; and once the horizon is free, the vacuums of
// the next 10 s, then 20 s, up to 2 minutes, leave the end alone. A wait in each slot,
// each vacuum followed by a pause of three times its length, let the dead rows pile up
// for as long as the readers read (the table tripled in a minute of four REPEATABLE
// READ readers after a 10-minute hold).
func (m *maintenance) vacuumJobs(ctx context.Context) (waited bool, err error) {
	if m.shrinkTo == 0 || time.Now().Before(m.shrinkNext) {
		return false, m.q.JobsVacuum(ctx)
	}
	before, err := m.q.JobsSize(ctx)
	if err != nil {
		return false, err
	}
	if err := m.q.JobsVacuumShrink(ctx); err != nil {
		return false, err
	}
	after, err := m.q.JobsSize(ctx)
	if err != nil {
		return false, err
	}
	switch {
	case after < before:
		m.log.Info("pgq.jobs: vacuum gave space back to the system", "bytes_before", before, "bytes_after", after)
		m.shrinkWait = 0
	case m.vacuumWait > 0: // the horizon is held: nothing could be given back
		waited = true
	default:
		if m.shrinkWait == 0 {
			m.log.Info("pgq.jobs: vacuum gave no space back: a transaction may hold a lock on the table (one that read pgq.jobs and stays open; see pg_locks); its next vacuums leave the table's end alone for a while",
				"bytes", after)
		}
		m.shrinkWait = min(max(2*m.shrinkWait, 10*time.Second), 2*time.Minute)
		m.shrinkNext = time.Now().Add(m.shrinkWait)
		waited = true
	}
	if m.vacuumWait == 0 && after <= m.shrinkTo {
		m.shrinkTo, m.shrinkWait, m.shrinkNext = 0, 0, time.Time{}
	}
	return waited, nil
}

// rotate calls pgq.rotate each second (S80): once the current slot of pgq.jobs holds
// the slot size, new jobs go to an empty one, and a slot whose jobs have all ended is
// truncated, which gives back its dead rows whatever holds the xmin horizon. With a
// slot size of 0 the slots stay where they are, and the call does the rest of its
// work: the generations of overlap leases, the places of named concurrency limits, the
// turns of fair queues' keys with no live job. Every worker calls it; PostgreSQL lets
// one at a time do the work. It needs no privilege on the tables: pgq.rotate runs as
// pgq's owner.
func (m *maintenance) rotate(ctx context.Context) {
	everySecond(ctx, func() { m.rotateOnce(ctx) })
}

// rotateOnce is one call of pgq.rotate; it logs what the call did.
func (m *maintenance) rotateOnce(ctx context.Context) {
	done, err := m.q.JobsRotate(ctx, m.cfg.slotBytes)
	switch {
	case ctx.Err() != nil:
	case err != nil:
		m.log.Warn("rotating the slots of pgq.jobs failed", "err", err)
	default:
		for _, d := range done {
			m.log.Info("pgq.jobs: " + d)
		}
	}
}

// horizonHeld tells whether a vacuum that left left dead rows, while died rows died,
// could not remove the rows it found. Under load a vacuum leaves those that died while
// it ran (as many as 20,000 in half a second at 20,000 jobs/s), and the statistics
// count them in lumps, each backend's once a second at most: neither is a held horizon.
// What a held horizon leaves grows beyond both with every vacuum.
func horizonHeld(left, died, vacuumAfter int64) bool {
	return left >= vacuumAfter+2*died
}
