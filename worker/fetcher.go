package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgq-dev/pgq/internal/dbsqlc"
	"github.com/pgq-dev/pgq/pgq"
)

// fetcher reserves jobs on the session and starts the runnable ones: as many as there
// are free slots (WithConcurrency), gathered into fewer, larger reserves under load
// (WithFetchCooldown), on a notification, a freed slot or the poll (WithSleep). Under a
// backlog it also reserves ahead (S84): the jobs whose slots should free while the
// reserve is on its way wait in the fetcher and start as slots free. When it finds no
// job it naps the session (pgq.nap), so that dispatches to its queues notify. It also
// decides when WithMaxJobs or WithStopWhenEmpty stops the worker.
type fetcher struct {
	// Set by New; read-only.
	cfg      *config
	log      *slog.Logger
	session  *session
	executor *executor
	reporter *reporter // writes the lines of the jobs reserve did not hand over
	metrics  *metrics  // nil: no metrics
	active   *activeSet
	freed    chan struct{} // signalled by handler goroutines and the reporter
	wake     chan struct{} // signalled by the listener: a job was dispatched to our queues

	// Owned by the goroutine running run.
	fetch     bool        // a reserve is due
	reserved  int         // jobs started, for WithMaxJobs
	batch     int         // under load, reserve once this many slots are free
	poll      *time.Timer // the poll, when no notification arrives
	coolUntil time.Time   // after a short reserve, the next one waits until then
	cooled    *time.Timer // fires at coolUntil when a reserve waits for it
	napTimer  *time.Timer // fires when the session is to nap
	napRetry  time.Duration
	lost      []uuid.UUID // reserve calls whose answer was lost, to give back (pgq.unreserve)

	// Reserving ahead (S84), owned by the same goroutine.
	full      bool          // the last reserve found every job it asked for: a backlog
	est       aheadEstimate // how many handlers return while a reserve is on its way
	waiting   []waitingJob  // reserved ahead, in reserve order, waiting for a slot
	waitTimer *time.Timer   // fires when the first waiting job is due to be given back
	aheadWait time.Duration // how long a job reserved ahead may wait for its slot; 0: no reserving ahead
	// limited: the last reserve that found jobs to run found some that hold
	// concurrency_limited places (S99). None are reserved ahead then: a job of a limited
	// key reserved ahead would find the key's places taken by the jobs whose slots it
	// waits for, and wait for a place (two more writes) rather than run.
	limited bool

	noNap bool // the session is not a session (a transaction pooler's): never nap, poll
}

// waitingJob is a job reserved ahead of a free slot (S84). It is not in the active set:
// no handler runs, nothing heartbeats it, and its timeout has not begun.
type waitingJob struct {
	row   *dbsqlc.JobReserveRow
	sent  time.Time // when its reserve was sent: its lease runs from then
	until time.Time // given back, never started, when no slot came free by then
}

// aheadWaitMax bounds how long a job reserved ahead waits for a slot (S84); the wait is
// also at most a quarter of the job's lease, which runs from the reserve.
const aheadWaitMax = time.Second

// aheadEstimate is how many slots free while a reserve is on its way: the slots times
// the reserve's round trip over a handler's run time, each a moving average, the run
// time over the handlers returned between two reserves.
type aheadEstimate struct {
	returns int64   // the executor's returns at the last sample
	ran     int64   // and the nanoseconds their handlers ran
	run     float64 // a handler's run time, seconds; negative before the first return
	trip    float64 // a reserve's round trip, seconds
}

// sample takes in one reserve's round trip and the handlers returned since the last.
func (e *aheadEstimate) sample(returns, ran int64, trip time.Duration) {
	const weight = 0.2 // of the newest sample
	e.trip += weight * (trip.Seconds() - e.trip)
	if n := returns - e.returns; n > 0 {
		run := time.Duration((ran - e.ran) / n).Seconds()
		if e.run < 0 {
			e.run = run
		}
		e.run += weight * (run - e.run)
	}
	e.returns, e.ran = returns, ran
}

// jobs is how many of the slots should free during one round trip, at most all of
// them: rounded down, so that at a small concurrency handlers that run much longer than
// a round trip get none reserved ahead.
func (e *aheadEstimate) jobs(slots int) int {
	if e.run < 0 {
		return 0 // no handler has returned yet
	}
	return int(min(float64(slots), float64(slots)*e.trip/max(e.run, 1e-9)))
}

func newFetcher(cfg *config, log *slog.Logger, m *metrics, s *session, e *executor, r *reporter, a *activeSet, freed chan struct{}) *fetcher {
	f := &fetcher{
		cfg: cfg, log: log, metrics: m, session: s, executor: e, reporter: r, active: a, freed: freed,
		wake:  make(chan struct{}, 1),
		fetch: true,
		// Under load, fetch once a quarter of the slots are free rather than one job per
		// freed slot: fewer, larger reserves. An idle worker fetches at once.
		batch:     max(1, cfg.concurrency/4),
		poll:      time.NewTimer(time.Hour),
		cooled:    time.NewTimer(time.Hour),
		napTimer:  time.NewTimer(time.Hour),
		waitTimer: time.NewTimer(time.Hour),
		aheadWait: aheadWaitMax,
		est:       aheadEstimate{run: -1},
	}
	f.noNap = cfg.transactionPooled && cfg.sessionPool == nil
	if cfg.maxJobs > 0 {
		f.aheadWait = 0 // WithMaxJobs counts the jobs started: reserve only those
	}
	f.poll.Stop()
	f.cooled.Stop()
	f.napTimer.Stop()
	f.waitTimer.Stop()
	return f
}

// run reserves and starts jobs until ctx is done, or until WithMaxJobs or
// WithStopWhenEmpty says stop (it returns nil then). It returns an error that satisfies
// errors.Is(err, pgq.ErrNotMigrated) when the database has no pgq schema.
func (f *fetcher) run(ctx context.Context) error {
	f.poll.Reset(f.cfg.sleep)
	defer f.poll.Stop()
	defer f.cooled.Stop()
	defer f.napTimer.Stop()
	defer f.waitTimer.Stop()
	// Jobs still waiting for a slot go back at a stop, never started.
	defer func() { f.giveBack(ctx, len(f.waiting), "the worker stopped before a slot came free") }()
	for {
		if err := f.fetchIfDue(ctx); err != nil {
			if errors.Is(err, pgq.ErrNotMigrated) {
				return err
			}
			return nil // ctx ended while the session reconnected
		}
		stop, again := f.limitReached()
		if stop {
			return nil
		}
		if again {
			continue
		}
		if !f.wait(ctx) {
			return nil
		}
	}
}

// fetchIfDue reserves when a reserve is due and enough slots are free, unless the
// cooldown of the last, short, reserve still runs: then the cooled timer brings the
// loop back.
func (f *fetcher) fetchIfDue(ctx context.Context) error {
	if !f.startWaiting(ctx) {
		return nil // the slots are taken by the jobs reserved ahead
	}
	// A slot is a running handler. A job whose handler has returned waits for its
	// batched completion without a slot, but at most concurrency of them: a worker
	// holds at most twice its concurrency in reserved jobs, those reserved ahead
	// included.
	running := f.active.count()
	room := 2*f.cfg.concurrency - running
	free := min(f.cfg.concurrency-int(f.executor.busy.Load()), room)
	if f.cfg.maxJobs > 0 {
		free = min(free, f.cfg.maxJobs-f.reserved)
	}
	if due := f.fetch && free > 0 && (free >= f.batch || running == 0 || f.cfg.maxJobs > 0); !due {
		return nil
	}
	if wait := time.Until(f.coolUntil); wait > 0 {
		f.cooled.Reset(wait)
		return nil
	}
	ahead := 0
	if f.full && f.aheadWait > 0 && !f.limited {
		ahead = min(f.est.jobs(f.cfg.concurrency), room-free)
	}
	return f.runOnce(ctx, free, ahead)
}

// startWaiting starts the jobs reserved ahead that have a slot now, in reserve order,
// and gives back those that waited too long. It tells whether none is left waiting.
func (f *fetcher) startWaiting(ctx context.Context) bool {
	if len(f.waiting) == 0 {
		return true
	}
	if n := min(f.cfg.concurrency-int(f.executor.busy.Load()), len(f.waiting)); n > 0 {
		f.metrics.reservedAhead("started", n)
		f.launch(ctx, f.waiting[:n])
		f.waiting = f.waiting[n:]
	}
	now := time.Now()
	late := 0
	for late < len(f.waiting) && !now.Before(f.waiting[late].until) {
		late++
	}
	f.giveBack(ctx, late, "reserved ahead of a free slot, none came free in time")
	if len(f.waiting) == 0 {
		f.waitTimer.Stop()
		return true
	}
	f.waitTimer.Reset(time.Until(f.waiting[0].until))
	return false
}

// giveBack gives back the first n waiting jobs (pgq.give_back, started false: not
// counted, S84). A give-back that cannot reach PostgreSQL is tried again while their
// leases may hold, as a report is (S36); past that they come back when their leases end.
func (f *fetcher) giveBack(ctx context.Context, n int, why string) {
	if n == 0 {
		return
	}
	jobs := f.waiting[:n:n]
	f.waiting = f.waiting[n:]
	f.metrics.reservedAhead("given_back", n)
	send := func(jobs []waitingJob) error {
		rows := make([]*dbsqlc.JobReserveRow, len(jobs))
		for i, j := range jobs {
			rows[i] = j.row
		}
		return f.session.giveBack(ctx, rows, why+": never started")
	}
	holds := func(j waitingJob) bool { return time.Since(j.sent) < j.row.ReservedUntil.Sub(j.row.ReservedAt) }
	retrying := func(err error) { f.log.Warn("giving back jobs reserved ahead failed; retrying", "err", err) }
	if gaveUp, err := deliver(jobs, send, holds, retrying); len(gaveUp) > 0 {
		f.log.Error("gave up giving back jobs reserved ahead; they come back when their leases end",
			"jobs", len(gaveUp), "err", err)
	}
}

// runOnce reserves up to free jobs and ahead more (S84), starts the runnable ones that
// have a slot, keeps the others waiting for one, and sets when the next reserve or nap
// is due. A failed reserve is logged, the session reconnected if it was lost, and the
// reserve tried again; when the failure may have come after the reserve committed (the
// answer was lost), the jobs it took are given back (pgq.unreserve, S35).
// runOnce returns an error only when the worker must stop: the database has no pgq
// schema (errors.Is(err, pgq.ErrNotMigrated)), or ctx ended while reconnecting.
func (f *fetcher) runOnce(ctx context.Context, free, ahead int) error {
	f.giveBackLost(ctx)
	// A stop request must not interrupt a reserve: pgx closes a connection whose query
	// is cancelled, and the jobs it just reserved would be left behind.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	call, sent := uuid.New(), time.Now()
	called := f.cfg.tel.call(rctx, "pgq.reserve", free+ahead)
	rows, err := f.session.reserve(rctx, free+ahead, call)
	called(len(rows), err)
	cancel()
	if err != nil {
		f.full = false
		return f.reserveFailed(ctx, call, err)
	}
	f.est.sample(f.executor.returns.Load(), f.executor.ran.Load(), time.Since(sent))
	runnable := f.start(ctx, rows, sent)
	f.reserved += runnable
	f.fetch = runnable == free+ahead
	f.full = f.fetch
	if !f.fetch {
		f.poll.Reset(f.cfg.sleep)
		f.coolUntil = time.Now().Add(f.cfg.cooldown)
	}
	if runnable > 0 && f.session.napping.Load() {
		f.session.wake(ctx) // busy again: its handlers' return brings the next reserve
	}
	// A worker that finds no job naps (pgq.nap): only then do dispatches to its queues
	// send it a NOTIFY. While its handlers run it waits napAfter first, since the next
	// handler to return brings a reserve anyway.
	switch {
	case f.fetch || f.noNap:
		f.napTimer.Stop()
	case !f.session.napping.Load() && f.active.count() == 0:
		f.napTimer.Reset(0)
	case !f.session.napping.Load():
		f.napTimer.Reset(napAfter)
	}
	return nil
}

// reserveFailed handles a failed reserve: the worker stops when the schema is missing;
// otherwise the session is reconnected if it was lost and the reserve is due again. A
// failure that did not come from PostgreSQL's answer (a lost connection, a timeout) may
// have come after the reserve committed, so its call is remembered for pgq.unreserve.
func (f *fetcher) reserveFailed(ctx context.Context, call uuid.UUID, err error) error {
	mapped := pgq.MapError(err)
	if errors.Is(mapped, pgq.ErrNotMigrated) {
		f.log.Error("worker stopping: the database has no pgq schema", "err", err)
		return fmt.Errorf("pgq/worker: reserve: %w (%w)", pgq.ErrNotMigrated, mapped)
	}
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) && !errors.Is(err, errNoSession) {
		f.lost = append(f.lost, call)
	}
	if !isReadOnly(err) { // reconnect says what a read-only server means
		f.log.Error("reserve failed; retrying", "err", err)
	}
	f.fetch = true // a failed reserve says nothing about the queue being empty
	return f.session.reconnect(ctx, err)
}

// giveBackLost gives back the jobs of the reserve calls whose answer was lost; a call
// that fails stays for the next reserve.
func (f *fetcher) giveBackLost(ctx context.Context) {
	for len(f.lost) > 0 {
		n, err := f.session.unreserve(ctx, f.lost[0])
		if err != nil {
			f.log.Warn("give back of a lost reserve failed; retrying later", "err", err)
			return
		}
		if n > 0 {
			f.log.Info("gave back the jobs of a reserve whose answer was lost", "jobs", n)
		}
		f.lost = f.lost[1:]
	}
}

// start writes the line of each job that reserve did not hand over, starts the
// runnable ones for which a slot is free, and keeps the rest waiting for one (S84). It
// returns how many were runnable. sent is when the reserve was sent.
func (f *fetcher) start(ctx context.Context, rows []*dbsqlc.JobReserveRow, sent time.Time) int {
	jobs := make([]waitingJob, 0, len(rows))
	for _, row := range rows {
		if row.Pickup != nil {
			f.reporter.logPickup(row)
			continue
		}
		if len(jobs) == 0 {
			f.limited = false
		}
		f.limited = f.limited || holdsPlace(row.OverlapKeys)
		// A quarter of the lease leaves the heartbeater its time to renew it.
		wait := min(f.aheadWait, row.ReservedUntil.Sub(row.ReservedAt)/4)
		jobs = append(jobs, waitingJob{row: row, sent: sent, until: sent.Add(wait)})
	}
	free := min(len(jobs), max(0, f.cfg.concurrency-int(f.executor.busy.Load())))
	f.launch(ctx, jobs[:free])
	if len(jobs) > free {
		f.metrics.reservedAhead("reserved", len(jobs)-free)
		f.waiting = append(f.waiting, jobs[free:]...)
		f.waitTimer.Reset(time.Until(f.waiting[0].until))
	}
	return len(jobs)
}

// launch starts the handlers of jobs, which have their slots. Their timeouts begin now,
// not at the reserve: a job that waited for its slot has its whole timeout. Those that
// share a timeout share a deadline.
func (f *fetcher) launch(ctx context.Context, jobs []waitingJob) {
	deadlines := map[time.Duration]*deadline{}
	for _, j := range jobs {
		timeout := f.executor.timeoutOf(j.row)
		d := deadlines[timeout]
		if d == nil {
			d = f.executor.newDeadline(ctx, timeout)
			deadlines[timeout] = d
		}
		f.executor.start(d, j.row, j.sent)
	}
	for _, d := range deadlines {
		d.release() // start's own reference
	}
}

// limitReached tells whether WithMaxJobs or WithStopWhenEmpty stops the worker now, or
// whether one more reserve is due first.
func (f *fetcher) limitReached() (stop, again bool) {
	if f.active.count() > 0 || len(f.waiting) > 0 {
		return false, false
	}
	switch {
	case f.cfg.maxJobs > 0 && f.reserved >= f.cfg.maxJobs:
		f.log.Info("worker stopping: max jobs reached", "jobs", f.reserved)
		return true, false
	case f.cfg.stopWhenEmpty && !f.fetch:
		// A job that finished after the last reserve (its signal still waiting) may
		// have been put back to wait, due now: reserve once more before stopping.
		select {
		case <-f.freed:
			f.fetch = true
			return false, true
		default:
		}
		f.log.Info("worker stopping: queues empty")
		return true, false
	}
	return false, false
}

// wait waits for what may make a reserve due: a notification, the poll, a freed slot,
// the end of a cooldown, or the time to nap. It returns false once ctx is done.
func (f *fetcher) wait(ctx context.Context) bool {
	select {
	case <-ctx.Done():
		return false
	case <-f.wake:
		f.fetch = true
	case <-f.poll.C:
		f.fetch = true
		f.poll.Reset(f.cfg.sleep)
	case <-f.freed:
		f.fetch = true
	case <-f.cooled.C:
	case <-f.waitTimer.C: // a job reserved ahead waited its longest: startWaiting gives it back
	case <-f.napTimer.C:
		if !f.fetch { // else a reserve is due anyway; if it comes back short, the nap is set again
			f.nap(ctx)
		}
	}
	return true
}

// nap naps the session (pgq.nap) and sets what follows.
func (f *fetcher) nap(ctx context.Context) {
	ok, err := f.session.nap(ctx)
	switch {
	case err != nil:
		f.log.Error("nap failed; reconnecting", "err", err)
		f.fetch = true // the reserve on the closed session recovers it
	case ok:
		// Dispatches that saw no napper have committed: one more reserve, now, finds
		// their jobs (a nap only follows a short reserve whose cooldown would otherwise
		// delay a job dispatched just before the nap).
		f.fetch, f.coolUntil, f.napRetry = true, time.Time{}, 0
	default:
		// A dispatching transaction is still open: it will not notify. Nap again later,
		// backing off towards the poll interval.
		f.napRetry = min(max(2*f.napRetry, f.cfg.cooldown, time.Millisecond), f.cfg.sleep)
		f.napTimer.Reset(f.napRetry)
	}
}
