package worker

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/google/uuid"

	"github.com/pgq-dev/pgq/internal/dbsqlc"
	"github.com/pgq-dev/pgq/pgq"
)

// heartbeater keeps the worker's claims alive, once a second: it extends the leases of
// running jobs (S14) and cancels the handlers whose lease was lost, and while a job holds
// overlap locks it checks the session that holds them.
type heartbeater struct {
	// Set by New; read-only.
	q        *dbsqlc.Queries
	log      *slog.Logger
	metrics  *metrics
	active   *activeSet
	session  *session
	executor *executor
}

func (h *heartbeater) run(ctx context.Context) {
	everySecond(ctx, func() { h.runOnce(ctx) })
}

// runOnce is one beat: the session check, then the heartbeat of the leases due.
func (h *heartbeater) runOnce(ctx context.Context) {
	h.watchOverlap(ctx)
	h.beat(ctx)
}

// beat extends the leases of running jobs once a third of their lease has passed, in one
// call for all due jobs, and cancels handlers whose lease was lost.
func (h *heartbeater) beat(ctx context.Context) {
	now := time.Now()
	var due []*active
	h.active.each(func(a *active) {
		if !now.Before(a.heartbeatAt) {
			due = append(due, a)
		}
	})
	if len(due) == 0 {
		return
	}
	uuids := make([]uuid.UUID, len(due))
	tokens := make([]uuid.UUID, len(due))
	for i, a := range due {
		uuids[i], tokens[i] = a.row.Uuid, a.token
	}
	held, err := h.q.JobHeartbeatMany(ctx, dbsqlc.JobHeartbeatManyParams{Uuids: uuids, Tokens: tokens})
	if err != nil {
		h.log.Error("heartbeat failed", "err", err, "jobs", len(due))
		return
	}
	kept := make(map[uuid.UUID]bool, len(held))
	for _, r := range held {
		kept[*r.LeaseToken] = true
	}
	h.metrics.lease("extended", len(kept))
	h.metrics.lease("lost", len(due)-len(kept))
	for _, a := range due {
		if !kept[a.token] {
			h.log.Warn("lease lost; cancelling handler", "job", a.row.Job, "uuid", a.row.Uuid)
			h.executor.cancel(a, pgq.ErrLeaseLost)
			continue
		}
		h.active.mu.Lock()
		a.heartbeatAt = now.Add(a.lease / 3) // from now: the lease was just renewed for a whole retry_after
		h.active.mu.Unlock()
	}
}

// watchOverlap runs every beat while a running job holds overlap locks: it releases locks
// held past their expire_after (pgq.expire_overlap) and, through that call, notices a
// lost session connection, whose handlers it then cancels.
func (h *heartbeater) watchOverlap(ctx context.Context) {
	holding := false
	h.active.each(func(a *active) {
		holding = holding || len(a.row.OverlapKeys) > 0
	})
	if !holding {
		return
	}
	keys, err := h.session.expireOverlap(ctx)
	if errors.Is(err, errNoSession) {
		return
	}
	if err != nil {
		h.log.Error("session check failed", "err", err)
		_ = h.session.reconnect(ctx)
		return
	}
	for _, k := range keys {
		h.log.Warn("overlap lock held past expire_after; released while its handler still runs", "key", k)
	}
}
