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
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgq-dev/pgq/internal/dbsqlc"
	"github.com/pgq-dev/pgq/pgq"
)

// ErrHandlerStuck is returned by Run when a handler did not return within the timeout
// grace after its context was cancelled. Its job is neither completed nor released: it
// comes back through its lease once this process has exited, so a program embedding
// the worker must exit when Run returns it (S13).
var ErrHandlerStuck = errors.New("pgq/worker: a handler did not return after cancellation; exit the process")

var (
	errShutdown = errors.New("worker stopping")
	errTimeout  = errors.New("job timeout")
)

// Worker reserves and runs jobs. Create it with New, register handlers with Handle, then
// call Run once.
type Worker struct {
	pool     *pgxpool.Pool
	q        *dbsqlc.Queries
	cfg      config
	log      *slog.Logger
	handlers map[string]handler

	mu      sync.Mutex
	running map[uuid.UUID]*active

	freed       chan struct{} // a handler slot came free
	wake        chan struct{} // a notification for one of our queues
	stuck       chan uuid.UUID
	completions chan *active
}

// active is one job whose handler the worker is running.
type active struct {
	row         dbsqlc.PgqJob
	token       uuid.UUID
	cancel      context.CancelCauseFunc
	started     time.Time
	heartbeatAt time.Time
}

// New returns a Worker that uses pool for its connections. The pool needs room for one
// session connection (reserve), one listener and one per concurrent SQL handler; give it
// MaxConns >= concurrency + 3. Workers need a direct session connection, not a
// transaction-mode pooler.
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
	return &Worker{
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
	}, nil
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
	defer func() { session.Release() }()
	sq := dbsqlc.New(session)

	bg, stopBackground := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	wg.Go(func() { w.listen(bg) })
	wg.Go(func() { w.heartbeat(bg) })
	completerDone := make(chan struct{})
	go func() { w.completer(); close(completerDone) }()
	defer func() {
		close(w.completions)
		<-completerDone
		stopBackground()
		wg.Wait()
	}()

	var deadline <-chan time.Time
	if w.cfg.maxTime > 0 {
		t := time.NewTimer(w.cfg.maxTime)
		defer t.Stop()
		deadline = t.C
	}
	w.log.Info("worker started", "queues", w.cfg.queues, "concurrency", w.cfg.concurrency)

	reserved := 0
	fetch := true
	poll := time.NewTimer(w.cfg.sleep)
	defer poll.Stop()
	for {
		free := w.cfg.concurrency - w.runningCount()
		if w.cfg.maxJobs > 0 {
			free = min(free, w.cfg.maxJobs-reserved)
		}
		if fetch && free > 0 {
			rows, err := sq.JobReserve(ctx, dbsqlc.JobReserveParams{
				Worker: w.cfg.name, Queues: w.cfg.queues, Max: int32(free), DefaultTries: int32(w.cfg.tries),
			})
			switch {
			case ctx.Err() != nil:
				return w.shutdown()
			case err != nil:
				w.log.Error("reserve failed; retrying", "err", err)
				if session, err = w.reacquire(ctx, session); err != nil {
					return w.shutdown()
				}
				sq = dbsqlc.New(session)
				rows = nil
			}
			for i := range rows {
				w.start(ctx, &rows[i])
			}
			reserved += len(rows)
			fetch = len(rows) == free
			if !fetch {
				poll.Reset(w.cfg.sleep)
			}
		}
		idle := w.runningCount() == 0
		switch {
		case w.cfg.maxJobs > 0 && reserved >= w.cfg.maxJobs && idle:
			w.log.Info("worker stopping: max jobs reached", "jobs", reserved)
			return w.shutdown()
		case w.cfg.stopWhenEmpty && !fetch && idle:
			w.log.Info("worker stopping: queues empty")
			return w.shutdown()
		}
		select {
		case <-ctx.Done():
			return w.shutdown()
		case <-deadline:
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
		}
	}
}

// reacquire swaps a broken session connection for a new one after a short pause.
func (w *Worker) reacquire(ctx context.Context, old *pgxpool.Conn) (*pgxpool.Conn, error) {
	if old.Conn().IsClosed() || old.Conn().PgConn().IsBusy() {
		old.Release()
		for {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(time.Second):
			}
			c, err := w.pool.Acquire(ctx)
			if err == nil {
				return c, nil
			}
			w.log.Error("session connection failed; retrying", "err", err)
		}
	}
	select {
	case <-ctx.Done():
		return old, ctx.Err()
	case <-time.After(time.Second):
		return old, nil
	}
}

func (w *Worker) runningCount() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.running)
}

// start runs one reserved job's handler in its own goroutine.
func (w *Worker) start(ctx context.Context, row *dbsqlc.PgqJob) {
	jobCtx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	a := &active{row: *row, token: *row.LeaseToken, cancel: cancel, started: time.Now()}
	a.heartbeatAt = a.started.Add(leaseOf(row) / 3)
	w.mu.Lock()
	w.running[row.Uuid] = a
	w.mu.Unlock()
	go w.runJob(jobCtx, a)
}

func leaseOf(row *dbsqlc.PgqJob) time.Duration {
	if row.ReservedAt == nil || row.ReservedUntil == nil {
		return 90 * time.Second
	}
	return row.ReservedUntil.Sub(*row.ReservedAt)
}

func (w *Worker) timeoutOf(row *dbsqlc.PgqJob) time.Duration {
	if row.Timeout != nil {
		return time.Duration(*row.Timeout) * time.Second
	}
	return w.cfg.timeout
}

// runJob runs the handler, waits for it within its timeout plus the grace, and reports
// the outcome to PostgreSQL.
func (w *Worker) runJob(ctx context.Context, a *active) {
	timeout := w.timeoutOf(&a.row)
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, timeout, errTimeout)
		defer cancel()
	}
	result := make(chan error, 1)
	go func() { result <- w.invoke(ctx, &a.row, a.token) }()

	var err error
	select {
	case err = <-result:
	case <-ctx.Done():
		grace := time.NewTimer(w.cfg.timeoutGrace)
		select {
		case err = <-result:
			grace.Stop()
		case <-grace.C:
			// The handler ignores its context. Its job must not be retried while it may
			// still run: leave it reserved, stop heartbeating it, stop the worker.
			w.forget(a)
			select {
			case w.stuck <- a.row.Uuid:
			default:
			}
			return
		}
	}
	w.report(ctx, a, err)
}

// invoke runs the job's SQL handler (in one transaction with its completion) or its
// registered Go handler. A panic becomes the attempt's exception (S33).
func (w *Worker) invoke(ctx context.Context, row *dbsqlc.PgqJob, token uuid.UUID) (err error) {
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

func (w *Worker) runSQL(ctx context.Context, row *dbsqlc.PgqJob, token uuid.UUID) error {
	err := pgx.BeginFunc(ctx, w.pool, func(tx pgx.Tx) error {
		q := w.q.WithTx(tx)
		if t := w.timeoutOf(row); t > 0 {
			if err := q.SessionSetStatementTimeout(ctx, fmt.Sprint(t.Milliseconds())); err != nil {
				return err
			}
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
	cause := context.Cause(ctx)
	// Outcome calls must go through even when the worker is stopping.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	switch {
	case err == nil:
		w.completions <- a // batched; the slot frees when the completer is done with it
		return
	case errors.Is(err, errCompletedInTx):
		w.logOutcome(a, "succeeded", nil)
	case errors.Is(err, pgq.ErrLeaseLost):
		// The SQL handler's effects were rolled back. Record the rejected completion.
		_, _ = w.q.JobCompleteMany(rctx, dbsqlc.JobCompleteManyParams{Uuids: []uuid.UUID{a.row.Uuid}, Tokens: []uuid.UUID{a.token}})
		w.logOutcome(a, "lease_lost", err)
	case errors.Is(cause, errShutdown):
		attempts, rerr := w.q.JobRelease(rctx, dbsqlc.JobReleaseParams{
			Uuid: a.row.Uuid, Token: a.token, Delay: 0, Refund: true,
			Reason: ptr("worker stopped before the handler finished; released without delay, attempt not counted"),
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
		timedOut := errors.Is(cause, errTimeout) || isQueryCanceled(err) && !errors.Is(cause, pgq.ErrLeaseLost)
		attempts, ferr := w.q.JobFail(rctx, dbsqlc.JobFailParams{
			Uuid: a.row.Uuid, Token: a.token, Exception: err.Error(), TimedOut: timedOut,
			DefaultTries: int32(w.cfg.tries), DefaultBackoff: w.cfg.backoff,
		})
		w.logResult(a, attempts, ferr)
		if ferr == nil && len(attempts) == 1 && attempts[0].Final {
			w.runFailedHook(rctx, a, attempts[0])
		}
	}
	w.finish(a)
}

func isQueryCanceled(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "57014"
}

func (w *Worker) runFailedHook(ctx context.Context, a *active, attempt dbsqlc.PgqAttempt) {
	h, ok := w.handlers[a.row.Job]
	if !ok || h.failed == nil {
		return
	}
	defer func() {
		if r := recover(); r != nil {
			w.log.Error("failed hook panicked", "job", a.row.Job, "uuid", a.row.Uuid, "panic", r)
		}
	}()
	h.failed(ctx, &a.row, errors.New(deref(attempt.Exception)))
}

// completer completes succeeded jobs in batches: one pgq.complete per batch.
func (w *Worker) completer() {
	for first := range w.completions {
		batch := []*active{first}
	drain:
		for len(batch) < 1000 {
			select {
			case a, ok := <-w.completions:
				if !ok {
					break drain
				}
				batch = append(batch, a)
			default:
				break drain
			}
		}
		uuids := make([]uuid.UUID, len(batch))
		tokens := make([]uuid.UUID, len(batch))
		for i, a := range batch {
			uuids[i], tokens[i] = a.row.Uuid, a.token
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		done, err := w.q.JobCompleteMany(ctx, dbsqlc.JobCompleteManyParams{Uuids: uuids, Tokens: tokens})
		cancel()
		completed := make(map[uuid.UUID]bool, len(done))
		for _, id := range done {
			if id != nil {
				completed[*id] = true
			}
		}
		for _, a := range batch {
			switch {
			case err != nil:
				w.logOutcome(a, "complete_failed", err)
			case completed[a.row.Uuid]:
				w.logOutcome(a, "succeeded", nil)
			default:
				w.logOutcome(a, "lease_lost", pgq.ErrLeaseLost)
			}
			w.finish(a)
		}
	}
}

func (w *Worker) logResult(a *active, attempts []dbsqlc.PgqAttempt, err error) {
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
	attrs = append([]any{"job", a.row.Job, "uuid", a.row.Uuid, "attempt", a.row.Attempts, "queue", a.row.Queue,
		"duration", time.Since(a.started).Round(time.Microsecond), "outcome", outcome}, attrs...)
	level := slog.LevelInfo
	if err != nil {
		attrs = append(attrs, "exception", err.Error())
		if outcome != "released" {
			level = slog.LevelWarn
		}
	}
	w.log.Log(context.Background(), level, msg, attrs...)
}

// forget drops a job from the running set, so it is no longer heartbeated.
func (w *Worker) forget(a *active) {
	w.mu.Lock()
	delete(w.running, a.row.Uuid)
	w.mu.Unlock()
}

func (w *Worker) finish(a *active) {
	a.cancel(nil)
	w.forget(a)
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
		a.cancel(cause)
	}
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
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
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
			continue
		}
		uuids := make([]uuid.UUID, len(due))
		tokens := make([]uuid.UUID, len(due))
		for i, a := range due {
			uuids[i], tokens[i] = a.row.Uuid, a.token
		}
		held, err := w.q.JobHeartbeatMany(ctx, dbsqlc.JobHeartbeatManyParams{Uuids: uuids, Tokens: tokens})
		if err != nil {
			w.log.Error("heartbeat failed", "err", err, "jobs", len(due))
			continue
		}
		for _, a := range due {
			i := slices.IndexFunc(held, func(r dbsqlc.PgqJob) bool { return r.Uuid == a.row.Uuid })
			if i < 0 {
				w.log.Warn("lease lost; cancelling handler", "job", a.row.Job, "uuid", a.row.Uuid)
				a.cancel(pgq.ErrLeaseLost)
				continue
			}
			w.mu.Lock()
			a.heartbeatAt = now.Add(leaseOf(&held[i]) / 3)
			w.mu.Unlock()
		}
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
