package pgq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgq-dev/pgq/internal/dbsqlc"
)

// Client dispatches jobs and operates the queue. It is safe for concurrent use.
type Client struct {
	pool *pgxpool.Pool
	q    *dbsqlc.Queries
	tel  *telemetry // nil: no TracerProvider or MeterProvider
}

// NewClient returns a Client using pool. The schema must be migrated (Migrate). Options
// TracerProvider and MeterProvider make it trace and count its dispatches.
func NewClient(pool *pgxpool.Pool, opts ...ClientOption) (*Client, error) {
	if pool == nil {
		return nil, errors.New("pgq: NewClient: pool is nil")
	}
	var cfg clientConfig
	for _, o := range opts {
		o(&cfg)
	}
	tel, err := newTelemetry(cfg)
	if err != nil {
		return nil, err
	}
	return &Client{pool: pool, q: dbsqlc.New(pool), tel: tel}, nil
}

// Pool returns the pool the client was made with.
func (c *Client) Pool() *pgxpool.Pool { return c.pool }

// Dispatch queues one job named job with args encoded as its JSON payload and returns
// its uuid, or uuid.Nil when a unique lock dropped it (S21). Options override the job
// class (S1); args implementing UniqueArgs, DebouncedArgs or MiddlewareArgs add their
// options. It
// commits on its own; use DispatchTx to dispatch inside your transaction. Errors wrap
// ErrInvalidArgument for bad input.
func (c *Client) Dispatch(ctx context.Context, job string, args any, opts ...Option) (uuid.UUID, error) {
	if c.tel != nil {
		return c.tracedOne(ctx, nil, job, args, opts)
	}
	return dispatchOne(ctx, c.q, job, args, opts)
}

// DispatchTx queues one job in tx: it exists only if tx commits, and workers are woken
// on commit (S2).
func (c *Client) DispatchTx(ctx context.Context, tx pgx.Tx, job string, args any, opts ...Option) (uuid.UUID, error) {
	if c.tel != nil {
		return c.tracedOne(ctx, tx, job, args, opts)
	}
	return dispatchOne(ctx, c.q.WithTx(tx), job, args, opts)
}

// DispatchMany queues one job per element of args, all with the same name and options,
// in one round trip (pgq.dispatch_many), and returns their uuids in order (uuid.Nil for
// a dropped unique duplicate). Arguments implementing UniqueArgs or DebouncedArgs are
// dispatched one call each, since each carries its own key. With ByCopy the payloads go
// by COPY instead: the same checks, the same result.
func (c *Client) DispatchMany(ctx context.Context, job string, args []any, opts ...Option) ([]uuid.UUID, error) {
	if c.tel != nil {
		return c.tracedMany(ctx, nil, job, args, opts)
	}
	if collect(opts).byCopy {
		return c.dispatchCopy(ctx, nil, job, args, opts)
	}
	return c.dispatchMany(ctx, nil, job, args, opts)
}

// DispatchManyTx is DispatchMany inside tx.
func (c *Client) DispatchManyTx(ctx context.Context, tx pgx.Tx, job string, args []any, opts ...Option) ([]uuid.UUID, error) {
	if c.tel != nil {
		return c.tracedMany(ctx, tx, job, args, opts)
	}
	if collect(opts).byCopy {
		return c.dispatchCopy(ctx, tx, job, args, opts)
	}
	return c.dispatchMany(ctx, tx, job, args, opts)
}

// stagedTable is the staging table pgq.stage_dispatch makes in the session (S68).
var stagedTable = pgx.Identifier{"pg_temp", "pgq_staged_payloads"}

// dispatchCopy stages the payloads with COPY and queues them with pgq.dispatch_staged,
// in tx, or in a transaction of its own when tx is nil (ByCopy). Arguments carrying
// unique or debounce keys cannot go this way: a dropped duplicate has no uuid to put in
// the array pgq.dispatch_staged returns.
func (c *Client) dispatchCopy(ctx context.Context, tx pgx.Tx, job string, args []any, opts []Option) ([]uuid.UUID, error) {
	if len(args) > 0 {
		opts = append(argOptions(args[0]), opts...)
	}
	s := collect(opts)
	if err := s.dispatchOnly("dispatch"); err != nil {
		return nil, err
	}
	if s.keyed() {
		return nil, fmt.Errorf("dispatch %s: %w: ByCopy cannot be combined with unique or debounce options", job, ErrInvalidArgument)
	}
	if len(args) == 0 {
		return []uuid.UUID{}, nil
	}
	payloads := make([]json.RawMessage, len(args))
	for i, a := range args {
		p, err := encodePayload(a)
		if err != nil {
			return nil, fmt.Errorf("dispatch %s: %w", job, err)
		}
		payloads[i] = p
	}
	return c.inTx(ctx, tx, job, func(tx pgx.Tx) ([]uuid.UUID, error) { return c.copyStaged(ctx, tx, job, payloads, s) })
}

// copyStaged stages payloads by COPY in tx and queues them (pgq.dispatch_staged).
func (c *Client) copyStaged(ctx context.Context, tx pgx.Tx, job string, payloads []json.RawMessage, s settings) ([]uuid.UUID, error) {
	q := c.q.WithTx(tx)
	if _, err := q.JobStageDispatch(ctx); err != nil {
		return nil, fmt.Errorf("dispatch %s: stage: %w", job, MapError(err))
	}
	if _, err := tx.CopyFrom(ctx, stagedTable, []string{"payload"}, pgx.CopyFromSlice(len(payloads), func(i int) ([]any, error) {
		return []any{payloads[i]}, nil
	})); err != nil {
		return nil, fmt.Errorf("dispatch %s: copy: %w", job, MapError(err))
	}
	ids, err := q.JobDispatchStaged(ctx, dbsqlc.JobDispatchStagedParams{
		Job:           job,
		Queue:         s.queue,
		Delay:         s.delay,
		Tries:         s.tries,
		Backoff:       s.backoff,
		RetryUntil:    s.retryUntil,
		RetryFor:      s.retryFor,
		MaxExceptions: s.maxExceptions,
		Timeout:       s.timeout,
		FailOnTimeout: s.failOnTimeout,
		Priority:      s.priority,
		Middleware:    s.middleware,
		Traceparent:   s.trace.parent,
		Tracestate:    s.trace.state,
	})
	if err != nil {
		return nil, fmt.Errorf("dispatch %s: %w", job, MapError(err))
	}
	return ids, nil
}

// inTx runs dispatch in tx, or in a transaction of its own, committed after it, when tx
// is nil.
func (c *Client) inTx(ctx context.Context, tx pgx.Tx, job string, dispatch func(pgx.Tx) ([]uuid.UUID, error)) (ids []uuid.UUID, err error) {
	if tx != nil {
		return dispatch(tx)
	}
	if tx, err = c.pool.Begin(ctx); err != nil {
		return nil, fmt.Errorf("dispatch %s: %w", job, MapError(err))
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback(ctx)
			return
		}
		if err = tx.Commit(ctx); err != nil {
			ids, err = nil, fmt.Errorf("dispatch %s: %w", job, MapError(err))
		}
	}()
	return dispatch(tx)
}

// dispatchPart is the most payloads one pgq.dispatch_many call of DispatchMany carries,
// as pgq.dispatch_staged's calls do (pgq._staged_batch): each function an array
// argument passes through walks and copies it whole, and the time per payload of that
// grows with the array, so a larger dispatch goes in parts of one transaction (S124).
const dispatchPart = 16384

// dispatchMany queues args in tx (nil: the pool's), in parts of at most dispatchPart of
// about equal size and in a transaction of its own when there are several, unless they
// carry unique or debounce keys: a key stays with the whole dispatch.
func (c *Client) dispatchMany(ctx context.Context, tx pgx.Tx, job string, args []any, opts []Option) ([]uuid.UUID, error) {
	q := c.q
	if tx != nil {
		q = q.WithTx(tx)
	}
	parts := (len(args) + dispatchPart - 1) / dispatchPart
	if parts <= 1 || collect(opts).keyed() || len(argOptions(args[0])) > 0 {
		return dispatchMany(ctx, q, job, args, opts)
	}
	return c.inTx(ctx, tx, job, func(tx pgx.Tx) ([]uuid.UUID, error) {
		ids := make([]uuid.UUID, 0, len(args))
		for part := range slices.Chunk(args, (len(args)+parts-1)/parts) {
			got, err := dispatchBatch(ctx, c.q.WithTx(tx), job, part, opts)
			if err != nil {
				return nil, err
			}
			ids = append(ids, got...)
		}
		return ids, nil
	})
}

func dispatchOne(ctx context.Context, q *dbsqlc.Queries, job string, args any, opts []Option) (uuid.UUID, error) {
	ids, err := dispatchBatch(ctx, q, job, []any{args}, append(argOptions(args), opts...))
	if err != nil {
		return uuid.Nil, err
	}
	return ids[0], nil
}

func dispatchMany(ctx context.Context, q *dbsqlc.Queries, job string, args []any, opts []Option) ([]uuid.UUID, error) {
	if len(args) > 0 && len(argOptions(args[0])) > 0 {
		ids := make([]uuid.UUID, len(args))
		for i, a := range args {
			id, err := dispatchOne(ctx, q, job, a, opts)
			if err != nil {
				return nil, err
			}
			ids[i] = id
		}
		return ids, nil
	}
	return dispatchBatch(ctx, q, job, args, opts)
}

func dispatchBatch(ctx context.Context, q *dbsqlc.Queries, job string, args []any, opts []Option) ([]uuid.UUID, error) {
	s := collect(opts)
	if err := s.dispatchOnly("dispatch"); err != nil {
		return nil, err
	}
	// As text: the query turns each into jsonb (sql/queries/dispatch.sql says why).
	payloads := make([]string, len(args))
	for i, a := range args {
		p, err := encodePayload(a)
		if err != nil {
			return nil, fmt.Errorf("dispatch %s: %w", job, err)
		}
		payloads[i] = string(p)
	}
	rows, err := q.JobDispatchMany(ctx, dbsqlc.JobDispatchManyParams{
		Job:             job,
		Payloads:        payloads,
		Queue:           s.queue,
		Delay:           s.delay,
		Tries:           s.tries,
		Backoff:         s.backoff,
		RetryUntil:      s.retryUntil,
		RetryFor:        s.retryFor,
		MaxExceptions:   s.maxExceptions,
		Timeout:         s.timeout,
		FailOnTimeout:   s.failOnTimeout,
		Priority:        s.priority,
		UniqueKey:       s.uniqueKey,
		UniqueFor:       s.uniqueFor,
		UniqueUntil:     s.uniqueUntil,
		DebounceKey:     s.debounceKey,
		DebounceFor:     s.debounceFor,
		DebounceMaxWait: s.debounceMaxWait,
		Middleware:      s.middleware,
		Traceparent:     s.trace.parent,
		Tracestate:      s.trace.state,
	})
	if err != nil {
		return nil, fmt.Errorf("dispatch %s: %w", job, MapError(err))
	}
	return derefAll(rows), nil
}

// encodePayload turns args into the job's JSON payload: json.RawMessage and []byte are
// taken as JSON text, anything else is marshalled; nil becomes {}.
func encodePayload(args any) (json.RawMessage, error) {
	var raw []byte
	switch a := args.(type) {
	case nil:
		return json.RawMessage("{}"), nil
	case json.RawMessage:
		raw = a
	case []byte:
		raw = a
	default:
		b, err := json.Marshal(a)
		if err != nil {
			return nil, fmt.Errorf("%w: encode payload: %w", ErrInvalidArgument, err)
		}
		raw = b
	}
	if !json.Valid(raw) {
		return nil, fmt.Errorf("%w: payload is not valid JSON: %.60q", ErrInvalidArgument, raw)
	}
	return raw, nil
}

// derefAll keeps positions: a NULL (dropped) uuid becomes uuid.Nil.
func derefAll(ids []*uuid.UUID) []uuid.UUID {
	out := make([]uuid.UUID, len(ids))
	for i, id := range ids {
		if id != nil {
			out[i] = *id
		}
	}
	return out
}

// DefineJob upserts the job class name (pgq.define_job): its queue (Queue, default
// "default"), SQL handler (Handler), Tries, Backoff, MaxExceptions, Timeout,
// FailOnTimeout, RetryFor, UniqueFor/UniqueBy/UniqueUntilProcessing and
// DebounceFor/DebounceBy/DebounceMaxWait, WithMiddleware, and the ceilings of what a
// dispatch may set beyond them (MaxTries, MaxRetryFor, MinBackoff, MaxTimeout, S90),
// and Isolated (S112). The whole declaration is replaced. Jobs already dispatched keep their settings (S1).
func (c *Client) DefineJob(ctx context.Context, name string, opts ...Option) error {
	s := collect(opts)
	if err := s.classOnly(); err != nil {
		return err
	}
	queue := "default"
	if s.queue != nil {
		queue = *s.queue
	}
	_, err := c.q.JobClassDefine(ctx, dbsqlc.JobClassDefineParams{
		Name:            name,
		Queue:           queue,
		Handler:         s.handler,
		Tries:           s.tries,
		Backoff:         s.backoff,
		MaxExceptions:   s.maxExceptions,
		Timeout:         s.timeout,
		FailOnTimeout:   s.failOnTimeout != nil && *s.failOnTimeout,
		RetryFor:        s.retryFor,
		UniqueFor:       s.uniqueFor,
		UniqueUntil:     s.uniqueUntil,
		UniqueBy:        s.uniqueBy,
		DebounceFor:     s.debounceFor,
		DebounceBy:      s.debounceBy,
		DebounceMaxWait: s.debounceMaxWait,
		Middleware:      s.middleware,
		MaxTries:        s.maxTries,
		MaxRetryFor:     s.maxRetryFor,
		MinBackoff:      s.minBackoff,
		MaxTimeout:      s.maxTimeout,
		Isolated:        s.isolated,
	})
	if err != nil {
		return fmt.Errorf("define job %s: %w", name, MapError(err))
	}
	return nil
}

// DefineQueue creates or updates a queue with its lease retryAfter (whole seconds,
// S14), its paused flag and its options. Every call sets every setting: a queue made
// fair by FairBy stops being fair when it is defined again without it.
func (c *Client) DefineQueue(ctx context.Context, name string, retryAfter time.Duration, paused bool, opts ...QueueOption) error {
	var o queueOptions
	for _, opt := range opts {
		opt(&o)
	}
	_, err := c.q.QueueDefine(ctx, dbsqlc.QueueDefineParams{
		Name: name, RetryAfter: int32(retryAfter / time.Second), Paused: paused, FairBy: o.fairBy,
	})
	if err != nil {
		return fmt.Errorf("define queue %s: %w", name, MapError(err))
	}
	return nil
}

// QueueOption is an option of DefineQueue.
type QueueOption func(*queueOptions)

type queueOptions struct {
	fairBy *string
}

// FairBy makes the queue fair (S114): its jobs are taken round-robin across the values
// of the payload field named field (the key), so that no key's backlog delays another
// key's jobs by more than one turn (S115). A payload without the field has the key "".
func FairBy(field string) QueueOption {
	return func(o *queueOptions) { o.fairBy = &field }
}

// SetFairWeight sets the weight of key in the fair queue: each round it gets up to
// weight jobs where a key of weight 1 gets one (S117). weight is 1 to 1000, else the
// error wraps ErrInvalidArgument.
func (c *Client) SetFairWeight(ctx context.Context, queue, key string, weight int) error {
	_, err := c.q.QueueSetFairWeight(ctx, dbsqlc.QueueSetFairWeightParams{Queue: queue, Key: key, Weight: int32(weight)})
	if err != nil {
		return fmt.Errorf("set fair weight %s/%s: %w", queue, key, MapError(err))
	}
	return nil
}

// RunNow makes a job waiting out a delay or backoff available immediately (S20).
// Returns ErrNotFound when no waiting job has that uuid.
func (c *Client) RunNow(ctx context.Context, id uuid.UUID) error {
	found, err := c.q.JobRunNow(ctx, id)
	if err != nil {
		return fmt.Errorf("run now %s: %w", id, MapError(err))
	}
	if !found {
		return fmt.Errorf("run now %s: %w (no waiting job)", id, ErrNotFound)
	}
	return nil
}

// Prune deletes the attempt history of finished jobs older than olderThan and
// returns how many rows went.
func (c *Client) Prune(ctx context.Context, olderThan time.Duration) (int64, error) {
	n, err := c.q.AttemptPrune(ctx, olderThan)
	if err != nil {
		return 0, fmt.Errorf("prune: %w", MapError(err))
	}
	return n, nil
}
