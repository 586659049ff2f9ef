package worker

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgq-dev/pgq/internal/dbsqlc"
	"github.com/pgq-dev/pgq/internal/pgcodec"
)

// session is the connection reserve runs on. The overlap advisory locks reserve takes
// belong to it, so they are released on it too, and so do the nap locks of pgq.nap. Its
// methods are safe from any goroutine: the fetcher reserves and naps on it, the reporter
// gives back overlap locks, the heartbeater checks it, and whichever of them finds it
// lost reconnects it.
type session struct {
	// Set by New; read-only.
	pool     *pgxpool.Pool
	cfg      *config
	log      *slog.Logger
	active   *activeSet // to cancel the handlers whose locks a lost session took with it
	executor *executor

	mu   sync.Mutex    // serialises the use of conn
	conn *pgxpool.Conn // guarded by mu; nil before open, after close, or once reconnecting gave up
	// napping: the session naps on our queues (pgq.nap), so dispatches to them notify.
	// Set with mu held; reconnect, which may run on the heartbeater's goroutine, clears
	// it with the old connection. The fetcher reads it without mu.
	napping atomic.Bool
}

var errNoSession = errors.New("pgq/worker: no session connection")

const (
	// napAfter: a worker whose last reserve came back short but whose handlers still run
	// naps when none of them has returned for this long.
	napAfter = 20 * time.Millisecond
	// napWait: how long pgq.nap waits for the dispatches under way.
	napWait = 10 * time.Millisecond
)

// open acquires the session connection; Run calls it before anything else.
func (s *session) open(ctx context.Context) error {
	c, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	pgcodec.Register(c.Conn().TypeMap())
	s.mu.Lock()
	s.conn = c
	s.mu.Unlock()
	return nil
}

// close ends the nap, whose locks belong to the connection, and gives the connection
// back to the pool.
func (s *session) close(ctx context.Context) {
	if s.napping.Load() {
		s.wake(ctx)
	}
	s.mu.Lock()
	if s.conn != nil {
		s.conn.Release()
	}
	s.mu.Unlock()
}

func (s *session) reserve(ctx context.Context, max int) ([]*dbsqlc.JobReserveRow, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn == nil {
		return nil, errNoSession
	}
	return dbsqlc.New(s.conn).JobReserve(ctx, dbsqlc.JobReserveParams{
		Worker: s.cfg.name, Queues: s.cfg.queues, Max: int32(max), DefaultTries: int32(s.cfg.tries),
	})
}

// nap makes the session nap on the worker's queues (pgq.nap): dispatches to them notify
// from now on. ok reports that the dispatches under way have ended, so one more reserve
// sees their jobs. After an error the session is closed, since nap locks may be left on
// it; the next reserve opens another.
func (s *session) nap(ctx context.Context) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn == nil {
		return false, errNoSession
	}
	nctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	ok, err := dbsqlc.New(s.conn).SessionNap(nctx, dbsqlc.SessionNapParams{Queues: s.cfg.queues, Wait: napWait})
	if err != nil {
		s.conn.Conn().Close(nctx)
		s.napping.Store(false)
		return false, err
	}
	s.napping.Store(true)
	return ok, nil
}

// wake ends the session's nap (pgq.wake). On error the session is closed, which ends
// the nap too.
func (s *session) wake(ctx context.Context) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn == nil {
		return
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	if err := dbsqlc.New(s.conn).SessionWake(wctx); err != nil {
		s.log.Error("wake failed; reconnecting", "err", err)
		s.conn.Conn().Close(wctx)
	}
	s.napping.Store(false)
}

// reconnect pauses after a failed session call and, when the session connection is
// gone, cancels the handlers whose overlap locks went with it (PostgreSQL freed them, so
// another worker may already run the same key) and opens a new session. It returns
// ctx's error when ctx ends first.
func (s *session) reconnect(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Second):
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn != nil && !s.conn.Conn().IsClosed() {
		return nil
	}
	s.active.each(func(a *active) {
		if len(a.row.OverlapKeys) > 0 {
			s.executor.cancel(a, errOverlapLost)
		}
	})
	if s.conn != nil {
		s.conn.Release()
	}
	s.napping.Store(false) // the nap locks went with the old session
	for {
		c, err := s.pool.Acquire(ctx)
		if err == nil {
			pgcodec.Register(c.Conn().TypeMap())
			s.conn = c
			return nil
		}
		s.log.Error("session connection failed; retrying", "err", err)
		select {
		case <-ctx.Done():
			s.conn = nil
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// unlockOverlap gives back overlap locks (pgq.unlock_overlap_many) on the session that
// took them. Once the session is gone there is nothing to give back: the locks went
// with it.
func (s *session) unlockOverlap(p dbsqlc.OverlapUnlockManyParams) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := dbsqlc.New(s.conn).OverlapUnlockMany(ctx, p); err != nil {
		s.log.Warn("overlap unlock failed", "keys", p.Keys, "err", err)
	}
}

// expireOverlap releases the session's overlap locks held past their expire_after
// (pgq.expire_overlap) and returns their keys. An error means the session may be lost;
// errNoSession that there is no session to check.
func (s *session) expireOverlap(ctx context.Context) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn == nil {
		return nil, errNoSession
	}
	return dbsqlc.New(s.conn).OverlapExpire(ctx)
}
