// Package worker runs pgq jobs: it reserves them with pgq.reserve, runs their Go or SQL
// handlers, keeps their leases alive, and reports each outcome with pgq.complete,
// pgq.fail or pgq.release. Every decision about a job's state (retry or fail, which
// backoff, exhausted or not) is made by those SQL functions; this package is the loop.
package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgq-dev/pgq/internal/dbsqlc"
	"github.com/pgq-dev/pgq/internal/pgcodec"
	"github.com/pgq-dev/pgq/pgq"
)

// ErrHandlerStuck is returned by Run when a handler did not return within the timeout
// grace after its context was cancelled. Its job is neither completed nor released: it
// comes back through its lease once this process has exited, so a program embedding
// the worker must exit when Run returns it (S13).
var ErrHandlerStuck = errors.New("pgq/worker: a handler did not return after cancellation; exit the process")

var (
	errShutdown    = errors.New("worker stopping")
	errTimeout     = errors.New("job timeout")
	errOverlapLost = errors.New("the session holding this job's overlap lock was lost")
)

// Worker reserves and runs jobs. Create it with New, register handlers with Handle, then
// call Run once.
type Worker struct {
	pool     *pgxpool.Pool
	q        *dbsqlc.Queries
	cfg      config
	log      *slog.Logger
	handlers map[string]handler
	metrics  *metrics

	mu      sync.Mutex
	running map[uuid.UUID]*active // by lease token: one entry per attempt, until reported
	busy    atomic.Int64          // handlers running now: the slots of WithConcurrency

	// session is the connection reserve runs on: overlap advisory locks taken by reserve
	// belong to it, so they are released on it too. sessionMu serialises its use.
	sessionMu sync.Mutex
	session   *pgxpool.Conn
	// napping: the session naps on our queues (pgq.nap), so dispatches to them notify.
	// Set with sessionMu held; recoverSession, which may run on the maintenance
	// goroutine, clears it with the old session.
	napping atomic.Bool

	sqlSlots    chan struct{} // SQL handlers each hold a pool connection: at most MaxConns - 3 at once
	freed       chan struct{} // a handler slot came free
	wake        chan struct{} // a notification for one of our queues
	stuck       chan uuid.UUID
	completions chan *active
	failures    chan failure
	handoff     chan *active  // a handler goroutine waiting for its next job takes it here
	stopped     chan struct{} // closed when Run returns: waiting handler goroutines exit
}

// failure is an attempt whose handler raised (or timed out), waiting for pgq.fail_many.
type failure struct {
	a         *active
	exception string
	timedOut  bool
}

// active is one attempt the worker holds: its handler running, or its outcome waiting
// to be reported.
type active struct {
	row         *dbsqlc.JobReserveRow // in the slice its reserve returned
	token       uuid.UUID
	ctx         jobContext
	cancel      context.CancelCauseFunc // use Worker.cancel, which also starts the watchdog
	deadline    *deadline
	started     time.Time
	lease       time.Duration // the queue's retry_after, as granted at reservation
	heartbeatAt time.Time
	state       atomic.Int32 // running, then returned or abandoned: whichever comes first decides
	watched     atomic.Bool  // the watchdog is started
}

// States of an active attempt's handler.
const (
	running int32 = iota
	returned
	abandoned
)

// New returns a Worker that uses pool for its connections: one session connection
// (reserve and overlap locks), one listener, one for heartbeats and completions, and one
// per SQL handler running, of which at most MaxConns - 3 run at once (Go handlers need
// no connection). Workers need a direct session connection, not a transaction-mode
// pooler.
func New(pool *pgxpool.Pool, opts ...Option) (*Worker, error) {
	if pool == nil {
		return nil, errors.New("pgq/worker: New: pool is nil")
	}
	cfg := defaults()
	for _, o := range opts {
		if err := o(&cfg); err != nil {
			return nil, fmt.Errorf("pgq/worker: %w", err)
		}
	}
	w := &Worker{
		pool:        pool,
		q:           dbsqlc.New(pool),
		cfg:         cfg,
		log:         cfg.logger.With("worker", cfg.name),
		handlers:    map[string]handler{},
		running:     map[uuid.UUID]*active{},
		freed:       make(chan struct{}, 1),
		wake:        make(chan struct{}, 1),
		stuck:       make(chan uuid.UUID, 1),
		completions: make(chan *active, 1024),
		failures:    make(chan failure, 1024),
		handoff:     make(chan *active),
		stopped:     make(chan struct{}),
		sqlSlots:    make(chan struct{}, max(1, int(pool.Config().MaxConns)-3)),
	}
	if cfg.registerer != nil {
		m, err := newMetrics(cfg.registerer, w.q)
		if err != nil {
			return nil, fmt.Errorf("pgq/worker: metrics: %w", err)
		}
		w.metrics = m
	}
	return w, nil
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// Run serves the queues until ctx is done (graceful stop, S32), or until --max-jobs,
// --max-time or --stop-when-empty says stop. It returns nil after a clean stop, in which
// no job is left reserved by this worker, and ErrHandlerStuck or a connection error
// otherwise.
func (w *Worker) Run(ctx context.Context) error {
	session, err := w.pool.Acquire(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil // stopped before it started: nothing reserved
		}
		return fmt.Errorf("pgq/worker: session connection: %w", err)
	}
	pgcodec.Register(session.Conn().TypeMap())
	w.session = session
	defer close(w.stopped)
	defer func() {
		if w.napping.Load() {
			w.wakeUp(ctx) // the nap locks belong to the connection, which goes back to the pool
		}
		w.sessionMu.Lock()
		if w.session != nil {
			w.session.Release()
		}
		w.sessionMu.Unlock()
	}()

	bg, stopBackground := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	wg.Go(func() { w.listen(bg) })
	wg.Go(func() { w.heartbeat(bg) })
	wg.Go(func() { w.retain(bg) })
	wg.Go(func() { w.vacuum(bg) })
	// The configuration check only logs: jobs need not wait for it, but Run does not
	// return before its warnings are written.
	checked := make(chan struct{})
	go func() {
		defer close(checked)
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		w.checkConfig(cctx)
	}()
	defer func() { <-checked }()
	// Completions and failures are reported in batches: one pgq.complete or
	// pgq.fail_many per batch. They stop once Run has returned; by then nothing runs.
	stopBatchers := make(chan struct{})
	var batchers sync.WaitGroup
	batchers.Go(func() { batch(w.completions, stopBatchers, w.completeBatch) })
	batchers.Go(func() { batch(w.failures, stopBatchers, w.failBatch) })
	defer func() {
		close(stopBatchers)
		batchers.Wait()
		stopBackground()
		wg.Wait()
	}()

	var maxTimeUp <-chan time.Time
	if w.cfg.maxTime > 0 {
		t := time.NewTimer(w.cfg.maxTime)
		defer t.Stop()
		maxTimeUp = t.C
	}
	w.log.Info("worker started", "queues", w.cfg.queues, "concurrency", w.cfg.concurrency)

	reserved := 0
	fetch := true
	poll := time.NewTimer(w.cfg.sleep)
	defer poll.Stop()
	// After a short reserve, the next one waits out the cooldown (WithFetchCooldown).
	var coolUntil time.Time
	cooled := time.NewTimer(0)
	defer cooled.Stop()
	// Under load, fetch once a quarter of the slots are free rather than one job per
	// freed slot: fewer, larger reserves. An idle worker fetches at once.
	batch := max(1, w.cfg.concurrency/4)
	// A worker that finds no job naps (pgq.nap): only then do dispatches to its queues
	// send it a NOTIFY. While its handlers run it waits napAfter first, since the next
	// handler to return brings a reserve anyway.
	napTimer := time.NewTimer(time.Hour)
	napTimer.Stop()
	defer napTimer.Stop()
	var napRetry time.Duration
	for {
		// A slot is a running handler. A job whose handler has returned waits for its
		// batched completion without a slot, but at most concurrency of them: a worker
		// holds at most twice its concurrency in reserved jobs.
		running := w.runningCount()
		free := min(w.cfg.concurrency-int(w.busy.Load()), 2*w.cfg.concurrency-running)
		if w.cfg.maxJobs > 0 {
			free = min(free, w.cfg.maxJobs-reserved)
		}
		wantFetch := fetch && free > 0 && (free >= batch || running == 0 || w.cfg.maxJobs > 0)
		if wait := time.Until(coolUntil); wantFetch && wait > 0 {
			wantFetch = false
			cooled.Reset(wait)
		}
		if wantFetch {
			// A stop request must not interrupt a reserve: pgx closes a connection whose
			// query is cancelled, and the jobs it just reserved would be left behind.
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
			rows, err := w.reserve(rctx, free)
			cancel()
			if err != nil {
				w.log.Error("reserve failed; retrying", "err", err)
				if err := w.recoverSession(ctx); err != nil {
					return w.shutdown()
				}
			}
			runnable := 0
			deadlines := map[time.Duration]*deadline{}
			for i := range rows {
				if rows[i].Pickup != nil {
					w.logPickup(rows[i])
					continue
				}
				timeout := w.timeoutOf(rows[i])
				d := deadlines[timeout]
				if d == nil {
					d = w.newDeadline(ctx, timeout)
					deadlines[timeout] = d
				}
				w.start(d, rows[i])
				runnable++
			}
			for _, d := range deadlines {
				d.release() // the loop's own reference
			}
			reserved += runnable
			fetch = runnable == free
			if !fetch {
				poll.Reset(w.cfg.sleep)
				coolUntil = time.Now().Add(w.cfg.cooldown)
			}
			if runnable > 0 && w.napping.Load() {
				w.wakeUp(ctx) // busy again: its handlers' return brings the next reserve
			}
			switch {
			case fetch:
				napTimer.Stop()
			case !w.napping.Load() && w.runningCount() == 0:
				napTimer.Reset(0)
			case !w.napping.Load():
				napTimer.Reset(napAfter)
			}
		}
		idle := w.runningCount() == 0
		switch {
		case w.cfg.maxJobs > 0 && reserved >= w.cfg.maxJobs && idle:
			w.log.Info("worker stopping: max jobs reached", "jobs", reserved)
			return w.shutdown()
		case w.cfg.stopWhenEmpty && !fetch && idle:
			// A job that finished after the last reserve (its signal still waiting) may
			// have been put back to wait, due now: reserve once more before stopping.
			select {
			case <-w.freed:
				fetch = true
				continue
			default:
			}
			w.log.Info("worker stopping: queues empty")
			return w.shutdown()
		}
		select {
		case <-ctx.Done():
			return w.shutdown()
		case <-maxTimeUp:
			w.log.Info("worker stopping: max time reached")
			return w.shutdown()
		case id := <-w.stuck:
			w.log.Error("handler did not return after cancellation; stopping the worker", "uuid", id)
			if err := w.shutdown(); err != nil {
				return err
			}
			return ErrHandlerStuck
		case <-w.wake:
			fetch = true
		case <-poll.C:
			fetch = true
			poll.Reset(w.cfg.sleep)
		case <-w.freed:
			fetch = true
		case <-cooled.C:
		case <-napTimer.C:
			if fetch {
				break // a reserve is due anyway; if it comes back short, the nap is set again
			}
			ok, err := w.nap(ctx)
			switch {
			case err != nil:
				w.log.Error("nap failed; reconnecting", "err", err)
				fetch = true // the reserve on the closed session recovers it
			case ok:
				// Dispatches that saw no napper have committed: one more reserve, now,
				// finds their jobs (a nap only follows a short reserve whose cooldown
				// would otherwise delay a job dispatched just before the nap).
				fetch, coolUntil, napRetry = true, time.Time{}, 0
			default:
				// A dispatching transaction is still open: it will not notify. Nap again
				// later, backing off towards the poll interval.
				napRetry = min(max(2*napRetry, w.cfg.cooldown, time.Millisecond), w.cfg.sleep)
				napTimer.Reset(napRetry)
			}
		}
	}
}

const (
	// napAfter: a worker whose last reserve came back short but whose handlers still run
	// naps when none of them has returned for this long.
	napAfter = 20 * time.Millisecond
	// napWait: how long pgq.nap waits for the dispatches under way.
	napWait = 10 * time.Millisecond
)

// nap makes the session nap on the worker's queues (pgq.nap): dispatches to them notify
// from now on. ok reports that the dispatches under way have ended, so one more reserve
// sees their jobs. After an error the session is closed, since nap locks may be left on
// it; the next reserve opens another.
func (w *Worker) nap(ctx context.Context) (bool, error) {
	w.sessionMu.Lock()
	defer w.sessionMu.Unlock()
	if w.session == nil {
		return false, errNoSession
	}
	nctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	ok, err := dbsqlc.New(w.session).SessionNap(nctx, dbsqlc.SessionNapParams{Queues: w.cfg.queues, Wait: napWait})
	if err != nil {
		w.session.Conn().Close(nctx)
		w.napping.Store(false)
		return false, err
	}
	w.napping.Store(true)
	return ok, nil
}

// wakeUp ends the session's nap (pgq.wake). On error the session is closed, which ends
// the nap too.
func (w *Worker) wakeUp(ctx context.Context) {
	w.sessionMu.Lock()
	defer w.sessionMu.Unlock()
	if w.session == nil {
		return
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	if err := dbsqlc.New(w.session).SessionWake(wctx); err != nil {
		w.log.Error("wake failed; reconnecting", "err", err)
		w.session.Conn().Close(wctx)
	}
	w.napping.Store(false)
}

var errNoSession = errors.New("pgq/worker: no session connection")

func (w *Worker) reserve(ctx context.Context, max int) ([]*dbsqlc.JobReserveRow, error) {
	w.sessionMu.Lock()
	defer w.sessionMu.Unlock()
	if w.session == nil {
		return nil, errNoSession
	}
	return dbsqlc.New(w.session).JobReserve(ctx, dbsqlc.JobReserveParams{
		Worker: w.cfg.name, Queues: w.cfg.queues, Max: int32(max), DefaultTries: int32(w.cfg.tries),
	})
}

// recoverSession pauses after a failed session call and, when the session connection is
// gone, cancels the handlers whose overlap locks went with it (PostgreSQL freed them, so
// another worker may already run the same key) and opens a new session.
func (w *Worker) recoverSession(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Second):
	}
	w.sessionMu.Lock()
	defer w.sessionMu.Unlock()
	if w.session != nil && !w.session.Conn().IsClosed() {
		return nil
	}
	w.mu.Lock()
	for _, a := range w.running {
		if len(a.row.OverlapKeys) > 0 {
			w.cancel(a, errOverlapLost)
		}
	}
	w.mu.Unlock()
	if w.session != nil {
		w.session.Release()
	}
	w.napping.Store(false) // the nap locks went with the old session
	for {
		c, err := w.pool.Acquire(ctx)
		if err == nil {
			pgcodec.Register(c.Conn().TypeMap())
			w.session = c
			return nil
		}
		w.log.Error("session connection failed; retrying", "err", err)
		select {
		case <-ctx.Done():
			w.session = nil
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// unlockOverlap gives back the overlap locks of finished jobs, in one call, on the
// session that took them.
func (w *Worker) unlockOverlap(batch []*active) {
	var p dbsqlc.OverlapUnlockManyParams
	for _, a := range batch {
		for _, k := range a.row.OverlapKeys {
			p.Uuids = append(p.Uuids, a.row.Uuid)
			p.Keys = append(p.Keys, k)
		}
	}
	if len(p.Keys) == 0 {
		return
	}
	w.sessionMu.Lock()
	defer w.sessionMu.Unlock()
	if w.session == nil {
		return // the session is gone, and its locks with it
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := dbsqlc.New(w.session).OverlapUnlockMany(ctx, p); err != nil {
		w.log.Warn("overlap unlock failed", "keys", p.Keys, "err", err)
	}
}

// logPickup writes the outcome line of a job that reserve did not hand over: turned away
// by middleware, exhausted (S12) or debounced (S24).
func (w *Worker) logPickup(r *dbsqlc.JobReserveRow) {
	pickup := string(*r.Pickup)
	level := slog.LevelInfo
	if *r.Pickup == dbsqlc.PgqPickupExhausted || *r.Pickup == dbsqlc.PgqPickupFailed {
		level = slog.LevelWarn
	}
	attrs := []any{"job", r.Job, "uuid", r.Uuid, "attempt", r.Attempts, "queue", r.Queue, "outcome", pickup}
	if r.PickupMiddleware != nil {
		attrs = append(attrs, "middleware", *r.PickupMiddleware)
		w.metrics.turnedAway(*r.PickupMiddleware)
	}
	w.log.Log(context.Background(), level, "job "+pickup+": "+deref(r.PickupNote), attrs...)
	w.metrics.outcome(r.Job, r.Queue, pickup, 0)
}

func (w *Worker) runningCount() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.running)
}

// deadline is the timeout of the jobs of one reserve that share a timeout: one timer for
// all of them rather than one per job (a timer per job was an eighth of the worker's CPU
// at 25k jobs/s). It is stopped once its last job is finished.
type deadline struct {
	base  context.Context // the jobs' values: a stop request cancels jobs itself, after the grace
	at    time.Time       // zero: no timeout
	timer *time.Timer
	refs  atomic.Int32
	mu    sync.Mutex
	jobs  []*active // to cancel when the timeout fires
}

// newDeadline starts the timeout (none when timeout is 0) with one reference, the
// caller's. When the timeout fires it cancels the jobs, which starts their watchdogs.
func (w *Worker) newDeadline(parent context.Context, timeout time.Duration) *deadline {
	d := &deadline{base: context.WithoutCancel(parent)}
	d.refs.Store(1)
	if timeout > 0 {
		d.at = time.Now().Add(timeout)
		d.timer = time.AfterFunc(timeout, func() {
			d.mu.Lock()
			jobs := d.jobs
			d.mu.Unlock()
			for _, a := range jobs {
				w.cancel(a, errTimeout) // a no-op for the jobs already finished
			}
		})
	}
	return d
}

func (d *deadline) release() {
	if d.refs.Add(-1) == 0 && d.timer != nil {
		d.timer.Stop()
	}
}

// jobContext is the context a handler runs under. Its cancellation is the job's own; the
// deadline cancels it (cause errTimeout) rather than being its parent context, since
// registering each job as a child of one shared context (a map insert under the
// parent's lock) was most of the cost of starting a job. It reports the deadline and,
// once the timeout cancelled it, DeadlineExceeded, as a context with a deadline would.
type jobContext struct {
	context.Context
	at time.Time
}

func (c *jobContext) Deadline() (time.Time, bool) { return c.at, !c.at.IsZero() }

func (c *jobContext) Err() error {
	err := c.Context.Err()
	if err != nil && context.Cause(c.Context) == errTimeout {
		return context.DeadlineExceeded
	}
	return err
}

// start runs one reserved job's handler in its own goroutine, under d's timeout.
func (w *Worker) start(d *deadline, row *dbsqlc.JobReserveRow) {
	d.refs.Add(1)
	a := &active{row: row, token: row.LeaseToken, deadline: d, started: time.Now(),
		lease: row.ReservedUntil.Sub(row.ReservedAt)}
	a.ctx.Context, a.cancel = context.WithCancelCause(d.base)
	a.ctx.at = d.at
	a.heartbeatAt = a.started.Add(a.lease / 3)
	if d.timer != nil {
		d.mu.Lock()
		d.jobs = append(d.jobs, a)
		d.mu.Unlock()
	}
	w.mu.Lock()
	w.running[a.token] = a
	w.mu.Unlock()
	w.busy.Add(1)
	select {
	case w.handoff <- a:
	default:
		go w.handle(a)
	}
}

// handle runs h, then each job handed to it while it waits, until Run returns. The
// goroutines are reused because a fresh one grows its stack again for each job (decoding
// the arguments alone outgrows the first few KiB): copying stacks was a tenth of the
// worker's CPU in the steady-state benchmark. At most about concurrency of them wait.
func (w *Worker) handle(a *active) {
	for {
		w.runJob(&a.ctx, a)
		select {
		case a = <-w.handoff:
		case <-w.stopped:
			return
		}
	}
}

func (w *Worker) timeoutOf(row *dbsqlc.JobReserveRow) time.Duration {
	if row.Timeout != nil {
		return time.Duration(*row.Timeout) * time.Second
	}
	return w.cfg.timeout
}

// runJob runs the handler (its context carries the timeout) and reports the outcome.
func (w *Worker) runJob(ctx context.Context, a *active) {
	err := w.invoke(ctx, a.row, a.token)
	if !a.state.CompareAndSwap(running, returned) {
		return // abandoned: the worker is stopping with ErrHandlerStuck
	}
	w.busy.Add(-1) // the slot is free; the report is the worker's business
	signal(w.freed)
	w.report(ctx, a, err)
}

// invoke runs the job's SQL handler (in one transaction with its completion) or its
// registered Go handler. A panic becomes the attempt's exception (S33).
func (w *Worker) invoke(ctx context.Context, row *dbsqlc.JobReserveRow, token uuid.UUID) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &PanicError{Value: r}
		}
	}()
	if row.Handler != nil {
		return w.runSQL(ctx, row, token)
	}
	h, ok := w.handlers[row.Job]
	if !ok {
		return fmt.Errorf("no handler for job %q: register a Go handler or give its class a SQL handler (pgq.define_job(handler => ...))", row.Job)
	}
	return h.run(ctx, row)
}

// errCompletedInTx marks a SQL job whose handler and completion committed together.
var errCompletedInTx = errors.New("completed in handler transaction")

func (w *Worker) runSQL(ctx context.Context, row *dbsqlc.JobReserveRow, token uuid.UUID) error {
	select {
	case w.sqlSlots <- struct{}{}:
		defer func() { <-w.sqlSlots }()
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	err := pgx.BeginFunc(ctx, w.pool, func(tx pgx.Tx) error {
		q := w.q.WithTx(tx)
		if err := q.SessionSetHandlerLimits(ctx, fmt.Sprint(w.timeoutOf(row).Milliseconds())); err != nil {
			return err
		}
		return q.JobRunSQL(ctx, dbsqlc.JobRunSQLParams{Uuid: row.Uuid, Token: token})
	})
	if err != nil {
		return pgq.MapError(err)
	}
	return errCompletedInTx
}

// report sends the outcome of one attempt to PostgreSQL, which decides what follows.
func (w *Worker) report(ctx context.Context, a *active, err error) {
	if err == nil {
		w.completions <- a // batched; the job stays reserved (and heartbeated) until reported
		return
	}
	cause := context.Cause(ctx)
	// Outcome calls must go through even when the worker is stopping.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	switch {
	case errors.Is(err, errCompletedInTx):
		w.logOutcome(a, "succeeded", nil)
	case errors.Is(err, pgq.ErrLeaseLost) && !w.holds(rctx, a):
		// The SQL handler's effects were rolled back with its rejected completion. A
		// token that lost its job never gets it back, so this complete is rejected too,
		// and recorded on the attempt (S15). (A handler that raised PQ001 itself while
		// its lease holds fails below like any exception.)
		_, _ = w.q.JobCompleteMany(rctx, dbsqlc.JobCompleteManyParams{Uuids: []uuid.UUID{a.row.Uuid}, Tokens: []uuid.UUID{a.token}})
		w.logOutcome(a, "lease_lost", err)
	case errors.Is(cause, errShutdown), errors.Is(cause, errOverlapLost):
		reason := "worker stopped before the handler finished; released without delay, attempt not counted"
		if errors.Is(cause, errOverlapLost) {
			reason = "the worker's session holding the overlap lock was lost; released without delay, attempt not counted"
		}
		attempts, rerr := w.q.JobRelease(rctx, dbsqlc.JobReleaseParams{
			Uuid: a.row.Uuid, Token: a.token, Delay: 0, Refund: true, Reason: &reason,
		})
		w.logResult(a, attempts, rerr)
	default:
		if r, ok := asRelease(err); ok {
			attempts, rerr := w.q.JobRelease(rctx, dbsqlc.JobReleaseParams{
				Uuid: a.row.Uuid, Token: a.token, Delay: int32(r.Delay / time.Second),
			})
			w.logResult(a, attempts, rerr)
			break
		}
		// Every other error is the attempt's exception. If the lease was lost meanwhile,
		// fail is rejected and recorded (S15).
		timedOut := errors.Is(cause, errTimeout) || isQueryCanceled(err) && !errors.Is(cause, pgq.ErrLeaseLost)
		w.failures <- failure{a: a, exception: err.Error(), timedOut: timedOut} // batched; the slot frees then
		return
	}
	w.finish(a)
}

// holds tells whether the attempt's token still holds its job (a heartbeat that also
// answers the question).
func (w *Worker) holds(ctx context.Context, a *active) bool {
	held, err := w.q.JobHeartbeatMany(ctx, dbsqlc.JobHeartbeatManyParams{Uuids: []uuid.UUID{a.row.Uuid}, Tokens: []uuid.UUID{a.token}})
	return err != nil || len(held) == 1 // on error, assume held: fail is the safe call
}

func isQueryCanceled(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "57014"
}

func (w *Worker) runFailedHook(ctx context.Context, a *active, attempt *dbsqlc.PgqAttempt) {
	h, ok := w.handlers[a.row.Job]
	if !ok || h.failed == nil {
		return
	}
	defer func() {
		if r := recover(); r != nil {
			w.log.Error("failed hook panicked", "job", a.row.Job, "uuid", a.row.Uuid, "panic", r)
		}
	}()
	h.failed(ctx, a.row, errors.New(deref(attempt.Exception)))
}

// batch calls flush with what arrives on ch, taking everything already waiting (up to
// 1000) each time, until stop is closed and ch is empty.
func batch[T any](ch <-chan T, stop <-chan struct{}, flush func([]T)) {
	for {
		var first T
		select {
		case first = <-ch:
		case <-stop:
			select {
			case first = <-ch:
			default:
				return
			}
		}
		items := []T{first}
	more:
		for len(items) < 1000 {
			select {
			case x := <-ch:
				items = append(items, x)
			default:
				break more
			}
		}
		flush(items)
	}
}

// completeBatch completes succeeded jobs in one pgq.complete.
func (w *Worker) completeBatch(batch []*active) {
	uuids := make([]uuid.UUID, len(batch))
	tokens := make([]uuid.UUID, len(batch))
	for i, a := range batch {
		uuids[i], tokens[i] = a.row.Uuid, a.token
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	var done []uuid.UUID
	err := w.pool.AcquireFunc(ctx, func(c *pgxpool.Conn) error {
		pgcodec.Register(c.Conn().TypeMap())
		var err error
		done, err = dbsqlc.New(c).JobCompleteMany(ctx, dbsqlc.JobCompleteManyParams{Uuids: uuids, Tokens: tokens})
		return err
	})
	cancel()
	var completed map[uuid.UUID]bool // nil when all were completed, the usual case
	if len(done) < len(batch) {
		completed = make(map[uuid.UUID]bool, len(done))
		for _, id := range done {
			completed[id] = true
		}
	}
	for _, a := range batch {
		switch {
		case err != nil:
			w.logOutcome(a, "complete_failed", err)
		case completed == nil || completed[a.row.Uuid]:
			w.logOutcome(a, "succeeded", nil)
		default:
			w.logOutcome(a, "lease_lost", pgq.ErrLeaseLost)
		}
	}
	w.finish(batch...)
}

// failBatch reports failed attempts in one pgq.fail_many, which decides for each whether
// it is retried or failed for good; the failed hook runs for those failed for good.
func (w *Worker) failBatch(batch []failure) {
	p := dbsqlc.JobFailManyParams{
		Uuids: make([]uuid.UUID, len(batch)), Tokens: make([]uuid.UUID, len(batch)),
		Exceptions: make([]string, len(batch)), TimedOut: make([]bool, len(batch)),
		DefaultTries: int32(w.cfg.tries), DefaultBackoff: w.cfg.backoff,
	}
	for i, f := range batch {
		p.Uuids[i], p.Tokens[i], p.Exceptions[i], p.TimedOut[i] = f.a.row.Uuid, f.a.token, f.exception, f.timedOut
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	attempts, err := w.q.JobFailMany(ctx, p)
	byToken := make(map[uuid.UUID]*dbsqlc.PgqAttempt, len(attempts))
	for _, at := range attempts {
		if at.LeaseToken != nil {
			byToken[*at.LeaseToken] = at
		}
	}
	finished := make([]*active, len(batch))
	for i, f := range batch {
		finished[i] = f.a
		at, ok := byToken[f.a.token]
		switch {
		case err != nil:
			w.logResult(f.a, nil, err)
		case !ok:
			w.logResult(f.a, nil, nil) // rejected: the lease was lost
		default:
			w.logResult(f.a, []*dbsqlc.PgqAttempt{at}, nil)
			if at.Final {
				w.runFailedHook(ctx, f.a, at)
			}
		}
	}
	w.finish(finished...)
}

func (w *Worker) logResult(a *active, attempts []*dbsqlc.PgqAttempt, err error) {
	switch {
	case err != nil:
		w.logOutcome(a, "report_failed", err)
	case len(attempts) == 0:
		w.logOutcome(a, "lease_lost", pgq.ErrLeaseLost)
	default:
		at := attempts[0]
		attrs := []any{}
		if at.Delay != nil {
			attrs = append(attrs, "delay", time.Duration(*at.Delay)*time.Second)
		}
		if at.Final {
			attrs = append(attrs, "final", true)
		}
		var exc error
		if at.Exception != nil {
			exc = errors.New(*at.Exception)
		}
		outcome := at.Outcome
		switch {
		case at.Final:
			outcome += " for good"
		case at.Delay != nil && at.Outcome != "released":
			outcome += ", will retry"
		}
		w.logOutcomeMsg(a, "job "+outcome, at.Outcome, exc, attrs...)
	}
}

func (w *Worker) logOutcome(a *active, outcome string, err error, attrs ...any) {
	w.logOutcomeMsg(a, "job "+outcome, outcome, err, attrs...)
}

// logOutcomeMsg writes the one line per job outcome.
func (w *Worker) logOutcomeMsg(a *active, msg, outcome string, err error, attrs ...any) {
	took := time.Since(a.started)
	w.metrics.outcome(a.row.Job, a.row.Queue, outcome, took)
	level := slog.LevelInfo
	if err != nil && outcome != "released" {
		level = slog.LevelWarn
	}
	if !w.log.Enabled(context.Background(), level) {
		return // at thousands of jobs a second, building the line is not free
	}
	attrs = append([]any{"job", a.row.Job, "uuid", a.row.Uuid, "attempt", a.row.Attempts, "queue", a.row.Queue,
		"duration", took.Round(time.Microsecond), "outcome", outcome}, attrs...)
	if err != nil {
		attrs = append(attrs, "exception", err.Error())
	}
	w.log.Log(context.Background(), level, msg, attrs...)
}

// forget drops an attempt from the running set, so it is no longer heartbeated.
func (w *Worker) forget(a *active) {
	w.mu.Lock()
	delete(w.running, a.token)
	w.mu.Unlock()
}

// finish ends attempts whose outcome has been reported: their overlap locks go (in one
// call for the batch), then their contexts, deadlines and places in the running set.
func (w *Worker) finish(batch ...*active) {
	w.unlockOverlap(batch)
	for _, a := range batch {
		a.cancel(nil)
		a.deadline.release()
		w.forget(a)
	}
	signal(w.freed)
}

// shutdown waits for running handlers up to the shutdown grace, then cancels the rest;
// their reports release them without delay (S32). It returns ErrHandlerStuck when a
// handler ignores its cancellation.
func (w *Worker) shutdown() error {
	w.log.Info("worker stopping", "running", w.runningCount())
	grace := time.NewTimer(w.cfg.shutdownGrace)
	defer grace.Stop()
	for w.runningCount() > 0 {
		select {
		case <-w.freed:
		case <-grace.C:
			w.cancelAll(errShutdown)
			return w.waitCancelled()
		}
	}
	w.log.Info("worker stopped")
	return nil
}

func (w *Worker) cancelAll(cause error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, a := range w.running {
		w.cancel(a, cause)
	}
}

// cancel cancels a running handler's context with cause and starts its watchdog. A
// handler still running a grace period later ignores its cancellation, and its job must
// not be retried while it may still run, so it is left reserved, no longer heartbeated,
// and the worker stops. The watchdog starts here, where the worker cancels (timeout,
// lost lease or overlap lock, shutdown), rather than once per job: a context.AfterFunc
// per job was a tenth of the worker's CPU in the drain benchmark.
func (w *Worker) cancel(a *active, cause error) {
	a.cancel(cause)
	if a.state.Load() != running || !a.watched.CompareAndSwap(false, true) {
		return
	}
	time.AfterFunc(w.cfg.timeoutGrace, func() {
		if a.state.CompareAndSwap(running, abandoned) {
			w.forget(a)
			select {
			case w.stuck <- a.row.Uuid:
			default:
			}
		}
	})
}

func (w *Worker) waitCancelled() error {
	limit := time.NewTimer(w.cfg.timeoutGrace + time.Second)
	defer limit.Stop()
	for w.runningCount() > 0 {
		select {
		case <-w.freed:
		case <-w.stuck:
			return ErrHandlerStuck
		case <-limit.C:
			return ErrHandlerStuck
		}
	}
	w.log.Info("worker stopped")
	return nil
}

// heartbeat extends the leases of running jobs once a third of their lease has passed
// (S14), in one call for all due jobs, and cancels handlers whose lease was lost.
func (w *Worker) heartbeat(ctx context.Context) {
	everySecond(ctx, func() {
		w.watchOverlap(ctx)
		now := time.Now()
		w.mu.Lock()
		var due []*active
		for _, a := range w.running {
			if !now.Before(a.heartbeatAt) {
				due = append(due, a)
			}
		}
		w.mu.Unlock()
		if len(due) == 0 {
			return
		}
		uuids := make([]uuid.UUID, len(due))
		tokens := make([]uuid.UUID, len(due))
		for i, a := range due {
			uuids[i], tokens[i] = a.row.Uuid, a.token
		}
		held, err := w.q.JobHeartbeatMany(ctx, dbsqlc.JobHeartbeatManyParams{Uuids: uuids, Tokens: tokens})
		if err != nil {
			w.log.Error("heartbeat failed", "err", err, "jobs", len(due))
			return
		}
		kept := make(map[uuid.UUID]bool, len(held))
		for _, r := range held {
			kept[*r.LeaseToken] = true
		}
		w.metrics.lease("extended", len(kept))
		w.metrics.lease("lost", len(due)-len(kept))
		for _, a := range due {
			if !kept[a.token] {
				w.log.Warn("lease lost; cancelling handler", "job", a.row.Job, "uuid", a.row.Uuid)
				w.cancel(a, pgq.ErrLeaseLost)
				continue
			}
			w.mu.Lock()
			a.heartbeatAt = now.Add(a.lease / 3) // from now: the lease was just renewed for a whole retry_after
			w.mu.Unlock()
		}
	})
}

// everySecond calls fn once a second until ctx is done.
func everySecond(ctx context.Context, fn func()) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		fn()
	}
}

// watchOverlap runs every tick while a running job holds overlap locks: it releases locks
// held past their expire_after (pgq.expire_overlap) and, through that call, notices a
// lost session connection, whose handlers it then cancels.
func (w *Worker) watchOverlap(ctx context.Context) {
	w.mu.Lock()
	holding := false
	for _, a := range w.running {
		holding = holding || len(a.row.OverlapKeys) > 0
	}
	w.mu.Unlock()
	if !holding {
		return
	}
	w.sessionMu.Lock()
	if w.session == nil {
		w.sessionMu.Unlock()
		return
	}
	keys, err := dbsqlc.New(w.session).OverlapExpire(ctx)
	w.sessionMu.Unlock()
	if err != nil {
		w.log.Error("session check failed", "err", err)
		_ = w.recoverSession(ctx)
		return
	}
	for _, k := range keys {
		w.log.Warn("overlap lock held past expire_after; released while its handler still runs", "key", k)
	}
}

// listen keeps a LISTEN pgq_jobs connection and wakes the loop for our queues (S31). It
// reconnects when the connection drops and wakes the loop after each reconnect, since
// notifications sent meanwhile are lost; the poll covers the gap.
func (w *Worker) listen(ctx context.Context) {
	for ctx.Err() == nil {
		err := w.listenOnce(ctx)
		if ctx.Err() != nil {
			return
		}
		w.log.Warn("listener connection lost; reconnecting", "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}

func (w *Worker) listenOnce(ctx context.Context) error {
	pc, err := w.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	conn := pc.Hijack() // a LISTEN session must not go back to the pool
	defer conn.Close(context.Background())
	if err := dbsqlc.New(conn).ListenJobs(ctx); err != nil {
		return err
	}
	signal(w.wake)
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		if slices.Contains(w.cfg.queues, n.Payload) {
			signal(w.wake)
		}
	}
}

func ptr[T any](v T) *T { return &v }

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
