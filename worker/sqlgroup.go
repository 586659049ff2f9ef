package worker

import (
	"context"
	"errors"
	"fmt"
	"slices"
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
// backend; then it commits once. The jobs waiting when it looks go to the server
// together, in one round trip (a round), as many as their recent run times fit in the
// budget. A lone job is run at once: no leader waits for more.

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
	// groupCallTimeout bounds each call of a group that belongs to no job (BEGIN, a
	// rollback to a savepoint, the completion, COMMIT): past it the connection is given
	// up and the group is lost (S111).
	groupCallTimeout = 30 * time.Second
)

// errRunAlone tells a grouped job's handler goroutine to run it in a transaction of its
// own: pgq.run_sql_job refused it in a group (PQ003: its class is isolated, or its last
// attempt was lost with its group), or its group could not begin.
var errRunAlone = errors.New("the SQL job runs alone")

// errRoundUnanswered ends a round of a group that the server has not answered within
// its jobs' timeouts and a slack.
var errRoundUnanswered = errors.New("the server did not answer the group's round within its jobs' timeouts")

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
	d, ok := g.estimate(job)
	return ok && d <= longSQLJobs*g.budget
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

// take adds the jobs waiting, oldest first, to round while it holds fewer than max
// jobs and the recent runs of its jobs' classes add up to less than budget.
func (g *sqlGroups) take(round []*sqlCall, max int, budget time.Duration) []*sqlCall {
	var est time.Duration
	for _, c := range round {
		d, _ := g.estimate(c.a.row.Job)
		est += d
	}
	for len(round) < max && est < budget {
		c := g.pop()
		if c == nil {
			break
		}
		round = append(round, c)
		d, _ := g.estimate(c.a.row.Job)
		est += d
	}
	return round
}

// estimate is how long a handler of class job ran recently; ok is false (and d 0)
// when no run of the class has been recorded.
func (g *sqlGroups) estimate(job string) (d time.Duration, ok bool) {
	v, ok := g.durations.Load(job)
	if !ok {
		return 0, false
	}
	return time.Duration(v.(*atomic.Int64).Load()), true
}

// ranInRound records the runs of a round of jobs that took d in all. The server
// answers a round at once, so each job is known only to have run no longer than d:
// within longSQLJobs budgets, each is recorded with its share; past them, which job ran
// long is not known, and each is recorded with d. A short class charged so runs alone
// once its estimate is past the bound, and its first run alone sets it back.
func (g *sqlGroups) ranInRound(round []*sqlCall, d time.Duration) {
	share := d
	if d <= longSQLJobs*g.budget {
		share = d / time.Duration(len(round))
	}
	for _, c := range round {
		g.ran(c.a.row.Job, share)
	}
}

// runGrouped queues a's SQL job for a group and returns its outcome. While the job
// waits and fewer than WithSQLGroups groups are open, it starts a leader, one at a time:
// a goroutine that takes a SQL slot and a connection and runs a group of the jobs
// waiting, which may leave a's to another leader. No handler goroutine leads, so a
// handler that is cancelled never waits for a group of other jobs. wait bounds the wait
// for a slot, as runAlone's does: a job no group took by then was never started (S35).
// errRunAlone sends the job to runAlone.
func (e *executor) runGrouped(ctx, wait context.Context, a *active) error {
	c := &sqlCall{a: a, ctx: ctx, done: make(chan error, 1)}
	e.groups.push(c)
	var led chan error // from the leader this job started: what kept it from leading
	for {
		var leaders chan struct{} // nil: start no leader
		if led == nil && c.state.Load() == callPending {
			leaders = e.groups.leaders // one leader at a time, while the job waits
		}
		select {
		case err := <-c.done:
			return err
		case leaders <- struct{}{}:
			if c.state.Load() != callPending {
				<-e.groups.leaders // a group took the job meanwhile
				continue
			}
			led = make(chan error, 1)
			go e.lead(wait, led)
		case err := <-led:
			led = nil
			if err != nil && wait.Err() == nil && c.state.CompareAndSwap(callPending, callAbandoned) {
				return errRunAlone // no connection for a group: alone, the job meets the same
			}
		case <-wait.Done():
			if c.state.CompareAndSwap(callPending, callAbandoned) {
				return notStarted(wait, context.Cause(wait))
			}
			return <-c.done // a group took it: its outcome comes with the group's
		}
	}
}

// lead runs one group of the jobs waiting, on a connection of its own, holding a SQL
// slot and the place in WithSQLGroups its starter took, and then sends on led what kept
// it from leading (nil when nothing did). wait bounds its wait for a slot and a
// connection.
func (e *executor) lead(wait context.Context, led chan<- error) {
	var err error
	defer func() { led <- err }()
	defer func() { <-e.groups.leaders }()
	select {
	case e.sqlSlots <- struct{}{}:
		defer func() { <-e.sqlSlots }()
	case <-wait.Done():
		return
	}
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
// ones that ran with one pgq.complete and commits. The jobs go to the server in rounds:
// those waiting when a round starts, each in its own savepoint, sent together in one
// round trip. A job that raises, times out or is refused is rolled back to its
// savepoint and gets its outcome at once; the others get theirs when the commit
// answers: completed with their effects, or, when the transaction ended without a
// commit, given back (S111).
func (e *executor) runGroup(conn *pgxpool.Conn, first *sqlCall) {
	bctx, cancel := groupCall()
	tx, err := conn.Begin(bctx)
	cancel()
	if err != nil {
		first.done <- errRunAlone
		return
	}
	start := time.Now()
	var ran []*sqlCall // ran, their savepoints kept: their outcome is the commit's
	var lost error
	var st groupState
	room := maxGroupSubxacts / subxactsPerJob // jobs the group may still keep
	for round := []*sqlCall{first}; len(round) > 0; {
		round = e.groups.take(round, room-len(ran), e.groups.budget-time.Since(start))
		kept, rest, err := e.runRound(tx, round, &st)
		for _, c := range kept {
			c.a.ranInGroup.Store(true)
		}
		ran = append(ran, kept...)
		if err != nil {
			lost = err
			for _, c := range rest {
				c.done <- notRun(c)
			}
			break
		}
		// Jobs a failed one stopped were taken already: they run next, whatever the
		// budget says; others join while the budget lasts.
		round = rest
		if len(round) == 0 && time.Since(start) < e.groups.budget && len(ran) < room {
			if c := e.groups.pop(); c != nil {
				round = append(round, c)
			}
		}
	}
	if lost == nil && len(ran) > 0 {
		lost = e.completeGroup(tx, ran)
	}
	ctx, cancel := groupCall()
	defer cancel()
	if lost == nil {
		lost = tx.Commit(ctx)
	} else {
		_ = tx.Rollback(ctx)
	}
	for _, c := range ran {
		if lost != nil {
			c.done <- &groupLostError{err: lost}
		} else {
			c.done <- errCompletedInTx
		}
	}
}

// notRun is the outcome of a job of a group that was lost before the job ran: run it
// alone, unless its own context ended (a stop, a lost lease), whose ending the
// reporter reads.
func notRun(c *sqlCall) error {
	if c.ctx.Err() != nil {
		return context.Cause(c.ctx)
	}
	return errRunAlone
}

// groupCall is the context of one call of a group that belongs to no job.
func groupCall() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), groupCallTimeout)
}

// completeGroup completes the jobs that ran in the group, in its transaction and under
// the worker's own statement_timeout (the last job's is in force). A job not completed
// lost its lease meanwhile: its effects must not commit, so the whole group is lost.
func (e *executor) completeGroup(tx pgx.Tx, ran []*sqlCall) error {
	ctx, cancel := groupCall()
	defer cancel()
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

// groupState is what a group's transaction has set so far.
type groupState struct {
	limits bool // the group's limits are set (SessionSetGroupLimits)
}

// groupStmt is one statement of a round: what it is, and whose (an index in the round).
type groupStmt struct{ kind, job int }

// The statements of a round, in order: the group's limits before its first job, then
// per job its savepoint, its timeout and its call; and the end of the round's batch.
const (
	stmtLimits = iota
	stmtSavepoint
	stmtTimeout
	stmtRun
	stmtClose
)

// runRound runs the jobs of round in tx, each in its own savepoint and as its own
// statement under its own statement_timeout (S110), sent together in one batch. kept:
// the jobs that ran, whose effects and completion wait for the group's commit. rest:
// jobs after one that failed, which did not run; the group runs them next. Every other
// job gets its outcome here. A non-nil error means the group's transaction is lost:
// the jobs of rest then never ran.
//
// A job that ran keeps its savepoint open (the next job's nests in it, and the commit
// ends them all), and so do the settings its handler made for its transaction: each
// job sets its own timeout, whatever the job before it left in force. A job that
// failed is rolled back to its savepoint.
//
// A job whose context ends while the round runs (a stop, a lost lease) ends the round's
// call, and with it the connection and the group. So does the worker's own timer, the
// sum of the round's timeouts and a slack past its start: a server that answers ends
// every job by its statement_timeout before, so one that has not answered by then is
// not the running job's fault, and the round's jobs are given back (S35, S111).
func (e *executor) runRound(tx pgx.Tx, round []*sqlCall, st *groupState) (kept, rest []*sqlCall, lost error) {
	var live []*sqlCall
	for _, c := range round {
		if c.ctx.Err() != nil {
			c.done <- context.Cause(c.ctx)
		} else {
			live = append(live, c)
		}
	}
	if len(live) == 0 {
		return nil, nil, nil
	}
	// A job's statement runs until its own timeout.
	rctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	b := &pgx.Batch{}
	q := dbsqlc.New(batchQueue{b})
	var stmts []groupStmt
	if !st.limits {
		_ = q.SessionSetGroupLimits(rctx, milliseconds(idleInTransaction))
		stmts = append(stmts, groupStmt{stmtLimits, 0})
	}
	total := sqlTimeoutSlack
	for i, c := range live {
		_ = q.GroupSavepoint(rctx)
		timeout := e.timeoutOf(c.a.row)
		_ = q.SessionSetJobTimeout(rctx, milliseconds(timeout))
		stmts = append(stmts, groupStmt{stmtSavepoint, i}, groupStmt{stmtTimeout, i})
		_ = q.JobRunSQLGrouped(rctx, dbsqlc.JobRunSQLGroupedParams{Uuid: c.a.row.Uuid, Token: c.a.token})
		stmts = append(stmts, groupStmt{stmtRun, i})
		if total > 0 && timeout > 0 {
			total += timeout
		} else {
			total = 0 // a job without a timeout: no timer
		}
		defer context.AfterFunc(c.ctx, func() { cancel(context.Cause(c.ctx)) })()
	}
	if total > 0 {
		defer time.AfterFunc(total, func() { cancel(errRoundUnanswered) }).Stop()
	}
	began := time.Now()
	br := tx.SendBatch(rctx, b)
	failed, err := -1, error(nil)
	for i := range stmts {
		if _, ierr := br.Exec(); ierr != nil && failed < 0 {
			failed, err = i, ierr
		}
	}
	if cerr := br.Close(); cerr != nil && failed < 0 {
		stmts = append(stmts, groupStmt{stmtClose, len(live) - 1})
		failed, err = len(stmts)-1, cerr
	}
	if failed < 0 {
		st.limits = true
		e.groups.ranInRound(live, time.Since(began))
		return live, nil, nil
	}
	f := stmts[failed]
	kept, c, rest := slices.Clone(live[:f.job]), live[f.job], live[f.job+1:]
	var pgErr *pgconn.PgError
	switch {
	case !errors.As(err, &pgErr):
		// The connection ended, or the round's call was ended: the server sends a
		// round's results at its end, so which of the jobs from the first unanswered
		// one on ran is not known, and each counts as having run.
		if rctx.Err() != nil {
			err = fmt.Errorf("%w: %w", context.Cause(rctx), err) // what ended the call
		}
		for _, c := range live[f.job:] {
			kept, _, _ = e.lostWith(kept, c, nil, err)
		}
		return kept, nil, err
	case f.kind == stmtLimits:
		return nil, live, err // nothing ran
	case f.kind == stmtSavepoint:
		c.done <- notRun(c) // the job never ran, and the transaction is lost
		return kept, rest, err
	case f.kind == stmtClose:
		return live, nil, err
	case pgErr.Severity == "FATAL" || pgErr.Severity == "PANIC":
		return e.lostWith(kept, c, rest, err) // the server stopped at c
	}
	st.limits = true
	// The job's own outcome: back to its savepoint, and the group goes on.
	ctx, cancelCall := groupCall()
	defer cancelCall()
	rq := dbsqlc.New(simpleQueries{tx})
	rerr := rq.GroupRollbackSavepoint(ctx)
	if rerr == nil {
		rerr = rq.GroupReleaseSavepoint(ctx)
	}
	if rerr != nil && pgErr.Code != "PQ100" {
		return e.lostWith(kept, c, rest, err) // what ended the job ended the transaction too
	}
	switch {
	case f.kind == stmtTimeout:
		c.done <- setupOutcome(c.ctx, err)
	case pgErr.Code == "PQ003":
		if strings.Contains(pgErr.Detail, "isolated") {
			e.groups.isolated.Store(c.a.row.Job, time.Now().Add(isolatedRecheck))
		}
		c.done <- errRunAlone
	default:
		if pgErr.Code == "57014" && strings.Contains(pgErr.Message, "statement timeout") {
			e.groups.ran(c.a.row.Job, e.timeoutOf(c.a.row)) // a class that runs past its timeout runs alone
		}
		c.done <- sqlOutcome(c.ctx, err)
	}
	return kept, rest, rerr
}

// lostWith ends a round whose statement of job c took the group's transaction down: c
// is given back with the jobs that ran (S111), unless the worker itself cancelled it (a
// timeout past the server's, a lost lease, a stop), whose ending the reporter reads
// from its context. The jobs after c never ran.
func (e *executor) lostWith(kept []*sqlCall, c *sqlCall, rest []*sqlCall, err error) ([]*sqlCall, []*sqlCall, error) {
	if c.ctx.Err() != nil {
		c.done <- sqlOutcome(c.ctx, err)
	} else {
		kept = append(kept, c)
	}
	return kept, rest, fmt.Errorf("job %s: %w", c.a.row.Uuid, err)
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
// round's statements (each job's savepoint, timeout and call) go in one round trip.
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
