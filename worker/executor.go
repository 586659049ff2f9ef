package worker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgq-dev/pgq/internal/dbsqlc"
	"github.com/pgq-dev/pgq/pgq"
)

// executor runs handlers. Each started attempt goes to a handler goroutine waiting for
// its next job, or to a new one, and runs under its deadline; its outcome goes to the
// reporter. When the worker cancels a handler (timeout, lost lease or overlap lock,
// shutdown) a watchdog gives it the timeout grace to return.
type executor struct {
	// Set by New (handlers by Handle, before Run); read-only once Run has started.
	conns    *conns
	cfg      *config
	handlers map[string]handler
	active   *activeSet
	reporter *reporter

	// busy: handlers running now, the slots of WithConcurrency. Added to by start on the
	// fetcher's goroutine; taken from by handler goroutines when their handler returns.
	busy atomic.Int64
	// returns and ran: handlers returned since the start and the nanoseconds they ran,
	// by which the fetcher reserves ahead (S84). Added to by handler goroutines.
	returns, ran atomic.Int64
	// sqlSlots: SQL handlers each hold a pool connection, so at most MaxConns - 3 run at
	// once. Taken and given back by handler goroutines.
	sqlSlots chan struct{}
	// groups: the SQL jobs waiting for a group and what the worker learnt of their
	// classes (S109); nil when SQL jobs are not grouped.
	groups  *sqlGroups
	handoff chan *active   // start (on the fetcher's goroutine) hands an attempt to a waiting handler goroutine
	stopped chan struct{}  // closed when Run returns: waiting handler goroutines exit
	freed   chan struct{}  // signalled by handler goroutines when their handler returns
	stuck   chan uuid.UUID // sent by the watchdogs; received by Run and shutdown
}

// start runs one reserved job's handler in a handler goroutine, a Go handler under d's
// timeout (a SQL handler's timeout runs from its own start, see runSQL). It runs on the
// fetcher's goroutine; sent is when the reserve was sent, before the lease began.
func (e *executor) start(d *deadline, row *dbsqlc.JobReserveRow, sent time.Time) {
	d.refs.Add(1)
	a := &active{row: row, token: row.LeaseToken, deadline: d, started: time.Now(),
		lease: row.ReservedUntil.Sub(row.ReservedAt), holdsPlace: holdsPlace(row.OverlapKeys)}
	a.ctx.Context, a.cancel = context.WithCancelCause(d.base)
	sqlHandler := row.Handler != nil // its timeout runs from its start (runSQL), not from here
	if !sqlHandler {
		a.ctx.at = d.at
	}
	a.heartbeatAt = sent.Add(a.lease / 3) // the lease runs from the reserve, however long the job waited (S84)
	a.heldUntil = sent.Add(a.lease)
	a.overlapRenewed = sent
	if e := row.OverlapExpireAfter; e != nil {
		a.overlapFreeAt = a.started.Add(time.Duration(*e) * time.Second) // started is after the answer came
	}
	if d.timer != nil && !sqlHandler {
		d.mu.Lock()
		d.jobs = append(d.jobs, a)
		d.mu.Unlock()
	}
	e.active.add(a)
	e.busy.Add(1)
	select {
	case e.handoff <- a:
	default:
		go e.handle(a)
	}
}

// handle runs a's handler, then each job handed to it while it waits, until Run
// returns. The goroutines are reused because a fresh one grows its stack again for each
// job (decoding the arguments alone outgrows the first few KiB): copying stacks was a
// tenth of the worker's CPU in the steady-state benchmark. At most about concurrency of
// them wait.
func (e *executor) handle(a *active) {
	for {
		e.runJob(&a.ctx, a)
		select {
		case a = <-e.handoff:
		case <-e.stopped:
			return
		}
	}
}

// runJob runs the handler (its context carries the timeout) and reports the outcome.
func (e *executor) runJob(ctx context.Context, a *active) {
	var err error
	if tel := e.cfg.tel; tel != nil {
		hctx, span := tel.process(ctx, a)
		err = e.invoke(hctx, a)
		a.returned = time.Now()
		tel.processed(ctx, span, a, err)
	} else {
		err = e.invoke(ctx, a)
		a.returned = time.Now()
	}
	if !a.state.CompareAndSwap(running, returned) {
		return // abandoned: the worker is stopping with ErrHandlerStuck
	}
	if !a.holdsPlace {
		e.busy.Add(-1) // the slot is free; the report is the reporter's business
	}
	e.ran.Add(int64(a.returned.Sub(a.started)))
	e.returns.Add(1)
	signal(e.freed)
	e.reporter.report(ctx, a, err)
}

// holdsPlace tells whether overlap keys hold a concurrency_limited place: pgq.reserve
// names a place '#' key '#' n (S99). A without_overlapping key the user wrote with a
// leading '#' reads as one too, which only keeps its slot until its outcome commits.
func holdsPlace(keys []string) bool {
	for _, k := range keys {
		if strings.HasPrefix(k, "#") {
			return true
		}
	}
	return false
}

func (e *executor) timeoutOf(row *dbsqlc.JobReserveRow) time.Duration {
	if row.Timeout != nil {
		return time.Duration(*row.Timeout) * time.Second
	}
	return e.cfg.timeout
}

// invoke runs the job's SQL handler (in one transaction with its completion) or its
// registered Go handler. A panic becomes the attempt's exception (S33).
func (e *executor) invoke(ctx context.Context, a *active) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &PanicError{Value: r}
		}
	}()
	row := a.row
	if row.Handler != nil {
		return e.runSQL(ctx, a)
	}
	h, ok := e.handlers[row.Job]
	if !ok {
		return fmt.Errorf("no handler for job %q: register a Go handler or give its class a SQL handler (pgq.define_job(handler => ...))", row.Job)
	}
	return h.run(ctx, row)
}

// errCompletedInTx marks a SQL job whose handler and completion committed together.
var errCompletedInTx = errors.New("completed in handler transaction")

// sqlHandlerError is the exception a SQL handler raised: the attempt's own, with its
// DETAIL and HINT (S88).
type sqlHandlerError struct{ message, detail, hint string }

func (e *sqlHandlerError) Error() string { return e.message }

// interruptedError ends an attempt that infrastructure cut short, not the handler (S35):
// its job is given back. started is false when the handler surely never ran (no
// connection could be had for it): such a give-back does not count toward the limit.
type interruptedError struct {
	err     error
	started bool
}

func (e *interruptedError) Error() string { return "interrupted: " + e.err.Error() }
func (e *interruptedError) Unwrap() error { return e.err }

// setupError ends an attempt whose SQL handler's transaction pgq could not set up: the
// server refused the limits the worker sets from the job (a statement_timeout it
// cannot hold, say) for a reason that trying again cannot change (S92). Neither the
// handler's exception nor infrastructure's: its job fails for good at once
// (pgq.fail_setup), so that it can neither use up its tries nor loop.
type setupError struct{ err error }

func (e *setupError) Error() string { return e.err.Error() }
func (e *setupError) Unwrap() error { return e.err }

// runSQL runs a SQL handler and completes its job in the same transaction, under a
// statement_timeout of the job's timeout and an idle limit that ends the transaction
// of a frozen worker (S37). It tells whose fault an attempt's end was (S35):
// pgq.run_sql_job marks the handler's own exception PQ100; a statement timeout is the
// job's timeout; a setup of those limits that the server refused for good is the
// job's own and comes back as a *setupError (S92); anything else that ended the
// transaction (a lost connection, a restart, a lock_timeout in pgq.complete, an
// overlap key still locked) comes back as an *interruptedError, and the attempt is
// given back.
//
// The job's timeout is the handler's own (S13): it runs from when the handler has its
// slot and its connection. The wait for them is infrastructure's (S35: a restart refuses
// connections for seconds), bounded by the timeout as well, and ends as notStarted. The
// server's statement_timeout ends the handler at its time; the worker's own timer,
// sqlTimeoutSlack later, ends a transaction the server cannot answer for (a network
// that went silent).
//
// A short job of a class the worker has seen run short runs in a group (runGrouped,
// S109); a job its group sends back, and any other, runs alone.
func (e *executor) runSQL(ctx context.Context, a *active) error {
	row, timeout := a.row, e.timeoutOf(a.row)
	wait := ctx
	if timeout > 0 {
		var cancel context.CancelFunc
		wait, cancel = context.WithTimeoutCause(ctx, timeout, errTimeout)
		defer cancel()
	}
	if e.groups != nil && e.groups.groupable(row.Job) {
		if err := e.runGrouped(ctx, wait, a); !errors.Is(err, errRunAlone) {
			return err
		}
	}
	select {
	case e.sqlSlots <- struct{}{}:
		defer func() { <-e.sqlSlots }()
	case <-wait.Done():
		return notStarted(wait, context.Cause(wait))
	}
	conn, err := e.acquireForHandler(wait)
	if err != nil {
		return notStarted(wait, err)
	}
	defer conn.Release()
	if timeout > 0 {
		t := time.AfterFunc(timeout+sqlTimeoutSlack, func() { e.cancel(a, errTimeout) })
		defer t.Stop()
	}
	var setupErr error
	err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		q := dbsqlc.New(tx)
		setupErr = q.SessionSetHandlerLimits(ctx, dbsqlc.SessionSetHandlerLimitsParams{
			Milliseconds: milliseconds(timeout), IdleMilliseconds: milliseconds(idleInTransaction),
		})
		if setupErr != nil {
			return setupErr
		}
		began := time.Now()
		err := q.JobRunSQL(ctx, dbsqlc.JobRunSQLParams{Uuid: row.Uuid, Token: a.token})
		if e.groups != nil && err == nil {
			e.groups.ran(row.Job, time.Since(began))
		}
		return err
	})
	switch {
	case setupErr != nil:
		return setupOutcome(ctx, setupErr)
	case err != nil:
		return sqlOutcome(ctx, err)
	}
	return errCompletedInTx
}

// setupOutcome sorts the error of the statement that sets a SQL handler's limits
// (S92). When the server refused the statement's own values (one out of range, a
// setting the role may not make: any error that transient does not call passing), it
// would refuse every attempt of the job alike: that is a *setupError, and the job fails
// at once. A lost connection or a restart meanwhile is infrastructure's and is given
// back as any interruption is (S35), counted toward its limit: the handler never ran,
// but a setup that keeps failing must not loop. A cancel by the worker keeps its own
// ending.
func setupOutcome(ctx context.Context, err error) error {
	var pgErr *pgconn.PgError
	switch {
	case context.Cause(ctx) != nil && ctx.Err() != nil:
		return err
	case errors.As(err, &pgErr) && !transient(err):
		return &setupError{err: fmt.Errorf("the server refused the limits of its transaction: %w", err)}
	default:
		return &interruptedError{err: fmt.Errorf("setting up the SQL handler's transaction: %w", err), started: true}
	}
}

// sqlTimeoutSlack is how long past a SQL handler's timeout the worker cancels its
// transaction itself, when the server's statement_timeout has not ended it: two round
// trips (BEGIN, the limits) come before the statement, and a cancel by the worker costs
// the connection, which the server's own timeout keeps.
const sqlTimeoutSlack = time.Second

// notStarted ends the attempt of a SQL handler that never ran: no slot or no connection
// could be had for it. That is infrastructure's doing, so its job is given back
// uncounted (S35), even when the job's timeout ended the wait (the server refused
// connections for longer than the timeout); a stop, a lost lease or a cancel keep their
// own endings, which the reporter reads from ctx.
func notStarted(ctx context.Context, err error) error {
	if ctx.Err() != nil && !errors.Is(context.Cause(ctx), errTimeout) {
		return err
	}
	return &interruptedError{err: fmt.Errorf("the SQL handler never started: %w", err), started: false}
}

// handlerConnWait bounds how long a SQL handler waits for a connection when PostgreSQL
// refuses new ones (too many clients, starting up): then its job is given back, not
// counted, since its handler never ran.
const handlerConnWait = 10 * time.Second

// acquireForHandler takes a connection for a SQL handler, trying again while PostgreSQL
// refuses for the moment, for up to handlerConnWait or until ctx is done.
func (e *executor) acquireForHandler(ctx context.Context) (*pgxpool.Conn, error) {
	wctx, cancel := context.WithTimeout(ctx, handlerConnWait)
	defer cancel()
	wait := 50 * time.Millisecond
	for {
		conn, err := e.conns.acquire(wctx)
		if err == nil || !transient(err) || wctx.Err() != nil {
			return conn, err
		}
		select {
		case <-wctx.Done():
			return nil, err
		case <-time.After(wait):
		}
		wait = min(2*wait, time.Second)
	}
}

// sqlOutcome sorts the error that ended a SQL handler's transaction (see runSQL).
func sqlOutcome(ctx context.Context, err error) error {
	var pgErr *pgconn.PgError
	switch {
	case context.Cause(ctx) != nil && ctx.Err() != nil:
		return err // the worker cancelled it (timeout, lost lease, stop): the reporter knows why
	case !errors.As(err, &pgErr):
		return &interruptedError{err: err, started: true} // the connection or the server went away
	case pgErr.Code == "PQ100":
		return &sqlHandlerError{message: pgErr.Message, detail: pgErr.Detail, hint: pgErr.Hint}
	case pgErr.Code == "57014" && strings.Contains(pgErr.Message, "statement timeout"),
		pgErr.Code == "42883", pgErr.Code == "PQ001":
		return pgq.MapError(err) // the job's timeout, a missing handler, a lost lease
	default:
		return &interruptedError{err: pgq.MapError(err), started: true}
	}
}

// cancel cancels a running handler's context with cause and starts its watchdog. A
// handler still running a grace period later ignores its cancellation, and its job must
// not be retried while it may still run, so it is left reserved, no longer heartbeated,
// and the worker stops. The watchdog starts here, where the worker cancels (timeout,
// lost lease or overlap lease, shutdown), rather than once per job: a context.AfterFunc
// per job was a tenth of the worker's CPU in the drain benchmark. A handler whose
// overlap lease could not be renewed gets at most overlapGrace: its key may be free for
// another worker's handler when the lease runs out (S34). Safe from any goroutine.
func (e *executor) cancel(a *active, cause error) {
	a.cancel(cause)
	if a.state.Load() != running || !a.watched.CompareAndSwap(false, true) {
		return
	}
	grace := e.cfg.timeoutGrace
	if errors.Is(cause, errOverlapLost) {
		grace = min(grace, overlapGrace)
	}
	time.AfterFunc(grace, func() {
		if !a.ranInGroup.Load() && a.state.CompareAndSwap(running, abandoned) {
			e.active.forget(a)
			select {
			case e.stuck <- a.row.Uuid:
			default:
			}
		}
	})
}

// cancelAll cancels every handler still running (shutdown, once the grace is over).
func (e *executor) cancelAll(cause error) {
	e.active.each(func(a *active) { e.cancel(a, cause) })
}

// deadline is the timeout of the jobs of one reserve that share a timeout: one timer for
// all of them rather than one per job (a timer per job was an eighth of the worker's CPU
// at 25k jobs/s). It is stopped once its last job is finished.
type deadline struct {
	// Set by newDeadline on the fetcher's goroutine; read-only after.
	base  context.Context // the jobs' values: a stop request cancels jobs itself, after the grace
	at    time.Time       // zero: no timeout
	timer *time.Timer

	refs atomic.Int32 // the fetcher's while it starts jobs, and one per job until finished
	mu   sync.Mutex
	jobs []*active // guarded by mu: added to by start, read when the timeout fires, to cancel them
}

// newDeadline starts the timeout (none when timeout is 0) with one reference, the
// caller's. When the timeout fires it cancels the jobs, which starts their watchdogs.
func (e *executor) newDeadline(parent context.Context, timeout time.Duration) *deadline {
	d := &deadline{base: context.WithoutCancel(parent)}
	d.refs.Store(1)
	if timeout > 0 {
		d.at = time.Now().Add(timeout)
		d.timer = time.AfterFunc(timeout, func() {
			d.mu.Lock()
			jobs := d.jobs
			d.mu.Unlock()
			for _, a := range jobs {
				e.cancel(a, errTimeout) // a no-op for the jobs already finished
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
// It is set by start and read-only after.
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
