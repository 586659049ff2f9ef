package pgq

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/pgq-dev/pgq/internal/dbsqlc"
)

// Step is one job of a chain or a batch: its name, its arguments (encoded as the JSON
// payload, as Dispatch does) and dispatch options (Queue, Tries, Backoff, Delay,
// UniqueKey, ...; Handler, UniqueBy and DebounceBy belong to DefineJob).
type Step struct {
	Job     string
	Args    any
	Options []Option
}

// ChainOptions configure DispatchChain. OnFailure names a job queued once, with
// {"chain_id", "batch_id", "step", "job", "job_uuid", "exception"}, when a step fails
// for good (S71). Queue applies to every step (and OnFailure) that names none.
type ChainOptions struct {
	OnFailure string
	Queue     string
}

// BatchOptions configure DispatchBatch (S73-S76). Then runs once when every member
// succeeded, Catch once at the first member failing for good, Finally once when every
// member has finished; each gets {"batch_id", "name", "total_jobs", "pending_jobs",
// "failed_jobs", "failed_job_ids", "cancelled"}. Without AllowFailures the first
// failure cancels the batch. Queue applies to members and callbacks that name none.
type BatchOptions struct {
	Name          string
	Then          string
	Catch         string
	Finally       string
	AllowFailures bool
	Queue         string
}

// BatchMember is one member of a batch: a job (BatchJob) or a chain (BatchChain),
// which counts once.
type BatchMember struct {
	step      *Step
	chain     []Step
	onFailure string
}

// BatchJob is a batch member that is one job.
func BatchJob(job string, args any, opts ...Option) BatchMember {
	return BatchMember{step: &Step{Job: job, Args: args, Options: opts}}
}

// BatchChain is a batch member that is a chain of steps; onFailure ("" for none) as in
// ChainOptions.
func BatchChain(onFailure string, steps ...Step) BatchMember {
	return BatchMember{chain: steps, onFailure: onFailure}
}

// DispatchChain queues a chain (pgq.dispatch_chain): its first step now, each next one
// by the transaction that completes the one before (S70); a step failing for good, or
// dropped as a unique duplicate, stops it and queues o.OnFailure (S71, S72). Returns
// the chain's id (see pgq.chains). Commits on its own; DispatchChainTx dispatches in
// your transaction. Errors wrap ErrInvalidArgument for bad steps.
func (c *Client) DispatchChain(ctx context.Context, steps []Step, o ChainOptions) (uuid.UUID, error) {
	return c.tracedWorkflow(ctx, "chain", o.Queue, len(steps), func(tc traceContext) (uuid.UUID, error) {
		return dispatchChain(ctx, c.q, steps, o, tc)
	})
}

// DispatchChainTx is DispatchChain inside tx: nothing exists unless tx commits (S2).
func (c *Client) DispatchChainTx(ctx context.Context, tx pgx.Tx, steps []Step, o ChainOptions) (uuid.UUID, error) {
	return c.tracedWorkflow(ctx, "chain", o.Queue, len(steps), func(tc traceContext) (uuid.UUID, error) {
		return dispatchChain(ctx, c.q.WithTx(tx), steps, o, tc)
	})
}

// DispatchBatch queues members as one batch (pgq.dispatch_batch) and returns its id
// (see pgq.batches, Batch). Commits on its own; DispatchBatchTx dispatches in your
// transaction. Errors wrap ErrInvalidArgument for bad members or options.
func (c *Client) DispatchBatch(ctx context.Context, members []BatchMember, o BatchOptions) (uuid.UUID, error) {
	return c.tracedWorkflow(ctx, "batch", o.Queue, len(members), func(tc traceContext) (uuid.UUID, error) {
		return dispatchJobBatch(ctx, c.q, members, o, tc)
	})
}

// DispatchBatchTx is DispatchBatch inside tx: nothing exists unless tx commits (S2).
func (c *Client) DispatchBatchTx(ctx context.Context, tx pgx.Tx, members []BatchMember, o BatchOptions) (uuid.UUID, error) {
	return c.tracedWorkflow(ctx, "batch", o.Queue, len(members), func(tc traceContext) (uuid.UUID, error) {
		return dispatchJobBatch(ctx, c.q.WithTx(tx), members, o, tc)
	})
}

// AddToBatch adds members to a batch that has not finished and is not cancelled (S73),
// and returns how many were added. Only the role that dispatched the batch (or a
// member of that role) may; a running job of the batch adds with AddToBatchAsJob
// (S93). Errors wrap ErrBatchClosed when the batch finished or was cancelled,
// ErrNotFound when there is no such batch, ErrPermission when the caller may not add.
func (c *Client) AddToBatch(ctx context.Context, batch uuid.UUID, members []BatchMember) (int, error) {
	return addToBatch(ctx, c.q, batch, nil, nil, members)
}

// AddToBatchAsJob is AddToBatch for a running job of the batch, whatever role
// dispatched it: job is the job's uuid and token the lease token of its attempt, which
// only the worker running it holds (S93). A handler calls worker.JobBatch.Add, which
// passes them. Errors as AddToBatch's.
func (c *Client) AddToBatchAsJob(ctx context.Context, batch, job, token uuid.UUID, members []BatchMember) (int, error) {
	return addToBatch(ctx, c.q, batch, &job, &token, members)
}

// CancelBatch cancels a batch (pgq.cancel_batch, S74): its waiting jobs now, later
// pickups before they run; running jobs finish; only Finally still runs. Returns how
// many waiting jobs were cancelled, or ErrNotFound. Needs the admin role.
func (c *Client) CancelBatch(ctx context.Context, batch uuid.UUID) (int, error) {
	n, err := c.q.BatchCancel(ctx, batch)
	if err != nil {
		return 0, fmt.Errorf("cancel batch %s: %w", batch, MapError(err))
	}
	if n < 0 {
		return 0, fmt.Errorf("cancel batch %s: %w", batch, ErrNotFound)
	}
	return int(n), nil
}

// RetryBatchFailed retries every failed job of a batch, its chains' failed steps
// included (pgq.retry_batch_failed, S96), as RetryFailed retries each: the batch counts
// them pending again, a chain resumes at its failed step, and the batch's Then job runs
// if they all succeed and it has not run. Each retry is recorded in pgq.actions. Returns
// the uuids retried (none when nothing failed). Errors wrap ErrNotFound when there is no
// such batch, and ErrBatchClosed when it was cancelled (a retried job would be
// cancelled before it runs). Needs the admin role.
func (c *Client) RetryBatchFailed(ctx context.Context, batch uuid.UUID) ([]uuid.UUID, error) {
	ids, err := c.q.BatchRetryFailed(ctx, batch)
	if err != nil {
		return nil, fmt.Errorf("retry failed jobs of batch %s: %w", batch, MapError(err))
	}
	out := make([]uuid.UUID, 0, len(ids))
	for _, id := range ids {
		if id != nil {
			out = append(out, *id)
		}
	}
	return out, nil
}

// Batch is a batch as pgq.batches shows it: Laravel's job_batches columns (PendingJobs
// keeps failed members, as Laravel's does) and more.
type Batch struct {
	ID             uuid.UUID
	Name           string
	TotalJobs      int
	PendingJobs    int
	FailedJobs     int
	FailedJobIDs   []uuid.UUID
	Options        json.RawMessage
	CancelledAt    *time.Time
	CreatedAt      time.Time
	FinishedAt     *time.Time
	UnfinishedJobs int     // members still waiting or running
	CancelledJobs  int     // members cancelled
	SucceededJobs  int     // members that succeeded
	Progress       float64 // percent of members finished
	ThenAt         *time.Time
	CatchAt        *time.Time
	FinallyAt      *time.Time
	// State is running or cancelling until every member has finished; then failed (a
	// member failed for good), cancelled (the batch or a member was) or succeeded.
	State string
}

// Batch returns the batch id, or ErrNotFound.
func (c *Client) Batch(ctx context.Context, id uuid.UUID) (*Batch, error) {
	row, err := c.q.BatchGet(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("batch %s: %w", id, MapError(err))
	}
	return batchFromRow(row), nil
}

// Batches lists batches, newest first, at most limit; with unfinishedOnly only those
// that have not finished.
func (c *Client) Batches(ctx context.Context, limit int, unfinishedOnly bool) ([]*Batch, error) {
	rows, err := c.q.BatchList(ctx, dbsqlc.BatchListParams{UnfinishedOnly: unfinishedOnly, Max: int32(limit)})
	if err != nil {
		return nil, fmt.Errorf("list batches: %w", MapError(err))
	}
	out := make([]*Batch, len(rows))
	for i, r := range rows {
		out[i] = batchFromRow(r)
	}
	return out, nil
}

// JobBatch returns the batch a live job belongs to, or uuid.Nil (a handler's
// job.Batch() calls it).
func (c *Client) JobBatch(ctx context.Context, job uuid.UUID) (uuid.UUID, error) {
	id, err := c.q.JobBatchGet(ctx, job)
	if err != nil {
		return uuid.Nil, fmt.Errorf("batch of job %s: %w", job, MapError(err))
	}
	return id, nil
}

func batchFromRow(r *dbsqlc.PgqBatch) *Batch {
	b := &Batch{ID: r.ID, TotalJobs: int(r.TotalJobs), PendingJobs: int(r.PendingJobs), FailedJobs: int(r.FailedJobs),
		FailedJobIDs: r.FailedJobIds, Options: r.Options, CancelledAt: r.CancelledAt, CreatedAt: r.CreatedAt,
		FinishedAt: r.FinishedAt, UnfinishedJobs: int(r.UnfinishedJobs), CancelledJobs: int(r.CancelledJobs),
		SucceededJobs: int(r.SucceededJobs), Progress: r.Progress, ThenAt: r.ThenAt, CatchAt: r.CatchAt,
		FinallyAt: r.FinallyAt, State: r.State}
	if r.Name != nil {
		b.Name = *r.Name
	}
	return b
}

func dispatchChain(ctx context.Context, q *dbsqlc.Queries, steps []Step, o ChainOptions, tc traceContext) (uuid.UUID, error) {
	entries, err := stepEntries(steps)
	if err != nil {
		return uuid.Nil, fmt.Errorf("dispatch chain: %w", err)
	}
	id, err := q.ChainDispatch(ctx, dbsqlc.ChainDispatchParams{Steps: entries, OnFailure: nonEmpty(o.OnFailure), Queue: nonEmpty(o.Queue),
		Traceparent: tc.parent, Tracestate: tc.state})
	if err != nil {
		return uuid.Nil, fmt.Errorf("dispatch chain: %w", MapError(err))
	}
	return id, nil
}

func dispatchJobBatch(ctx context.Context, q *dbsqlc.Queries, members []BatchMember, o BatchOptions, tc traceContext) (uuid.UUID, error) {
	entries, err := memberEntries(members)
	if err != nil {
		return uuid.Nil, fmt.Errorf("dispatch batch: %w", err)
	}
	id, err := q.BatchDispatch(ctx, dbsqlc.BatchDispatchParams{
		Jobs: entries, Name: nonEmpty(o.Name), ThenJob: nonEmpty(o.Then), CatchJob: nonEmpty(o.Catch),
		FinallyJob: nonEmpty(o.Finally), AllowFailures: o.AllowFailures, Queue: nonEmpty(o.Queue),
		Traceparent: tc.parent, Tracestate: tc.state,
	})
	if err != nil {
		return uuid.Nil, fmt.Errorf("dispatch batch: %w", MapError(err))
	}
	return id, nil
}

func addToBatch(ctx context.Context, q *dbsqlc.Queries, batch uuid.UUID, job, token *uuid.UUID, members []BatchMember) (int, error) {
	entries, err := memberEntries(members)
	if err != nil {
		return 0, fmt.Errorf("add to batch %s: %w", batch, err)
	}
	n, err := q.BatchAdd(ctx, dbsqlc.BatchAddParams{Batch: batch, Jobs: entries, Job: job, Token: token})
	if err != nil {
		return 0, fmt.Errorf("add to batch %s: %w", batch, MapError(err))
	}
	return int(n), nil
}

func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func memberEntries(members []BatchMember) (json.RawMessage, error) {
	out := make([]any, len(members))
	for i, m := range members {
		if m.step != nil {
			e, err := stepEntry(*m.step)
			if err != nil {
				return nil, err
			}
			out[i] = e
			continue
		}
		steps := make([]any, len(m.chain))
		for j, s := range m.chain {
			e, err := stepEntry(s)
			if err != nil {
				return nil, err
			}
			steps[j] = e
		}
		c := map[string]any{"chain": steps}
		if m.onFailure != "" {
			c["on_failure"] = m.onFailure
		}
		out[i] = c
	}
	return json.Marshal(out)
}

func stepEntries(steps []Step) (json.RawMessage, error) {
	out := make([]any, len(steps))
	for i, s := range steps {
		e, err := stepEntry(s)
		if err != nil {
			return nil, err
		}
		out[i] = e
	}
	return json.Marshal(out)
}

// stepEntry is a step as pgq.dispatch_chain and pgq.dispatch_batch take it:
// {"job", "payload", and the options set}. Intervals go as seconds.
func stepEntry(s Step) (map[string]any, error) {
	payload, err := encodePayload(s.Args)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.Job, err)
	}
	o := collect(append(argOptions(s.Args), s.Options...))
	if err := o.dispatchOnly("step " + s.Job); err != nil {
		return nil, err
	}
	e := map[string]any{"job": s.Job, "payload": payload}
	set := func(k string, v any, ok bool) {
		if ok {
			e[k] = v
		}
	}
	secs := func(d *time.Duration) any {
		if d == nil {
			return nil
		}
		return d.Seconds()
	}
	set("queue", o.queue, o.queue != nil)
	set("delay", secs(o.delay), o.delay != nil)
	set("tries", o.tries, o.tries != nil)
	set("backoff", o.backoff, o.backoff != nil)
	set("retry_until", o.retryUntil, o.retryUntil != nil)
	set("retry_for", secs(o.retryFor), o.retryFor != nil)
	set("max_exceptions", o.maxExceptions, o.maxExceptions != nil)
	set("timeout", o.timeout, o.timeout != nil)
	set("fail_on_timeout", o.failOnTimeout, o.failOnTimeout != nil)
	set("priority", o.priority, o.priority != 0)
	set("unique_key", o.uniqueKey, o.uniqueKey != nil)
	set("unique_for", secs(o.uniqueFor), o.uniqueFor != nil)
	set("unique_until", o.uniqueUntil, o.uniqueUntil != nil)
	set("debounce_key", o.debounceKey, o.debounceKey != nil)
	set("debounce_for", secs(o.debounceFor), o.debounceFor != nil)
	set("debounce_max_wait", secs(o.debounceMaxWait), o.debounceMaxWait != nil)
	set("middleware", json.RawMessage(o.middleware), o.middleware != nil)
	return e, nil
}

// Chain is a chain as pgq.chains shows it.
type Chain struct {
	ID         uuid.UUID
	BatchID    *uuid.UUID
	State      string // running, succeeded, failed, cancelled
	Step       int    // the step queued now, or where the chain stopped (1-based)
	TotalSteps int
	Job        string // the job of that step
	JobUUID    *uuid.UUID
	Exception  string // why a failed or cancelled chain stopped
	CreatedAt  time.Time
	FinishedAt *time.Time
}

// Chain returns the chain id, or ErrNotFound.
func (c *Client) Chain(ctx context.Context, id uuid.UUID) (*Chain, error) {
	row, err := c.q.ChainGet(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("chain %s: %w", id, MapError(err))
	}
	return chainFromRow(row), nil
}

// BatchChains returns the chains of a batch, oldest first.
func (c *Client) BatchChains(ctx context.Context, batch uuid.UUID) ([]*Chain, error) {
	rows, err := c.q.ChainListByBatch(ctx, batch)
	if err != nil {
		return nil, fmt.Errorf("chains of batch %s: %w", batch, MapError(err))
	}
	out := make([]*Chain, len(rows))
	for i, r := range rows {
		out[i] = chainFromRow(r)
	}
	return out, nil
}

func chainFromRow(r *dbsqlc.PgqChain) *Chain {
	ch := &Chain{ID: r.ID, BatchID: r.BatchID, State: r.State, Step: int(r.Step), TotalSteps: int(r.TotalSteps),
		Job: r.Job, JobUUID: r.JobUuid, CreatedAt: r.CreatedAt, FinishedAt: r.FinishedAt}
	if r.Exception != nil {
		ch.Exception = *r.Exception
	}
	return ch
}
