package worker

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgq-dev/pgq/internal/dbsqlc"
	"github.com/pgq-dev/pgq/internal/pgcodec"
	"github.com/pgq-dev/pgq/pgq"
)

// reporter sends each attempt's outcome to PostgreSQL, which decides what follows.
// Completions and failures go in batches, one pgq.complete or pgq.fail_many per batch,
// each sent by its own batcher goroutine; releases and the rare lease-lost check go at
// once, from the handler's goroutine. Once its outcome is reported an attempt is
// finished: its overlap locks are given back and it leaves the active set. Until then
// it stays there, and so heartbeated.
type reporter struct {
	// Set by New (handlers by Handle, before Run); read-only once Run has started.
	pool     *pgxpool.Pool
	q        *dbsqlc.Queries
	cfg      *config
	log      *slog.Logger
	metrics  *metrics
	handlers map[string]handler // for the failed hooks
	session  *session           // which holds the overlap locks
	active   *activeSet
	freed    chan struct{} // signalled when attempts are finished

	completions chan *active // sent by handler goroutines; received by the completion batcher
	failures    chan failure // sent by handler goroutines; received by the failure batcher
}

// failure is an attempt whose handler raised (or timed out), waiting for pgq.fail_many.
type failure struct {
	a         *active
	exception string
	timedOut  bool
}

// start runs the two batchers until the returned func is called; that func returns once
// they have reported everything sent to them.
func (r *reporter) start() (stop func()) {
	stopping := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { batch(r.completions, stopping, r.complete, r.giveUpCompletions) })
	wg.Go(func() { batch(r.failures, stopping, r.fail, r.giveUpFailures) })
	return func() {
		close(stopping)
		wg.Wait()
	}
}

// batch calls flush with what arrives on ch, taking everything already waiting (up to
// 1000) each time, until stop is closed and ch is empty. flush reports what it can and
// returns the items it could not report, with the error; giveUp ends those.
func batch[T any](ch <-chan T, stop <-chan struct{}, flush func([]T) ([]T, error), giveUp func([]T, error)) {
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
		if unreported, err := flush(items); len(unreported) > 0 {
			giveUp(unreported, err)
		}
	}
}

// report sends the outcome of one attempt, on the handler's goroutine: a success or an
// exception to its batcher, anything else at once.
func (r *reporter) report(ctx context.Context, a *active, err error) {
	if err == nil {
		r.completions <- a // batched; the job stays reserved (and heartbeated) until reported
		return
	}
	cause := context.Cause(ctx)
	// Outcome calls must go through even when the worker is stopping.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	switch {
	case errors.Is(err, errCompletedInTx):
		r.logOutcome(a, "succeeded", nil)
	case errors.Is(err, pgq.ErrLeaseLost) && !r.holds(rctx, a):
		// The SQL handler's effects were rolled back with its rejected completion. A
		// token that lost its job never gets it back, so this complete is rejected too,
		// and recorded on the attempt (S15). (A handler that raised PQ001 itself while
		// its lease holds fails below like any exception.)
		_, _ = r.q.JobCompleteMany(rctx, dbsqlc.JobCompleteManyParams{Uuids: []uuid.UUID{a.row.Uuid}, Tokens: []uuid.UUID{a.token}})
		r.logOutcome(a, "lease_lost", err)
	case errors.Is(cause, errShutdown), errors.Is(cause, errOverlapLost):
		reason := "worker stopped before the handler finished; released without delay, attempt not counted"
		if errors.Is(cause, errOverlapLost) {
			reason = "the worker's session holding the overlap lock was lost; released without delay, attempt not counted"
		}
		r.release(rctx, a, 0, &reason)
	default:
		if rel, ok := asRelease(err); ok {
			r.release(rctx, a, rel.Delay, nil)
			break
		}
		// Every other error is the attempt's exception. If the lease was lost meanwhile,
		// fail is rejected and recorded (S15).
		timedOut := errors.Is(cause, errTimeout) || isQueryCanceled(err) && !errors.Is(cause, pgq.ErrLeaseLost)
		r.failures <- failure{a: a, exception: err.Error(), timedOut: timedOut} // batched; the slot frees then
		return
	}
	r.finish(a)
}

// release puts the attempt's job back to wait delay (pgq.release). With a refund reason
// the worker, not the job, cut the attempt short: the attempt is not counted, and the
// reason is recorded.
func (r *reporter) release(ctx context.Context, a *active, delay time.Duration, refundReason *string) {
	attempts, err := r.q.JobRelease(ctx, dbsqlc.JobReleaseParams{
		Uuid: a.row.Uuid, Token: a.token, Delay: int32(delay / time.Second), Refund: refundReason != nil, Reason: refundReason,
	})
	r.logResult(a, attempts, err)
}

// holds tells whether the attempt's token still holds its job (a heartbeat that also
// answers the question).
func (r *reporter) holds(ctx context.Context, a *active) bool {
	held, err := r.q.JobHeartbeatMany(ctx, dbsqlc.JobHeartbeatManyParams{Uuids: []uuid.UUID{a.row.Uuid}, Tokens: []uuid.UUID{a.token}})
	return err != nil || len(held) == 1 // on error, assume held: fail is the safe call
}

func isQueryCanceled(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "57014"
}

// complete completes succeeded attempts in one pgq.complete and finishes them: succeeded,
// or lease_lost for those whose token no longer held the job (S15). When the call
// fails it returns the whole batch, still held, with the error.
func (r *reporter) complete(batch []*active) ([]*active, error) {
	uuids := make([]uuid.UUID, len(batch))
	tokens := make([]uuid.UUID, len(batch))
	for i, a := range batch {
		uuids[i], tokens[i] = a.row.Uuid, a.token
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	var done []uuid.UUID
	err := r.pool.AcquireFunc(ctx, func(c *pgxpool.Conn) error {
		pgcodec.Register(c.Conn().TypeMap())
		var err error
		done, err = dbsqlc.New(c).JobCompleteMany(ctx, dbsqlc.JobCompleteManyParams{Uuids: uuids, Tokens: tokens})
		return err
	})
	cancel()
	if err != nil {
		return batch, err
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
	return nil, nil
}

// giveUpCompletions ends attempts whose completion could not be reported: their jobs
// stay reserved until their leases end, then run again.
func (r *reporter) giveUpCompletions(batch []*active, err error) {
	for _, a := range batch {
		r.logOutcome(a, "complete_failed", err)
	}
	r.finish(batch...)
}

// fail reports failed attempts in one pgq.fail_many, which decides for each whether it
// is retried or failed for good; the failed hook runs for those failed for good. When
// the call fails it returns the whole batch, still held, with the error.
func (r *reporter) fail(batch []failure) ([]failure, error) {
	p := dbsqlc.JobFailManyParams{
		Uuids: make([]uuid.UUID, len(batch)), Tokens: make([]uuid.UUID, len(batch)),
		Exceptions: make([]string, len(batch)), TimedOut: make([]bool, len(batch)),
		DefaultTries: int32(r.cfg.tries), DefaultBackoff: r.cfg.backoff,
	}
	for i, f := range batch {
		p.Uuids[i], p.Tokens[i], p.Exceptions[i], p.TimedOut[i] = f.a.row.Uuid, f.a.token, f.exception, f.timedOut
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	attempts, err := r.q.JobFailMany(ctx, p)
	if err != nil {
		return batch, err
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
			r.runFailedHook(ctx, f.a, at)
		}
	}
	r.finish(finished...)
	return nil, nil
}

// giveUpFailures ends attempts whose failure could not be reported: their jobs stay
// reserved until their leases end, then run again.
func (r *reporter) giveUpFailures(batch []failure, err error) {
	finished := make([]*active, len(batch))
	for i, f := range batch {
		finished[i] = f.a
		r.logResult(f.a, nil, err)
	}
	r.finish(finished...)
}

func (r *reporter) runFailedHook(ctx context.Context, a *active, attempt *dbsqlc.PgqAttempt) {
	h, ok := r.handlers[a.row.Job]
	if !ok || h.failed == nil {
		return
	}
	defer func() {
		if p := recover(); p != nil {
			r.log.Error("failed hook panicked", "job", a.row.Job, "uuid", a.row.Uuid, "panic", p)
		}
	}()
	h.failed(ctx, a.row, errors.New(deref(attempt.Exception)))
}

// finish ends attempts whose outcome has been reported: their overlap locks go (in one
// call for the batch), then their contexts, deadlines and places in the active set.
func (r *reporter) finish(batch ...*active) {
	r.unlockOverlap(batch)
	for _, a := range batch {
		a.cancel(nil)
		a.deadline.release()
		r.active.forget(a)
	}
	signal(r.freed)
}

// unlockOverlap gives back the overlap locks of finished jobs, in one call, on the
// session that took them.
func (r *reporter) unlockOverlap(batch []*active) {
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
	r.session.unlockOverlap(p)
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
