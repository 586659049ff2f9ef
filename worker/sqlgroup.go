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
)

// Grouped SQL jobs (S109-S113). The handler goroutine of a short SQL job queues it for a
// group and then either gets its outcome or, when a SQL slot is free, leads a group: it
// takes a connection, opens one transaction and runs the queued jobs one after the
// other, each in its own savepoint with its own statement_timeout, until no job waits,
// the time budget is spent or the subtransactions near PostgreSQL's cache of 64 per
// backend; then it commits once. A lone job is run at once: no leader waits for more.

const (
	// defaultSQLGroupBudget is WithSQLGroupBudget's default.
	defaultSQLGroupBudget = 5 * time.Millisecond
	// defaultSQLGroups is WithSQLGroups's default: enough groups to keep a server's few
	// cores busy while one group waits for its commit; more share fewer commits.
	defaultSQLGroups = 4
	// maxGroupSubxacts bounds the subtransactions a group opens: below the 64 that
	// PostgreSQL caches per backend (past them, every snapshot on the primary and its
	// standbys reads pg_subtrans), with room for the few a chain's next step or a batch's
	// callback opens.
	maxGroupSubxacts = 60
	// subxactsPerJob: the job's savepoint, and the block of pgq.run_sql_job that catches
	// the handler's exception; each takes a subtransaction id once the handler writes.
	subxactsPerJob = 2
	// isolatedRecheck is how long the worker runs a class that pgq.run_sql_job said is
	// isolated (S112) alone without asking again.
	isolatedRecheck = time.Minute
	// longSQLJobs: a class whose recent runs took longer than this many group budgets
	// runs alone. More than one: a busy server stretches every statement, and short
	// handlers must still share commits then.
	longSQLJobs = 4
	// groupCallTimeout bounds the calls of a group that belong to no job (BEGIN, a
	// rollback to a savepoint, COMMIT): past it the connection is given up and the group
	// is lost (S111).
	groupCallTimeout = 30 * time.Second
)

// errRunAlone tells a grouped job's handler goroutine to run it in a transaction of its
// own: pgq.run_sql_job refused it in a group (PQ003: its class is isolated, or its last
// attempt was lost with its group), or its group could not begin.
var errRunAlone = errors.New("the SQL job runs alone")

// groupLostError ends the attempt of a SQL job whose group's transaction ended without a
// commit after the job ran in it (S111): its job is given back uncounted, and its next
// attempt runs alone (pgq.give_back_group).
type groupLostError struct{ err error }

func (e *groupLostError) Error() string { return "group lost: " + e.err.Error() }
func (e *groupLostError) Unwrap() error { return e.err }

// sqlGroups is what the handler goroutines of grouped SQL jobs share. Safe for
// concurrent use.
type sqlGroups struct {
	budget  time.Duration // set by New; read-only
	leaders chan struct{} // a place per group open at once (WithSQLGroups)

	mu    sync.Mutex
	queue []*sqlCall // guarded by mu: jobs waiting for a group, oldest first

	// durations: per job class, how long its handler's recent runs took, in nanoseconds
	// (*atomic.Int64): a run shorter than the estimate sets it, a longer one raises it by
	// a sixteenth of the difference, so that runs a busy server slowed down do not send a
	// short handler's jobs to run alone, while a handler that runs long every time gets
	// there within a few dozen runs. A class with none yet runs alone.
	durations sync.Map
	// isolated: per job class said to be isolated, when to ask again (time.Time).
	isolated sync.Map
}

// newSQLGroups returns the groups of a worker whose group budget is budget, at most open
// of them at once; nil when budget is 0 (no groups).
func newSQLGroups(budget time.Duration, open int) *sqlGroups {
	if budget <= 0 {
		return nil
	}
	return &sqlGroups{budget: budget, leaders: make(chan struct{}, max(1, open))}
}

// sqlCall is one job waiting for, or running in, a group.
type sqlCall struct {
	a     *active
	ctx   context.Context
	state atomic.Int32 // callPending, then callTaken by a leader or callAbandoned by its waiter
	done  chan error   // buffered: the outcome, sent once by the leader that took it
}

const (
	callPending int32 = iota
	callTaken
	callAbandoned
)

// groupable tells whether a job of class job may run in a group: its class is not known
// to be isolated, and its recent runs were short (within longSQLJobs budgets). A class
// not seen yet runs alone first: its duration is unknown.
func (g *sqlGroups) groupable(job string) bool {
	if until, ok := g.isolated.Load(job); ok && time.Now().Before(until.(time.Time)) {
		return false
	}
	d, ok := g.durations.Load(job)
	return ok && time.Duration(d.(*atomic.Int64).Load()) <= longSQLJobs*g.budget
}

// ran records a run of a handler of class job that took d.
func (g *sqlGroups) ran(job string, d time.Duration) {
	v, ok := g.durations.Load(job)
	if !ok {
		v, ok = g.durations.LoadOrStore(job, new(atomic.Int64))
	}
	est := v.(*atomic.Int64)
	if old := est.Load(); ok && old > 0 && int64(d) > old {
		est.Store(old + (int64(d)-old)/16)
	} else {
		est.Store(int64(d))
	}
}

func (g *sqlGroups) push(c *sqlCall) {
	g.mu.Lock()
	g.queue = append(g.queue, c)
	g.mu.Unlock()
}

// pop takes the oldest job still waiting, or nil.
func (g *sqlGroups) pop() *sqlCall {
	g.mu.Lock()
	defer g.mu.Unlock()
	for len(g.queue) > 0 {
		c := g.queue[0]
		g.queue[0] = nil
		g.queue = g.queue[1:]
		if c.state.CompareAndSwap(callPending, callTaken) {
			return c
		}
	}
	return nil
}

// runGrouped queues a's SQL job for a group and returns its outcome, leading groups
// while fewer than WithSQLGroups are open, a SQL slot is free and the job still waits.
// wait bounds the wait for a slot, as runAlone's does: a job no group took by then was
// never started (S35). errRunAlone sends the job to runAlone.
func (e *executor) runGrouped(ctx, wait context.Context, a *active) error {
	c := &sqlCall{a: a, ctx: ctx, done: make(chan error, 1)}
	e.groups.push(c)
	for c.state.Load() == callPending {
		select {
		case e.groups.leaders <- struct{}{}:
			select {
			case e.sqlSlots <- struct{}{}:
				e.lead(wait)
				<-e.sqlSlots
			case <-wait.Done():
			}
			<-e.groups.leaders
		case <-wait.Done():
			if c.state.CompareAndSwap(callPending, callAbandoned) {
				return notStarted(wait, context.Cause(wait))
			}
		}
	}
	return <-c.done
}

// lead runs one group of the jobs waiting, on a connection of its own, holding a SQL
// slot. When no connection can be had the jobs wait on, each bounded by its own wait.
func (e *executor) lead(wait context.Context) {
	conn, err := e.acquireForHandler(wait)
	if err != nil {
		return
	}
	defer conn.Release()
	if c := e.groups.pop(); c != nil {
		e.runGroup(conn, c)
	}
}

// runGroup runs first and the jobs waiting after it in one transaction, completes the
// ones that ran with one pgq.complete and commits. A job that raises, times out or is
// refused is rolled back to its savepoint and gets its outcome at once; the others get
// theirs when the commit answers: completed with their effects, or, when the
// transaction ended without a commit, given back (S111).
func (e *executor) runGroup(conn *pgxpool.Conn, first *sqlCall) {
	bctx, cancel := context.WithTimeout(context.Background(), groupCallTimeout)
	defer cancel()
	tx, err := conn.Begin(bctx)
	if err != nil {
		first.done <- errRunAlone
		return
	}
	start := time.Now()
	var ran []*sqlCall // ran and released their savepoints: their outcome is the commit's
	subxacts := 0
	var lost error
	for c := first; c != nil; {
		kept, err := e.runInGroup(bctx, tx, c, c == first)
		if kept {
			ran = append(ran, c)
			subxacts += subxactsPerJob
		}
		if err != nil {
			lost = err
			break
		}
		if time.Since(start) >= e.groups.budget || subxacts+subxactsPerJob > maxGroupSubxacts {
			break
		}
		c = e.groups.pop()
	}
	if lost == nil && len(ran) > 0 {
		lost = e.completeGroup(bctx, tx, ran)
	}
	if lost == nil {
		lost = tx.Commit(bctx)
	} else {
		_ = tx.Rollback(bctx)
	}
	for _, c := range ran {
		if lost != nil {
			c.done <- &groupLostError{err: lost}
		} else {
			c.done <- errCompletedInTx
		}
	}
}

// completeGroup completes the jobs that ran in the group, in its transaction and under
// the worker's own statement_timeout (the last job's is in force). A job not completed
// lost its lease meanwhile: its effects must not commit, so the whole group is lost.
func (e *executor) completeGroup(ctx context.Context, tx pgx.Tx, ran []*sqlCall) error {
	q := dbsqlc.New(tx)
	if err := q.SessionSetJobTimeout(ctx, milliseconds(protocolStatementTimeout)); err != nil {
		return err
	}
	p := dbsqlc.JobCompleteManyParams{Uuids: make([]uuid.UUID, len(ran)), Tokens: make([]uuid.UUID, len(ran))}
	for i, c := range ran {
		p.Uuids[i], p.Tokens[i] = c.a.row.Uuid, c.a.token
	}
	done, err := q.JobCompleteMany(ctx, p)
	switch {
	case err != nil:
		return fmt.Errorf("complete the group's jobs: %w", err)
	case len(done) != len(ran):
		return fmt.Errorf("%d of the group's %d jobs lost their leases before their completion", len(ran)-len(done), len(ran))
	}
	return nil
}

// runInGroup runs c's job in its own savepoint of tx: kept tells that it ran and its
// effects and completion wait for the group's commit. Any other outcome is sent to c
// at once. A non-nil error means the group's transaction is lost: c is then among the
// jobs given back, unless the worker itself cancelled it.
func (e *executor) runInGroup(bctx context.Context, tx pgx.Tx, c *sqlCall, first bool) (kept bool, lost error) {
	a := c.a
	if c.ctx.Err() != nil { // a lost lease, a stop: the reporter reads which from its context
		c.done <- context.Cause(c.ctx)
		return false, nil
	}
	timeout := e.timeoutOf(a.row)
	b := &pgx.Batch{}
	q := dbsqlc.New(batchQueue{b})
	skip := 0
	if first {
		_ = q.SessionSetGroupLimits(c.ctx, milliseconds(idleInTransaction))
		skip = 1
	}
	_ = q.GroupSavepoint(c.ctx)
	_ = q.SessionSetJobTimeout(c.ctx, milliseconds(timeout))
	_ = q.JobRunSQLGrouped(c.ctx, dbsqlc.JobRunSQLGroupedParams{Uuid: a.row.Uuid, Token: a.token})
	_ = q.GroupReleaseSavepoint(c.ctx)
	var t *time.Timer
	if timeout > 0 {
		t = time.AfterFunc(timeout+sqlTimeoutSlack, func() { e.cancel(a, errTimeout) })
	}
	began := time.Now()
	br := tx.SendBatch(c.ctx, b)
	failed, err := stmtNone, error(nil)
	for i := range b.Len() {
		if _, ierr := br.Exec(); ierr != nil && failed == stmtNone {
			failed, err = i-skip, ierr
		}
	}
	if cerr := br.Close(); cerr != nil && failed == stmtNone {
		failed, err = stmtRelease, cerr
	}
	if t != nil {
		t.Stop()
	}
	var pgErr *pgconn.PgError
	switch {
	case failed == stmtNone:
		e.groups.ran(a.row.Job, time.Since(began))
		return true, nil
	case failed < stmtTimeout:
		// The group's limits or the job's savepoint failed: the job never ran, and the
		// transaction is lost with the jobs that ran in it.
		c.done <- errRunAlone
		return false, err
	case !errors.As(err, &pgErr) || failed == stmtRelease || pgErr.Severity == "FATAL" || pgErr.Severity == "PANIC":
		return e.lostWith(c, err)
	}
	// The job's own outcome: back to its savepoint, and the group goes on.
	rq := dbsqlc.New(simpleQueries{tx})
	rerr := rq.GroupRollbackSavepoint(bctx)
	if rerr == nil {
		rerr = rq.GroupReleaseSavepoint(bctx)
	}
	if rerr != nil && pgErr.Code != "PQ100" {
		return e.lostWith(c, err) // what ended the job ended the transaction too
	}
	switch {
	case failed == stmtTimeout:
		c.done <- setupOutcome(c.ctx, err)
	case pgErr.Code == "PQ003":
		if strings.Contains(pgErr.Detail, "isolated") {
			e.groups.isolated.Store(a.row.Job, time.Now().Add(isolatedRecheck))
		}
		c.done <- errRunAlone
	default:
		c.done <- sqlOutcome(c.ctx, err)
	}
	return false, rerr
}

// The statements of a grouped job, in order (the group's limits come before the first
// job's).
const (
	stmtNone = iota - 2
	stmtLimits
	stmtSavepoint
	stmtTimeout
	stmtRun
	stmtRelease
)

// lostWith ends a group whose transaction a job's statement took down: the job is given
// back with the others (S111), unless the worker itself cancelled it (a timeout past
// the server's, a lost lease, a stop), whose ending the reporter reads from its context.
func (e *executor) lostWith(c *sqlCall, err error) (kept bool, lost error) {
	if c.ctx.Err() != nil {
		c.done <- sqlOutcome(c.ctx, err)
		return false, err
	}
	return true, fmt.Errorf("job %s: %w", c.a.row.Uuid, err)
}

// simpleQueries runs sqlc's :exec queries with the simple protocol, which an aborted
// transaction accepts for ROLLBACK TO SAVEPOINT (the extended protocol's prepare of a
// statement not yet cached there is refused).
type simpleQueries struct{ tx pgx.Tx }

func (q simpleQueries) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	return q.tx.Exec(ctx, sql, append([]any{pgx.QueryExecModeSimpleProtocol}, args...)...)
}

func (q simpleQueries) Query(context.Context, string, ...any) (pgx.Rows, error) {
	panic("simpleQueries runs :exec queries only")
}

func (q simpleQueries) QueryRow(context.Context, string, ...any) pgx.Row {
	panic("simpleQueries runs :exec queries only")
}

// batchQueue queues the statements of sqlc's :exec queries into a batch, so that a
// grouped job's savepoint, timeout, call and release go to the server in one round trip.
type batchQueue struct{ b *pgx.Batch }

func (q batchQueue) Exec(_ context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	q.b.Queue(sql, args...)
	return pgconn.CommandTag{}, nil
}

func (q batchQueue) Query(context.Context, string, ...any) (pgx.Rows, error) {
	panic("batchQueue queues :exec queries only")
}

func (q batchQueue) QueryRow(context.Context, string, ...any) pgx.Row {
	panic("batchQueue queues :exec queries only")
}
