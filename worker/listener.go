package worker

import (
	"context"
	"log/slog"
	"slices"
	"time"

	"github.com/pgq-dev/pgq/internal/dbsqlc"
)

// listener keeps a LISTEN pgq_jobs connection and wakes the fetcher when a job is
// dispatched to one of its queues while it naps (S31).
type listener struct {
	// Set by New; read-only.
	conns  *conns
	queues []string
	log    *slog.Logger
	wake   chan struct{} // signalled here; received by the fetcher

	lost bool // the connection was lost since the last LISTEN; owned by run's goroutine
}

// run listens until ctx is done. It reconnects when the connection drops and wakes the
// fetcher after each reconnect, since notifications sent meanwhile are lost; the poll
// covers the gap. A read-only server (a hot standby refuses LISTEN) is tried again after
// a pause that doubles each time, as the session's reconnect does.
func (l *listener) run(ctx context.Context) {
	readOnly := 0
	for ctx.Err() == nil {
		err := l.runOnce(ctx)
		if ctx.Err() != nil {
			return
		}
		pause := time.Second
		if isReadOnly(err) {
			readOnly++
			pause = min(readOnlyBackoffMax, time.Second<<min(readOnly-1, 6))
			l.log.Warn("listener: the server is read-only (a hot standby?); reconnecting", "err", err, "retry_in", pause)
		} else {
			readOnly = 0
			l.log.Warn("listener connection lost; reconnecting", "err", err)
		}
		l.lost = true
		select {
		case <-ctx.Done():
			return
		case <-time.After(pause):
		}
	}
}

// runOnce listens on one connection until it fails or ctx is done.
func (l *listener) runOnce(ctx context.Context) error {
	pc, err := l.conns.acquire(ctx)
	if err != nil {
		return err
	}
	conn := pc.Hijack() // a LISTEN session must not go back to the pool
	defer conn.Close(context.Background())
	if err := dbsqlc.New(conn).ListenJobs(ctx); err != nil {
		return err
	}
	if l.lost {
		l.log.Info("listener reconnected", "server", serverOf(conn))
		l.lost = false
	}
	signal(l.wake)
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		if slices.Contains(l.queues, n.Payload) {
			signal(l.wake)
		}
	}
}
