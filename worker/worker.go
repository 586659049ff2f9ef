// Package worker runs pgq jobs: it reserves them with pgq.reserve, runs their Go or SQL
// handlers, keeps their leases alive, and reports each outcome with pgq.complete,
// pgq.fail or pgq.release. Every decision about a job's state (retry or fail, which
// backoff, exhausted or not) is made by those SQL functions; this package is the loop.
//
// A Worker is a few small services, one file each, that share the attempts it holds
// (activeSet) and the session connection (session.go):
//
//   - fetcher.go: reserves jobs on the session, naps it when there are none;
//   - executor.go: runs the handlers under their deadlines, cancels them;
//   - reporter.go: reports outcomes, completions and failures in batches, retrying
//     what could not reach PostgreSQL while the leases hold (S36);
//   - heartbeater.go: keeps the leases and overlap leases alive (S14, S34);
//   - listener.go: wakes the fetcher when a job is dispatched to its queues;
//   - maintenance.go: the configuration check, retention, vacuum and the slots of
//     pgq.jobs.
//
// conns.go prepares the connections they use (the worker's own timeouts, S37).
package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgq-dev/pgq/internal/dbsqlc"
)

// ErrHandlerStuck is returned by Run when a handler did not return within the timeout
// grace after its context was cancelled. Its job is neither completed nor released: it
// comes back through its lease once this process has exited, so a program embedding
// the worker must exit when Run returns it (S13).
var ErrHandlerStuck = errors.New("pgq/worker: a handler did not return after cancellation; exit the process")

// Causes of a handler's cancellation.
var (
	errShutdown    = errors.New("worker stopping")
	errTimeout     = errors.New("job timeout")
	errOverlapLost = errors.New("the worker could not renew the lease of this job's overlap key in time")
	errCancelled   = errors.New("cancelled by an operator (pgq.cancel)")
)

// Worker reserves and runs jobs. Create it with New, register handlers with Handle, then
// call Run once.
type Worker struct {
	// Set by New, handlers filled by Handle before Run; read-only once Run has started.
	pool     *pgxpool.Pool
	q        *dbsqlc.Queries
	cfg      config
	log      *slog.Logger
	handlers map[string]handler
	metrics  *metrics // nil: no metrics

	// The services, wired by New; read-only. Each says which goroutine owns which of its
	// fields.
	conns       *conns
	active      *activeSet
	session     *session
	fetcher     *fetcher
	executor    *executor
	reporter    *reporter
	heartbeater *heartbeater
	listener    *listener
	maintenance *maintenance
	registry    *registry

	// freed: a handler slot came free, or an attempt was finished. Signalled by handler
	// goroutines and the reporter; received by the fetcher, then by shutdown.
	freed chan struct{}
	// stuck: a handler ignored its cancellation (the job of the first one). Sent by the
	// watchdogs; received by Run, then by shutdown.
	stuck chan uuid.UUID
}

// New returns a Worker that uses pool for its connections: one session connection
// (reserve and nap), one listener, one for heartbeats and completions, and one per SQL
// handler running, of which at most MaxConns - 3 run at once (Go handlers need no
// connection). The session and the listener need a session of their own: a direct
// connection or a session pooler's. When pool goes through a transaction pooler, say so
// with WithTransactionPooler and give them WithSessionPool.
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
		pool:     pool,
		q:        dbsqlc.New(pool),
		cfg:      cfg,
		log:      cfg.logger.With("worker", cfg.name),
		handlers: map[string]handler{},
		freed:    make(chan struct{}, 1),
		stuck:    make(chan uuid.UUID, 1),
	}
	if cfg.registerer != nil {
		m, err := newMetrics(cfg.registerer, w.q)
		if err != nil {
			return nil, fmt.Errorf("pgq/worker: metrics: %w", err)
		}
		w.metrics = m
	}
	tel, err := newTelemetry(cfg.otel, w.q)
	if err != nil {
		return nil, fmt.Errorf("pgq/worker: %w", err)
	}
	w.cfg.tel = tel
	w.wire()
	return w, nil
}

// wire builds the services and connects them: each gets only what it uses.
func (w *Worker) wire() {
	w.conns = &conns{pool: w.pool, pooled: w.cfg.transactionPooled}
	sessionConns := w.conns
	if w.cfg.sessionPool != nil {
		sessionConns = &conns{pool: w.cfg.sessionPool}
	}
	w.active = &activeSet{m: map[uuid.UUID]*active{}}
	w.executor = &executor{
		conns: w.conns, cfg: &w.cfg, handlers: w.handlers, active: w.active,
		sqlSlots: make(chan struct{}, max(1, int(w.pool.Config().MaxConns)-3)),
		groups:   newSQLGroups(w.cfg.sqlGroup, w.cfg.sqlGroups),
		handoff:  make(chan *active),
		stopped:  make(chan struct{}),
		freed:    w.freed,
		stuck:    w.stuck,
	}
	w.session = &session{conns: sessionConns, cfg: &w.cfg, log: w.log}
	w.reporter = &reporter{
		conns: w.conns, cfg: &w.cfg, log: w.log, metrics: w.metrics, handlers: w.handlers,
		active: w.active, busy: &w.executor.busy, freed: w.freed,
		completions: make(chan *active, 1024),
		failures:    make(chan failure, 1024),
	}
	w.executor.reporter = w.reporter
	w.fetcher = newFetcher(&w.cfg, w.log, w.metrics, w.session, w.executor, w.reporter, w.active, w.freed)
	w.heartbeater = &heartbeater{conns: w.conns, cfg: &w.cfg, log: w.log, metrics: w.metrics, active: w.active, executor: w.executor}
	w.listener = &listener{conns: sessionConns, queues: w.cfg.queues, log: w.log, wake: w.fetcher.wake}
	w.maintenance = &maintenance{q: w.q, cfg: &w.cfg, log: w.log}
	w.registry = &registry{q: w.q, cfg: &w.cfg, log: w.log, handlers: w.handlers}
}

// Run serves the queues until ctx is done (graceful stop, S32), or until --max-jobs,
// --max-time or --stop-when-empty says stop. It returns nil after a clean stop, in which
// no job is left reserved by this worker. Otherwise it returns ErrHandlerStuck, a
// connection error, or, when the database has no pgq schema, an error for which
// errors.Is(err, pgq.ErrNotMigrated) holds: the first reserve finds that out, so Run
// returns it at once, before any job has run.
func (w *Worker) Run(ctx context.Context) error {
	if err := w.session.open(ctx); err != nil {
		if ctx.Err() != nil {
			return nil // stopped before it started: nothing reserved
		}
		return fmt.Errorf("pgq/worker: session connection: %w", err)
	}
	defer close(w.executor.stopped) // last: waiting handler goroutines exit
	defer w.cfg.tel.close()         // the queue gauges read no more
	defer w.session.close(ctx)
	// Recorded before the configuration check, which reads what the live workers serve
	// (S87), and removed once every outcome is reported.
	w.registry.seen(ctx, true)
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		w.registry.stopped(rctx)
	}()
	stopServices, checked := w.startServices(ctx)
	defer stopServices()
	w.log.Info("worker started", "queues", w.cfg.queues, "concurrency", w.cfg.concurrency)
	// The configuration check's warnings come before the first job's line, and before
	// "worker stopped" of a worker that finds nothing to do, unless the check is slow.
	select {
	case <-checked:
	case <-time.After(checkWait):
	case <-ctx.Done():
	}
	stopErr := w.serve(ctx)
	if err := w.shutdown(); err != nil {
		return err
	}
	return stopErr
}

// checkWait is how long Run waits for the configuration check before it takes jobs.
const checkWait = 2 * time.Second

// startServices starts the listener, the heartbeater, the maintenance loops, the
// registry, the configuration check and the reporter's batchers. The returned func
// stops them: first the batchers, once they have reported everything sent to them
// (nothing runs by then), then the rest; it returns once the configuration check has
// written its warnings. checked is closed once it has.
func (w *Worker) startServices(ctx context.Context) (stop func(), checked <-chan struct{}) {
	bg, stopBackground := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	if w.polling() {
		w.log.Warn("the worker's connections go through a transaction pooler and it has no session connection: " +
			"it polls every --sleep and neither naps nor listens; give it one (--session-url, WithSessionPool) " +
			"to be woken by dispatches")
	} else {
		wg.Go(func() { w.listener.run(bg) })
	}
	wg.Go(func() { w.heartbeater.run(bg) })
	wg.Go(func() { w.maintenance.retain(bg) })
	wg.Go(func() { w.maintenance.vacuum(bg) })
	wg.Go(func() { w.maintenance.rotate(bg) })
	wg.Go(func() { w.registry.run(bg) })
	if w.cfg.schedules {
		s := newSchedules(w.q, w.log)
		wg.Go(func() { s.run(bg) })
	}
	// The configuration check only logs: jobs need not wait for it, but Run does not
	// return before its warnings are written.
	done := make(chan struct{})
	go func() {
		defer close(done)
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		w.maintenance.checkConfig(cctx)
	}()
	stopReporter := w.reporter.start()
	return func() {
		stopReporter()
		stopBackground()
		wg.Wait()
		<-done
	}, done
}

// polling tells whether the worker only polls: its pool goes through a transaction
// pooler and it has no session pool, so it cannot hold a LISTEN or a nap's locks.
func (w *Worker) polling() bool { return w.cfg.transactionPooled && w.cfg.sessionPool == nil }

// serve runs the fetcher until ctx is done, WithMaxTime, WithMaxJobs or
// WithStopWhenEmpty says stop, a handler is stuck, or the database turns out to have no
// pgq schema. It returns nil for a requested stop and the reason otherwise; the fetcher
// has returned by then, so shutdown has the freed signals to itself.
func (w *Worker) serve(ctx context.Context) error {
	var maxTimeUp <-chan time.Time
	if w.cfg.maxTime > 0 {
		t := time.NewTimer(w.cfg.maxTime)
		defer t.Stop()
		maxTimeUp = t.C
	}
	fctx, stopFetching := context.WithCancel(ctx)
	defer stopFetching()
	fetched := make(chan error, 1)
	go func() { fetched <- w.fetcher.run(fctx) }()
	var err error
	select {
	case err = <-fetched:
		return err // stopped by itself
	case <-ctx.Done():
	case <-maxTimeUp:
		w.log.Info("worker stopping: max time reached")
	case id := <-w.stuck:
		w.log.Error("handler did not return after cancellation; stopping the worker", "uuid", id)
		err = ErrHandlerStuck
	}
	stopFetching()
	if ferr := <-fetched; err == nil {
		err = ferr
	}
	return err
}

// shutdown waits for running handlers up to the shutdown grace, then cancels the rest;
// their reports release them without delay (S32). It returns ErrHandlerStuck when a
// handler ignores its cancellation. It runs on Run's goroutine once the fetcher is gone.
func (w *Worker) shutdown() error {
	w.log.Info("worker stopping", "running", w.active.count())
	grace := time.NewTimer(w.cfg.shutdownGrace)
	defer grace.Stop()
	for w.active.count() > 0 {
		select {
		case <-w.freed:
		case <-w.stuck: // a handler cancelled before the stop (a timeout) ignores it
			return ErrHandlerStuck
		case <-grace.C:
			w.executor.cancelAll(errShutdown)
			return w.waitCancelled()
		}
	}
	w.log.Info("worker stopped")
	return nil
}

func (w *Worker) waitCancelled() error {
	limit := time.NewTimer(w.cfg.timeoutGrace + time.Second)
	defer limit.Stop()
	for w.active.count() > 0 {
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

// active is one attempt the worker holds: its handler running, or its outcome waiting
// to be reported.
type active struct {
	// Set by executor.start on the fetcher's goroutine before the attempt is shared;
	// read-only after.
	row      *dbsqlc.JobReserveRow // in the slice its reserve returned
	token    uuid.UUID
	ctx      jobContext
	cancel   context.CancelCauseFunc // safe from any goroutine; use executor.cancel, which also starts the watchdog
	deadline *deadline
	started  time.Time
	lease    time.Duration // the queue's retry_after, as granted at reservation
	// overlapFreeAt: when each overlap key has an expire_after, the latest its leases
	// can end by them (the reservation's answer + the largest); zero otherwise (S27, S34).
	overlapFreeAt time.Time
	// holdsPlace: the job holds a concurrency_limited place (S99), which frees when its
	// outcome commits: its handler slot stays taken until then, so that the worker's
	// next reserve finds the place free rather than turning a job of the key away.
	holdsPlace bool

	// Guarded by activeSet.mu; the heartbeater moves them on.
	heartbeatAt    time.Time // when the lease is next due for a heartbeat
	heldUntil      time.Time // the latest the lease can hold, by this process's clock: its last renewal + lease
	overlapRenewed time.Time // when its overlap leases were last renewed (the reservation at first)

	returned time.Time    // when the handler returned: set by the handler goroutine before it reports
	state    atomic.Int32 // running, then returned (handler goroutine) or abandoned (watchdog): whichever comes first decides; finished once reported
	watched  atomic.Bool  // the watchdog is started: set by whichever goroutine cancels first
	// ranInGroup: a grouped SQL job whose statement has run; its outcome waits for its
	// group's commit, whose calls bound that wait themselves (S109), so the watchdog
	// leaves it.
	ranInGroup atomic.Bool
}

// overlapRenewing tells whether a's overlap leases still need renewing: a lease whose
// keys each have an expire_after ends by overlapFreeAt however often it is renewed
// (S27), so once its TTL from the last renewal reaches that far, a renewal can no
// longer move its end, and one that fails cannot let another handler in early (S34).
// Guarded by activeSet.mu.
func (a *active) overlapRenewing() bool {
	return len(a.row.OverlapKeys) > 0 && (a.overlapFreeAt.IsZero() || a.overlapRenewed.Add(overlapTTL).Before(a.overlapFreeAt))
}

// States of an active attempt's handler.
const (
	running int32 = iota
	returned
	abandoned
	finished
)

// activeSet is the attempts the worker holds, by lease token: from their start until
// their outcome is reported, or until their handler is abandoned. The executor adds to
// it (on the fetcher's goroutine); the reporter and the watchdogs remove from it; the
// fetcher and shutdown count it; the heartbeater, session recovery and shutdown walk it.
type activeSet struct {
	mu sync.Mutex
	m  map[uuid.UUID]*active // guarded by mu
}

func (s *activeSet) add(a *active) {
	s.mu.Lock()
	s.m[a.token] = a
	s.mu.Unlock()
}

// forget drops an attempt from the set, so it is no longer heartbeated.
func (s *activeSet) forget(a *active) {
	s.mu.Lock()
	delete(s.m, a.token)
	s.mu.Unlock()
}

func (s *activeSet) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}

// holds tells whether a's lease may still hold, by this process's clock: its reports are
// worth retrying until then (S36).
func (s *activeSet) holds(a *active, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return now.Before(a.heldUntil)
}

// each calls fn for every attempt held, with the set's lock held: fn must not block.
func (s *activeSet) each(fn func(a *active)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, a := range s.m {
		fn(a)
	}
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
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

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
