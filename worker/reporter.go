package worker

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgq-dev/pgq/internal/dbsqlc"
	"github.com/pgq-dev/pgq/pgq"
)

// reporter sends each attempt's outcome to PostgreSQL, which decides what follows.
// Completions and failures go in batches, one pgq.complete or pgq.fail_many per batch,
// each sent by its own batcher goroutine; releases, give-backs and the rare lease-lost
// check go at once, from the handler's goroutine. A report that cannot reach
// PostgreSQL is retried while the job's lease may still hold (S36): the attempt stays in
// the active set meanwhile, and so heartbeated. Once its outcome is reported (or given
// up) an attempt is finished and leaves the active set; its overlap leases went with
// the report, in the same transaction.
type reporter struct {
	// Set by New (handlers by Handle, before Run); read-only once Run has started.
	conns    *conns
	cfg      *config
	log      *slog.Logger
	metrics  *metrics
	handlers map[string]handler // for the failed hooks
	active   *activeSet
	busy     *atomic.Int64 // the executor's slots: an attempt that holds a concurrency place frees its own when finished
	freed    chan struct{} // signalled when attempts are finished

	completions chan *active   // sent by handler goroutines; received by the completion batcher
	failures    chan failure   // sent by handler goroutines; received by the failure batcher
	hooks       sync.WaitGroup // failed hooks running, each on its own goroutine
}

// failure is an attempt whose handler raised (or timed out), waiting for pgq.fail_many.
type failure struct {
	a            *active
	exception    string
	detail, hint string // the exception's DETAIL and HINT, when it carried them (S88)
	timedOut     bool
}

// start runs the two batchers until the returned func is called; that func returns once
// they have reported everything sent to them and the failed hooks have returned.
func (r *reporter) start() (stop func()) {
	stopping := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { batch(r.completions, stopping, r.completeBatch) })
	wg.Go(func() { batch(r.failures, stopping, r.failBatch) })
	return func() {
		close(stopping)
		wg.Wait()
		r.hooks.Wait()
	}
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

// How a report that failed is tried again (S36): after reportBackoff, doubling up to
// reportBackoffMax, for as long as the attempt's lease may hold.
const (
	reportBackoff    = 100 * time.Millisecond
	reportBackoffMax = 5 * time.Second
	// reportTimeout bounds one report call.
	reportTimeout = 30 * time.Second
)

// deliver sends items with send until each is reported or given up, and returns those
// given up with the last error (S36). send reports its items in one transaction and
// returns nil once it has dealt with them. A failure that can pass (the connection or
// the server went away, a timeout, a lock or serialization conflict) is retried with
// backoff for the items whose lease may still hold (holds); the others are given up,
// since their jobs come back through their leases anyway. A failure of the report's own
// data is isolated: the batch is split in two and each half delivered, so one job's
// report cannot hold up the others, and a lone item that still fails is given up.
// retrying is told of each failure that is retried.
func deliver[T any](items []T, send func([]T) error, holds func(T) bool, retrying func(error)) (gaveUp []T, err error) {
	wait := reportBackoff
	for len(items) > 0 {
		if err = send(items); err == nil {
			return gaveUp, nil
		}
		if !transient(err) {
			if len(items) == 1 {
				return append(gaveUp, items...), err
			}
			retrying(err)
			half := len(items) / 2
			left, lerr := deliver(items[:half], send, holds, retrying)
			right, rerr := deliver(items[half:], send, holds, retrying)
			return append(append(gaveUp, left...), right...), errors.Join(lerr, rerr)
		}
		kept := items[:0:0]
		for _, it := range items {
			if holds(it) {
				kept = append(kept, it)
			} else {
				gaveUp = append(gaveUp, it)
			}
		}
		items = kept
		if len(items) > 0 {
			retrying(err)
			time.Sleep(wait)
			wait = min(2*wait, reportBackoffMax)
		}
	}
	return gaveUp, err
}

// transient tells whether a failed call may succeed when tried again: it never reached
// PostgreSQL or lost its connection, or PostgreSQL refused it for the moment (connection
// exceptions, serialization failures and deadlocks, resources, shutdown and cancels,
// lock timeouts, system errors).
func transient(err error) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return true
	}
	switch pgErr.Code[:2] {
	case "08", "40", "53", "57", "58":
		return true
	}
	return pgErr.Code == "55P03"
}

// retrying writes the line of a report tried again.
func (r *reporter) retrying(err error) {
	r.log.Warn("report failed; retrying", "err", err)
}

// holds tells whether an attempt's lease may still hold, by this process's clock.
func (r *reporter) holds(a *active) bool { return r.active.holds(a, time.Now()) }

func (r *reporter) holdsFailure(f failure) bool { return r.holds(f.a) }

// report sends the outcome of one attempt, on the handler's goroutine: a success or an
// exception to its batcher, anything else at once.
func (r *reporter) report(ctx context.Context, a *active, err error) {
	if err == nil {
		r.completions <- a // batched; the job stays reserved (and heartbeated) until reported
		return
	}
	cause := context.Cause(ctx)
	// Outcome calls must go through even when the worker is stopping.
	rctx := context.WithoutCancel(ctx)
	var interrupted *interruptedError
	var setup *setupError
	var groupLost *groupLostError
	switch {
	case errors.Is(err, errCompletedInTx):
		r.logOutcome(a, "succeeded", nil)
	case errors.As(err, &groupLost):
		r.giveBackGroup(rctx, a, groupLost.Error())
	case errors.Is(err, pgq.ErrLeaseLost) && !r.stillHeld(rctx, a):
		// The SQL handler's effects were rolled back with its rejected completion. A
		// token that lost its job never gets it back, so this complete is rejected too,
		// and recorded on the attempt (S15). (A handler that raised PQ001 itself while
		// its lease holds fails below like any exception.)
		_ = r.conns.with(rctx, func(q *dbsqlc.Queries) error {
			_, err := q.JobCompleteMany(rctx, dbsqlc.JobCompleteManyParams{Uuids: []uuid.UUID{a.row.Uuid}, Tokens: []uuid.UUID{a.token}})
			return err
		})
		r.logOutcome(a, "lease_lost", err)
	case errors.Is(cause, errShutdown):
		reason := "worker stopped before the handler finished; released without delay, attempt not counted"
		r.release(rctx, a, 0, &reason)
	case errors.Is(cause, errOverlapLost):
		r.giveBack(rctx, a, errOverlapLost.Error(), true)
	case errors.Is(cause, errCancelled):
		r.cancelled(rctx, a)
	case errors.As(err, &interrupted):
		r.giveBack(rctx, a, interrupted.Error(), interrupted.started)
	case errors.As(err, &setup):
		r.failSetup(rctx, a, setup.Error())
	default:
		if rel, ok := asRelease(err); ok {
			r.release(rctx, a, rel.Delay, nil)
			break
		}
		// Every other error is the attempt's exception. If the lease was lost meanwhile,
		// fail is rejected and recorded (S15).
		timedOut := errors.Is(cause, errTimeout) || isQueryCanceled(err) && !errors.Is(cause, pgq.ErrLeaseLost)
		detail, hint := detailAndHint(err)
		r.failures <- failure{a: a, exception: err.Error(), detail: detail, hint: hint, timedOut: timedOut} // batched; the slot frees then
		return
	}
	r.finish(a)
}

// release puts the attempt's job back to wait delay (pgq.release). With a refund reason
// the worker, not the job, cut the attempt short: the attempt is not counted, and the
// reason is recorded.
func (r *reporter) release(ctx context.Context, a *active, delay time.Duration, refundReason *string) {
	p := dbsqlc.JobReleaseParams{Uuid: a.row.Uuid, Token: a.token, Delay: int32(delay / time.Second),
		Refund: refundReason != nil, Reason: refundReason}
	r.sendOne(ctx, a, func(q *dbsqlc.Queries, cctx context.Context) ([]*dbsqlc.PgqAttempt, error) {
		return q.JobRelease(cctx, p)
	})
}

// giveBack gives the attempt back, not counted, because infrastructure interrupted it
// (pgq.give_back, S35); started tells whether its handler may have run.
func (r *reporter) giveBack(ctx context.Context, a *active, reason string, started bool) {
	p := dbsqlc.JobGiveBackManyParams{Uuids: []uuid.UUID{a.row.Uuid}, Tokens: []uuid.UUID{a.token}, Reason: reason, Started: started}
	r.sendOne(ctx, a, func(q *dbsqlc.Queries, cctx context.Context) ([]*dbsqlc.PgqAttempt, error) {
		return q.JobGiveBackMany(cctx, p)
	})
}

// giveBackGroup gives the attempt back, not counted, because the group its SQL job ran
// in was lost, and marks the job to run alone next (pgq.give_back_group, S111).
func (r *reporter) giveBackGroup(ctx context.Context, a *active, reason string) {
	p := dbsqlc.JobGiveBackGroupParams{Uuids: []uuid.UUID{a.row.Uuid}, Tokens: []uuid.UUID{a.token}, Reason: reason}
	r.sendOne(ctx, a, func(q *dbsqlc.Queries, cctx context.Context) ([]*dbsqlc.PgqAttempt, error) {
		return q.JobGiveBackGroup(cctx, p)
	})
}

// failSetup fails the attempt's job for good at once: pgq's own setup of it was
// refused for a reason of the job's (pgq.fail_setup, S92). The failed hook runs, as
// for any job that fails for good (S17).
func (r *reporter) failSetup(ctx context.Context, a *active, reason string) {
	p := dbsqlc.JobFailSetupParams{Uuid: a.row.Uuid, Token: a.token, Reason: reason}
	attempts := r.sendOne(ctx, a, func(q *dbsqlc.Queries, cctx context.Context) ([]*dbsqlc.PgqAttempt, error) {
		return q.JobFailSetup(cctx, p)
	})
	if len(attempts) == 1 && attempts[0].Final {
		r.runFailedHook(a, attempts[0])
	}
}

// cancelled ends the attempt's job as cancelled, on an operator's request (pgq.cancelled).
func (r *reporter) cancelled(ctx context.Context, a *active) {
	p := dbsqlc.JobCancelledManyParams{Uuids: []uuid.UUID{a.row.Uuid}, Tokens: []uuid.UUID{a.token}}
	r.sendOne(ctx, a, func(q *dbsqlc.Queries, cctx context.Context) ([]*dbsqlc.PgqAttempt, error) {
		return q.JobCancelledMany(cctx, p)
	})
}

// sendOne delivers one attempt's release, give-back or failure, writes its line and
// returns the attempt recorded (none when the lease was lost or the report given up).
func (r *reporter) sendOne(ctx context.Context, a *active, call func(*dbsqlc.Queries, context.Context) ([]*dbsqlc.PgqAttempt, error)) []*dbsqlc.PgqAttempt {
	var recorded []*dbsqlc.PgqAttempt
	gaveUp, err := deliver([]*active{a}, func([]*active) error {
		cctx, cancel := context.WithTimeout(ctx, reportTimeout)
		defer cancel()
		var attempts []*dbsqlc.PgqAttempt
		err := r.conns.with(cctx, func(q *dbsqlc.Queries) error {
			var err error
			attempts, err = call(q, cctx)
			return err
		})
		if err == nil {
			recorded = attempts
			r.logResult(a, attempts, nil)
		}
		return err
	}, r.holds, r.retrying)
	if len(gaveUp) > 0 {
		r.logResult(a, nil, err)
	}
	return recorded
}

// stillHeld tells whether the attempt's token still holds its job (a heartbeat that also
// answers the question).
func (r *reporter) stillHeld(ctx context.Context, a *active) bool {
	var held []uuid.UUID
	err := r.conns.with(ctx, func(q *dbsqlc.Queries) error {
		var err error
		held, err = q.JobHeartbeatMany(ctx, dbsqlc.JobHeartbeatManyParams{Uuids: []uuid.UUID{a.row.Uuid}, Tokens: []uuid.UUID{a.token}})
		return err
	})
	return err != nil || len(held) == 1 // on error, assume held: fail is the safe call
}

func isQueryCanceled(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "57014"
}

// completeBatch delivers a batch of completions; those given up are finished as
// complete_failed: their jobs stay reserved until their leases end, then run again.
func (r *reporter) completeBatch(batch []*active) {
	gaveUp, err := deliver(batch, r.complete, r.holds, r.retrying)
	for _, a := range gaveUp {
		r.logOutcome(a, "complete_failed", err)
	}
	r.finish(gaveUp...)
}

// complete completes succeeded attempts in one pgq.complete and finishes them: succeeded,
// or lease_lost for those whose token no longer held the job (S15).
func (r *reporter) complete(batch []*active) error {
	uuids := make([]uuid.UUID, len(batch))
	tokens := make([]uuid.UUID, len(batch))
	for i, a := range batch {
		uuids[i], tokens[i] = a.row.Uuid, a.token
	}
	ctx, cancel := context.WithTimeout(context.Background(), reportTimeout)
	defer cancel()
	var done []uuid.UUID
	called := r.cfg.tel.call(ctx, "pgq.complete", len(batch))
	err := r.conns.with(ctx, func(q *dbsqlc.Queries) error {
		var err error
		done, err = q.JobCompleteMany(ctx, dbsqlc.JobCompleteManyParams{Uuids: uuids, Tokens: tokens})
		return err
	})
	called(len(done), err)
	if err != nil {
		return err
	}
	var completed map[uuid.UUID]bool // nil when all were completed, the usual case
	if len(done) < len(batch) {
		completed = make(map[uuid.UUID]bool, len(done))
		for _, id := range done {
			completed[id] = true
		}
	}
	for _, a := range batch {
		if completed == nil || completed[a.row.Uuid] {
			r.logOutcome(a, "succeeded", nil)
		} else {
			r.logOutcome(a, "lease_lost", pgq.ErrLeaseLost)
		}
	}
	r.finish(batch...)
	return nil
}

// failBatch delivers a batch of failures; those given up are finished as report_failed:
// their jobs stay reserved until their leases end, then run again.
func (r *reporter) failBatch(batch []failure) {
	gaveUp, err := deliver(batch, r.fail, r.holdsFailure, r.retrying)
	finished := make([]*active, len(gaveUp))
	for i, f := range gaveUp {
		finished[i] = f.a
		r.logResult(f.a, nil, err)
	}
	r.finish(finished...)
}

// fail reports failed attempts in one pgq.fail_many, which decides for each whether it
// is retried or failed for good; the failed hook runs for those failed for good.
func (r *reporter) fail(batch []failure) error {
	p := dbsqlc.JobFailManyParams{
		Uuids: make([]uuid.UUID, len(batch)), Tokens: make([]uuid.UUID, len(batch)),
		Exceptions: make([]string, len(batch)), TimedOut: make([]bool, len(batch)),
		DefaultTries: int32(r.cfg.tries), DefaultBackoff: r.cfg.backoff,
		Details: make([]string, len(batch)), Hints: make([]string, len(batch)),
	}
	for i, f := range batch {
		p.Uuids[i], p.Tokens[i], p.Exceptions[i], p.TimedOut[i] = f.a.row.Uuid, f.a.token, f.exception, f.timedOut
		p.Details[i], p.Hints[i] = f.detail, f.hint
	}
	ctx, cancel := context.WithTimeout(context.Background(), reportTimeout)
	defer cancel()
	var attempts []*dbsqlc.PgqAttempt
	called := r.cfg.tel.call(ctx, "pgq.fail_many", len(batch))
	err := r.conns.with(ctx, func(q *dbsqlc.Queries) error {
		var err error
		attempts, err = q.JobFailMany(ctx, p)
		return err
	})
	called(len(attempts), err)
	if err != nil {
		return err
	}
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
		if !ok {
			r.logResult(f.a, nil, nil) // rejected: the lease was lost
			continue
		}
		r.logResult(f.a, []*dbsqlc.PgqAttempt{at}, nil)
		if at.Final {
			r.runFailedHook(f.a, at)
		}
	}
	r.finish(finished...)
	return nil
}

// runFailedHook runs the job's failed hook, if it has one, on a goroutine of its own
// with a context of its own: a slow hook must not hold up the reports of other jobs.
func (r *reporter) runFailedHook(a *active, attempt *dbsqlc.PgqAttempt) {
	h, ok := r.handlers[a.row.Job]
	if !ok || h.failed == nil {
		return
	}
	r.hooks.Go(func() {
		defer func() {
			if p := recover(); p != nil {
				r.log.Error("failed hook panicked", "job", a.row.Job, "uuid", a.row.Uuid, "panic", p)
			}
		}()
		ctx, cancel := context.WithTimeout(context.Background(), reportTimeout)
		defer cancel()
		h.failed(ctx, a.row, errors.New(deref(attempt.Exception)))
	})
}

// finish ends attempts whose outcome has been reported or given up: their contexts,
// deadlines and places in the active set.
func (r *reporter) finish(batch ...*active) {
	for _, a := range batch {
		a.cancel(nil)
		a.deadline.release()
		r.active.forget(a)
		if a.state.CompareAndSwap(returned, finished) && a.holdsPlace {
			r.busy.Add(-1)
		}
	}
	if len(batch) > 0 {
		signal(r.freed)
	}
}

// logResult writes the line of an attempt reported by pgq.release or pgq.fail_many,
// from the attempt they recorded: none when the lease was lost.
func (r *reporter) logResult(a *active, attempts []*dbsqlc.PgqAttempt, err error) {
	switch {
	case err != nil:
		r.logOutcome(a, "report_failed", err)
	case len(attempts) == 0:
		r.logOutcome(a, "lease_lost", pgq.ErrLeaseLost)
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
		if at.ExceptionHint != nil {
			attrs = append(attrs, "hint", *at.ExceptionHint)
		}
		outcome := at.Outcome
		switch {
		case at.Final:
			outcome += " for good"
		case at.Delay != nil && at.Outcome != "released":
			outcome += ", will retry"
		}
		r.logOutcomeMsg(a, "job "+outcome, at.Outcome, exc, attrs...)
	}
}

func (r *reporter) logOutcome(a *active, outcome string, err error, attrs ...any) {
	r.logOutcomeMsg(a, "job "+outcome, outcome, err, attrs...)
}

// logOutcomeMsg writes the one line per job outcome.
func (r *reporter) logOutcomeMsg(a *active, msg, outcome string, err error, attrs ...any) {
	took := time.Since(a.started)
	if !a.returned.IsZero() {
		took = a.returned.Sub(a.started) // the handler's own time, not the report's wait
	}
	r.metrics.outcome(a.row.Job, a.row.Queue, outcome, took)
	level := slog.LevelInfo
	if err != nil && outcome != "released" {
		level = slog.LevelWarn
	}
	if !r.log.Enabled(context.Background(), level) {
		return // at thousands of jobs a second, building the line is not free
	}
	attrs = append([]any{"job", a.row.Job, "uuid", a.row.Uuid, "attempt", a.row.Attempts, "queue", a.row.Queue,
		"duration", took.Round(time.Microsecond), "outcome", outcome}, attrs...)
	if err != nil {
		attrs = append(attrs, "exception", err.Error())
	}
	r.log.Log(context.Background(), level, msg, attrs...)
}

// logPickup writes the outcome line of a job that reserve did not hand over: turned away
// by middleware, exhausted (S12) or debounced (S24).
func (r *reporter) logPickup(row *dbsqlc.JobReserveRow) {
	pickup := string(*row.Pickup)
	level := slog.LevelInfo
	if *row.Pickup == dbsqlc.PgqPickupExhausted || *row.Pickup == dbsqlc.PgqPickupFailed {
		level = slog.LevelWarn
	}
	attrs := []any{"job", row.Job, "uuid", row.Uuid, "attempt", row.Attempts, "queue", row.Queue, "outcome", pickup}
	if row.PickupMiddleware != nil {
		attrs = append(attrs, "middleware", *row.PickupMiddleware)
		r.metrics.turnedAway(*row.PickupMiddleware)
	}
	r.log.Log(context.Background(), level, "job "+pickup+": "+deref(row.PickupNote), attrs...)
	r.metrics.outcome(row.Job, row.Queue, pickup, 0)
}

// detailAndHint returns the DETAIL and HINT an exception carries (S88): a SQL handler's,
// or a PostgreSQL error a Go handler returned (*pgconn.PgError, wrapped or not).
func detailAndHint(err error) (detail, hint string) {
	var sqlErr *sqlHandlerError
	if errors.As(err, &sqlErr) {
		return sqlErr.detail, sqlErr.hint
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Detail, pgErr.Hint
	}
	return "", ""
}
