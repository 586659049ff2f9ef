package worker

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgq-dev/pgq/internal/dbsqlc"
)

// session is the connection the fetcher reserves and naps on: the nap locks of pgq.nap
// belong to it. Nothing else does: overlap locks are leases (S34), so a session that
// drops takes no claim of a running job with it. Its methods are safe from any
// goroutine, but only the fetcher (and Run, to open and close it) uses it.
type session struct {
	// Set by New; read-only.
	conns *conns
	cfg   *config
	log   *slog.Logger

	mu   sync.Mutex    // serialises the use of conn
	conn *pgxpool.Conn // guarded by mu; nil before open, after close, or once reconnecting gave up
	// napping: the session naps on our queues (pgq.nap), so dispatches to them notify.
	// Set with mu held; reconnect, which may run on the heartbeater's goroutine, clears
	// it with the old connection. The fetcher reads it without mu.
	napping atomic.Bool
	// readOnly counts the reserves in a row a read-only server refused; owned by the
	// fetcher's goroutine (reconnect).
	readOnly int
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
	c, err := s.conns.acquire(ctx)
	if err != nil {
		return err
	}
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

// reserve reserves up to max jobs (pgq.reserve) under the id call, which the lease
// tokens of the jobs begin with: should the answer be lost, pgq.unreserve(call) gives
// them back (S35).
func (s *session) reserve(ctx context.Context, max int, call uuid.UUID) ([]*dbsqlc.JobReserveRow, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn == nil {
		return nil, errNoSession
	}
	rows, err := dbsqlc.New(s.conn).JobReserve(ctx, dbsqlc.JobReserveParams{
		Worker: s.cfg.name, Queues: s.cfg.queues, Max: int32(max), DefaultTries: int32(s.cfg.tries), Call: call,
	})
	if err == nil {
		s.readOnly = 0
	}
	return rows, err
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
// gone, opens a new one. A read-only server (a hot standby, or a primary demoted under
// the worker: SQLSTATE 25006) keeps the connection useless, so it is closed and a new
// one dialled after a pause that doubles with each read-only answer in a row, up to
// readOnlyBackoffMax: the URL may name only that server. It returns ctx's error when ctx
// ends first.
func (s *session) reconnect(ctx context.Context, cause error) error {
	failedAt, pause := time.Now(), time.Second
	if isReadOnly(cause) {
		s.readOnly++
		pause = min(readOnlyBackoffMax, time.Second<<min(s.readOnly-1, 6))
		server := ""
		s.mu.Lock()
		if s.conn != nil {
			server = serverOf(s.conn.Conn())
			s.conn.Conn().Close(context.WithoutCancel(ctx))
		}
		s.mu.Unlock()
		s.log.Warn("the server is read-only (a hot standby, or a primary demoted under the worker); "+
			"reconnecting: give a URL that reaches the primary, e.g. every host with target_session_attrs=read-write",
			"server", server, "retry_in", pause, "read_only_answers", s.readOnly)
	} else {
		s.readOnly = 0
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(pause):
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn != nil && !s.conn.Conn().IsClosed() {
		return nil
	}
	if s.conn != nil {
		s.conn.Release()
	}
	s.napping.Store(false) // the nap locks went with the old session
	for {
		c, err := s.conns.acquire(ctx)
		if err == nil {
			s.conn = c
			s.log.Info("session connection re-established", "server", serverOf(c.Conn()),
				"after", time.Since(failedAt).Round(time.Millisecond))
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

// readOnlyBackoffMax bounds the pause between reconnects to a read-only server.
const readOnlyBackoffMax = 30 * time.Second

// unreserve gives back the jobs still reserved by a reserve call whose answer was lost
// (pgq.unreserve, S35), on any connection: it need not be the session's.
func (s *session) unreserve(ctx context.Context, call uuid.UUID) (int, error) {
	cctx, cancel := context.WithTimeout(ctx, reportTimeout)
	defer cancel()
	var n int32
	err := s.conns.with(cctx, func(q *dbsqlc.Queries) error {
		var err error
		n, err = q.JobUnreserve(cctx, call)
		return err
	})
	return int(n), err
}

// giveBack gives back jobs reserved on the session whose handlers never started (S84):
// they wait again at once, not counted (pgq.give_back, started false). It runs at a
// stop too, so it does not end with ctx.
func (s *session) giveBack(ctx context.Context, rows []*dbsqlc.JobReserveRow, reason string) error {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), reportTimeout)
	defer cancel()
	p := dbsqlc.JobGiveBackManyParams{Uuids: make([]uuid.UUID, len(rows)), Tokens: make([]uuid.UUID, len(rows)),
		Reason: reason, Started: false}
	for i, r := range rows {
		p.Uuids[i], p.Tokens[i] = r.Uuid, r.LeaseToken
	}
	return s.conns.with(cctx, func(q *dbsqlc.Queries) error {
		_, err := q.JobGiveBackMany(cctx, p)
		return err
	})
}
