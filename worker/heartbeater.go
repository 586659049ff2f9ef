package worker

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/pgq-dev/pgq/internal/dbsqlc"
	"github.com/pgq-dev/pgq/pgq"
)

// The bounds of overlap leases (S34). A without_overlapping key's lease lasts overlapTTL
// past its last renewal (pgq._overlap_ttl(); TestS34OverlapTTLMatchesSQL keeps them equal).
// The heartbeater renews the leases of running jobs every second, trying again each
// leaseCheck while a renewal is late; a handler whose leases it could not renew for
// overlapRenewWithin is cancelled (looked at each leaseCheck), and one that has not returned
// overlapGrace later makes the worker stop. Renewal, cancellation and the grace together
// stay under the TTL, so no other worker's handler can start on the key while this one
// may still run.
const (
	overlapTTL         = 10 * time.Second
	overlapRenewWithin = 3 * time.Second
	overlapGrace       = 5 * time.Second
	// heartbeatTimeout bounds one heartbeat call: a call that hangs must not hold up the
	// check of the overlap leases for long.
	heartbeatTimeout = 2 * time.Second
)

// heartbeater keeps the worker's claims alive: it extends the leases of running jobs
// once a third of their lease has passed, looking four times a second (S14), renews
// every second the overlap leases of jobs that hold keys, for as long as a renewal can
// move their end (S27, S34), and cancels the handlers whose lease was lost, whose
// overlap leases it could not renew in time, or whose job an operator cancelled
// (pgq.cancel, S40).
type heartbeater struct {
	// Set by New; read-only.
	conns    *conns
	cfg      *config
	log      *slog.Logger
	metrics  *metrics
	active   *activeSet
	executor *executor
}

// leaseCheck is how often the heartbeater looks for leases due. Once a second is too
// seldom for a short lease: with retry_after 2, a lease due at 0.67 s was renewed up to
// 1.67 s after it began, and on a loaded machine the renewal came after its end. Looking
// every quarter second keeps at least 0.4 s between a renewal and the lease's end
// (retry_after 1) and 1.1 s at retry_after 2, with no more calls: only leases due are
// renewed.
const leaseCheck = 250 * time.Millisecond

// overlapRenewEvery is how long after their last renewal overlap leases are due again.
// They are looked at every leaseCheck like the others, so a renewal that failed or came
// late is tried again a quarter second later, not a second.
const overlapRenewEvery = time.Second

// slowBeat: a pgq.heartbeat that took longer is logged. Overlap leases go unrenewed for
// at most overlapRenewWithin before their handlers are cancelled, so a few such calls in
// a row are the warning that comes before it.
const slowBeat = time.Second

// run looks at the leases every leaseCheck: it cancels the handlers whose overlap
// leases went unrenewed too long, and sends one pgq.heartbeat for the attempts due on a
// goroutine, one at a time, so that a call that waits (for a connection, behind a lock,
// on a loaded server) delays neither that check nor the next call. The operators'
// cancellations are polled once a second on a goroutine of their own, for the same
// reason.
func (h *heartbeater) run(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { everySecond(ctx, func() { h.cancelRequested(ctx) }) })
	beating := make(chan struct{}, 1) // full while a heartbeat call is under way
	tick := time.NewTicker(leaseCheck)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		now := time.Now()
		h.cancelUnrenewed(now)
		select {
		case beating <- struct{}{}:
			wg.Go(func() {
				defer func() { <-beating }()
				h.beatDue(ctx, now)
			})
		default: // the last call is still under way; the next tick looks again
		}
	}
}

// beatDue sends one pgq.heartbeat for every attempt due as of now, and cancels the
// handlers whose lease it finds lost.
func (h *heartbeater) beatDue(ctx context.Context, now time.Time) {
	var due []*active
	h.active.each(func(a *active) {
		if !now.Before(a.heartbeatAt) || a.overlapRenewing() && now.Sub(a.overlapRenewed) >= overlapRenewEvery {
			due = append(due, a)
		}
	})
	if len(due) == 0 {
		return
	}
	held, err := h.beat(ctx, due)
	if took := time.Since(now); err == nil && took > slowBeat {
		h.log.Warn("heartbeat slow", "took", took.Round(time.Millisecond), "jobs", len(due))
	}
	if err != nil {
		h.log.Error("heartbeat failed", "err", err, "jobs", len(due))
		return
	}
	h.metrics.lease("extended", len(held))
	lost := 0
	for _, a := range due {
		if !held[a.token] {
			// A handler that has returned has nothing to cancel, and its report (often
			// committed while this call ran) tells what became of the job.
			if a.state.Load() == running {
				lost++
				h.log.Warn("lease lost; cancelling handler", "job", a.row.Job, "uuid", a.row.Uuid)
				h.executor.cancel(a, pgq.ErrLeaseLost)
			}
			continue
		}
		h.active.mu.Lock()
		// From the time the call was sent: the lease was renewed for a whole retry_after.
		a.heartbeatAt = now.Add(a.lease / 3)
		a.heldUntil = now.Add(a.lease)
		a.overlapRenewed = now
		h.active.mu.Unlock()
	}
	h.metrics.lease("lost", lost)
}

// beat sends one pgq.heartbeat for the attempts and returns the tokens still holding.
func (h *heartbeater) beat(ctx context.Context, due []*active) (map[uuid.UUID]bool, error) {
	uuids := make([]uuid.UUID, len(due))
	tokens := make([]uuid.UUID, len(due))
	for i, a := range due {
		uuids[i], tokens[i] = a.row.Uuid, a.token
	}
	cctx, cancel := context.WithTimeout(ctx, heartbeatTimeout)
	defer cancel()
	var held []uuid.UUID
	called := h.cfg.tel.call(cctx, "pgq.heartbeat", len(due))
	err := h.conns.with(cctx, func(q *dbsqlc.Queries) error {
		var err error
		held, err = q.JobHeartbeatMany(cctx, dbsqlc.JobHeartbeatManyParams{Uuids: uuids, Tokens: tokens})
		return err
	})
	called(len(held), err)
	if err != nil {
		return nil, err
	}
	kept := make(map[uuid.UUID]bool, len(held))
	for _, t := range held {
		kept[t] = true
	}
	return kept, nil
}

// cancelUnrenewed cancels the running handlers whose overlap leases have gone unrenewed
// for overlapRenewWithin while they still needed renewing (S34): the attempt is given
// back (S35).
func (h *heartbeater) cancelUnrenewed(now time.Time) {
	var stale []*active
	h.active.each(func(a *active) {
		if a.overlapRenewing() && a.state.Load() == running && now.Sub(a.overlapRenewed) > overlapRenewWithin {
			stale = append(stale, a)
		}
	})
	for _, a := range stale {
		h.log.Warn("overlap lease not renewed in time; cancelling handler", "job", a.row.Job, "uuid", a.row.Uuid,
			"keys", a.row.OverlapKeys)
		h.executor.cancel(a, errOverlapLost)
	}
}

// cancelRequested cancels the handlers of the jobs an operator cancelled (pgq.cancel,
// S40): their reports end the jobs as cancelled. The query reads only marked rows.
func (h *heartbeater) cancelRequested(ctx context.Context) {
	if h.active.count() == 0 {
		return
	}
	cctx, cancel := context.WithTimeout(ctx, heartbeatTimeout)
	defer cancel()
	var tokens []uuid.UUID
	err := h.conns.with(cctx, func(q *dbsqlc.Queries) error {
		var err error
		tokens, err = q.JobCancelRequests(cctx, h.cfg.name)
		return err
	})
	if err != nil || len(tokens) == 0 {
		return
	}
	wanted := make(map[uuid.UUID]bool, len(tokens))
	for _, t := range tokens {
		wanted[t] = true
	}
	var cancelled []*active
	h.active.each(func(a *active) {
		if wanted[a.token] && a.state.Load() == running {
			cancelled = append(cancelled, a)
		}
	})
	for _, a := range cancelled {
		h.log.Info("job cancelled by an operator; cancelling handler", "job", a.row.Job, "uuid", a.row.Uuid)
		h.executor.cancel(a, errCancelled)
	}
}
