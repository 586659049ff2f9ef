package worker

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgq-dev/pgq/internal/dbsqlc"
	"github.com/pgq-dev/pgq/internal/pgcodec"
)

// The worker's own bounds on its calls (S35, S37), set on every connection it uses,
// whatever the role or the database says: a role-level statement_timeout of 1 ms must
// not stall it, nor one of 0 let a stuck call hang it.
const (
	// protocolStatementTimeout bounds a protocol call (reserve, complete, fail, ...).
	protocolStatementTimeout = time.Minute
	// protocolLockTimeout bounds a protocol call's wait for a lock.
	protocolLockTimeout = 10 * time.Second
	// idleInTransaction ends a transaction left idle by a frozen worker, so that it
	// cannot hold a job's row (S37). A SQL handler's transaction sets it too.
	idleInTransaction = 10 * time.Second
)

// conns hands out the pool's connections prepared for the worker's calls: pgq's codecs
// registered and the worker's bounds set, once per connection (a flag in the
// connection's custom data says it is done). Safe for concurrent use.
type conns struct {
	// Set by New; read-only.
	pool *pgxpool.Pool
	// pooled: the pool goes through a transaction pooler, whose server sessions are
	// shared: a session setting made here would reach other clients, so none is made.
	pooled bool
}

const preparedKey = "pgq.worker.prepared"

// prepareTries bounds the tries of a connection's preparation that a statement_timeout
// cancelled.
const prepareTries = 5

// acquire takes a prepared connection from the pool; the caller releases it.
func (c *conns) acquire(ctx context.Context) (*pgxpool.Conn, error) {
	pc, err := c.pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	if err := prepare(ctx, pc.Conn(), c.pooled); err != nil {
		pc.Release()
		return nil, err
	}
	return pc, nil
}

// with calls fn with the queries of a prepared connection, released after.
func (c *conns) with(ctx context.Context, fn func(q *dbsqlc.Queries) error) error {
	pc, err := c.acquire(ctx)
	if err != nil {
		return err
	}
	defer pc.Release()
	err = fn(dbsqlc.New(pc))
	if isReadOnly(err) {
		// A connection to a standby, or to a primary demoted under it, stays read-only:
		// closed, it leaves the pool, and the next one dials the URL again, which with
		// target_session_attrs=read-write finds the primary.
		pc.Conn().Close(context.WithoutCancel(ctx))
	}
	return err
}

// isReadOnly tells whether err says the server accepts no writes: SQLSTATE 25006
// (read_only_sql_transaction), which a hot standby answers to every write.
func isReadOnly(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "25006"
}

// serverOf names the server a connection reached (host:port), for log lines.
func serverOf(conn *pgx.Conn) string {
	if conn == nil || conn.PgConn() == nil || conn.PgConn().Conn() == nil {
		return ""
	}
	return conn.PgConn().Conn().RemoteAddr().String()
}

// prepare readies a connection for the worker's calls, once. pooled: the connection
// goes through a transaction pooler, and its session is not set.
func prepare(ctx context.Context, conn *pgx.Conn, pooled bool) error {
	data := conn.PgConn().CustomData()
	if data[preparedKey] != nil {
		return nil
	}
	pgcodec.Register(conn.TypeMap())
	if pooled {
		data[preparedKey] = true
		return nil
	}
	// The role's or the database's statement_timeout bounds this call too. At 1 ms it
	// cancels about one in a hundred on a new connection, whose first statement fills
	// the backend's caches, and none of the calls after; so a cancelled call is sent
	// again, a few times.
	var err error
	for range prepareTries {
		err = dbsqlc.New(conn).SessionSetProtocolLimits(ctx, dbsqlc.SessionSetProtocolLimitsParams{
			StatementMilliseconds: milliseconds(protocolStatementTimeout),
			LockMilliseconds:      milliseconds(protocolLockTimeout),
			IdleMilliseconds:      milliseconds(idleInTransaction),
		})
		if !isQueryCanceled(err) || ctx.Err() != nil {
			break
		}
	}
	if err != nil {
		return err
	}
	data[preparedKey] = true
	return nil
}

func milliseconds(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }

// RuntimeParams returns the session settings the worker wants on its connections, for a
// pool configuration (pgxpool.Config.ConnConfig.RuntimeParams): settings sent when a
// connection starts take precedence over the role's and the database's, so with them even
// a role whose statement_timeout is too short for the first call works. The worker sets
// them on each connection anyway.
func RuntimeParams() map[string]string {
	return map[string]string{
		"statement_timeout":                   milliseconds(protocolStatementTimeout),
		"lock_timeout":                        milliseconds(protocolLockTimeout),
		"idle_in_transaction_session_timeout": milliseconds(idleInTransaction),
	}
}
