package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgq-dev/pgq/internal/dbsqlc"
	"github.com/pgq-dev/pgq/pgq"
)

// Job is one attempt of a job as its handler sees it, with the payload decoded into Args.
type Job[T any] struct {
	UUID          uuid.UUID
	Name          string
	Queue         string
	Attempt       int // 1 on the first attempt (S5)
	Payload       json.RawMessage
	Args          T
	ReservedUntil time.Time // the lease; the worker extends it while the handler runs

	pool  *pgxpool.Pool
	token uuid.UUID // the attempt's lease token: a running member's proof (S93)
}

// JobBatch is the batch a running job belongs to (S73).
type JobBatch struct {
	ID     uuid.UUID
	client *pgq.Client
	job    uuid.UUID // the running member, and its lease token
	token  uuid.UUID
}

// Add adds members to the batch while it runs (pgq.add_to_batch, as the running job:
// its uuid and lease token show it is a member, S93) and returns how many were added;
// errors wrap pgq.ErrBatchClosed when the batch finished or was cancelled, and
// pgq.ErrPermission once the job no longer holds its lease.
func (b *JobBatch) Add(ctx context.Context, members ...pgq.BatchMember) (int, error) {
	return b.client.AddToBatchAsJob(ctx, b.ID, b.job, b.token, members)
}

// Batch returns the batch the job belongs to, or nil when it belongs to none. It asks
// PostgreSQL (pgq.job_batch) on each call.
func (j *Job[T]) Batch(ctx context.Context) (*JobBatch, error) {
	client, err := pgq.NewClient(j.pool)
	if err != nil {
		return nil, err
	}
	id, err := client.JobBatch(ctx, j.UUID)
	if err != nil || id == uuid.Nil {
		return nil, err
	}
	return &JobBatch{ID: id, client: client, job: j.UUID, token: j.token}, nil
}

// Handler runs jobs of one name. Run is required. Failed, when set, runs once when
// the job fails for good (S17), with the exception recorded in pgq.failed_jobs.
// Run should return when its context is done (timeout, lost lease or shutdown).
type Handler[T any] struct {
	Run    func(ctx context.Context, job *Job[T]) error
	Failed func(ctx context.Context, job *Job[T], err error)
}

// handler is a Handler with its argument type erased.
type handler struct {
	run    func(ctx context.Context, row *dbsqlc.JobReserveRow) error
	failed func(ctx context.Context, row *dbsqlc.JobReserveRow, err error)
}

// Handle registers h for jobs named name. Call it before Run; it panics when h.Run is
// nil or name is already registered, as registering twice is a programming error.
// A payload that does not decode into T fails the attempt with a clear exception (S33).
func Handle[T any](w *Worker, name string, h Handler[T]) {
	if h.Run == nil {
		panic(fmt.Sprintf("pgq/worker: Handle(%q): Run is nil", name))
	}
	if _, dup := w.handlers[name]; dup {
		panic(fmt.Sprintf("pgq/worker: Handle(%q): already registered", name))
	}
	decode := func(row *dbsqlc.JobReserveRow) (*Job[T], error) {
		j := &Job[T]{UUID: row.Uuid, Name: row.Job, Queue: row.Queue, Attempt: int(row.Attempts), Payload: row.Payload,
			ReservedUntil: row.ReservedUntil, pool: w.pool, token: row.LeaseToken}
		if raw, ok := any(&j.Args).(*json.RawMessage); ok {
			*raw = row.Payload // already JSON: no decoding to do
		} else if err := json.Unmarshal(row.Payload, &j.Args); err != nil {
			return j, fmt.Errorf("decode payload of %s into %T: %w", row.Job, j.Args, err)
		}
		return j, nil
	}
	reg := handler{run: func(ctx context.Context, row *dbsqlc.JobReserveRow) error {
		j, err := decode(row)
		if err != nil {
			return err
		}
		return h.Run(ctx, j)
	}}
	if h.Failed != nil {
		reg.failed = func(ctx context.Context, row *dbsqlc.JobReserveRow, err error) {
			j, _ := decode(row)
			h.Failed(ctx, j, err)
		}
	}
	w.handlers[name] = reg
}

// ReleaseError asks the worker to put the job back to wait Delay without counting an
// exception (S11). Return it from a handler with Release.
type ReleaseError struct{ Delay time.Duration }

func (e *ReleaseError) Error() string { return fmt.Sprintf("released for %s", e.Delay) }

// Release returns an error that releases the current job for delay (whole seconds).
// The attempt is used (S5) but it is not an exception (S10).
func Release(delay time.Duration) error { return &ReleaseError{Delay: delay} }

// PanicError is the exception recorded when a handler panics (S33).
type PanicError struct{ Value any }

func (e *PanicError) Error() string { return fmt.Sprintf("panic: %v", e.Value) }

func asRelease(err error) (*ReleaseError, bool) {
	var r *ReleaseError
	ok := errors.As(err, &r)
	return r, ok
}
