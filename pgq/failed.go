package pgq

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/pgq-dev/pgq/internal/dbsqlc"
)

// FailedJob is a failed job (S17), as the view pgq.failed shows it.
type FailedJob struct {
	UUID  uuid.UUID
	Job   string
	Queue string
	// Payload is nil when the role may not read payloads (S45): only members of
	// pgq_payload_reader see them.
	Payload   json.RawMessage
	Exception string
	// Detail and Hint are the final exception's DETAIL and HINT, "" when it had none (S88).
	Detail, Hint string
	FailedAt     time.Time
	Attempts     int
}

// Attempt is a row of pgq.attempts, the attempt history (S19).
type Attempt struct {
	Attempt       int
	Outcome       Outcome
	Worker        string
	ReservedAt    *time.Time
	StartedAt     *time.Time
	FinishedAt    time.Time
	Exception     string
	Detail, Hint  string // the exception's DETAIL and HINT, "" when it had none (S88)
	Delay         *int
	Final         bool
	RejectedCalls []string
}

func failedJobFrom(r *dbsqlc.FailedJobListRow) FailedJob {
	return FailedJob{UUID: r.Uuid, Job: r.Job, Queue: r.Queue, Payload: r.Payload,
		Exception: r.Exception, Detail: deref(r.ExceptionDetail), Hint: deref(r.ExceptionHint),
		FailedAt: r.FailedAt, Attempts: int(r.Attempts)}
}

// FailedJobs lists up to max failed jobs, newest first, of queue ("" for all).
func (c *Client) FailedJobs(ctx context.Context, queue string, max int) ([]FailedJob, error) {
	var q *string
	if queue != "" {
		q = &queue
	}
	rows, err := c.q.FailedJobList(ctx, dbsqlc.FailedJobListParams{Queue: q, Max: int32(max)})
	if err != nil {
		return nil, fmt.Errorf("list failed jobs: %w", MapError(err))
	}
	out := make([]FailedJob, len(rows))
	for i, r := range rows {
		out[i] = failedJobFrom(r)
	}
	return out, nil
}

// FailedJob returns one failed job. ErrNotFound when there is none.
func (c *Client) FailedJob(ctx context.Context, id uuid.UUID) (FailedJob, error) {
	r, err := c.q.FailedJobGet(ctx, id)
	if err != nil {
		return FailedJob{}, fmt.Errorf("failed job %s: %w", id, MapError(err))
	}
	return failedJobFrom((*dbsqlc.FailedJobListRow)(r)), nil
}

// Attempts returns the attempt history of a job, oldest first.
func (c *Client) Attempts(ctx context.Context, job uuid.UUID) ([]Attempt, error) {
	rows, err := c.q.AttemptListByJob(ctx, job)
	if err != nil {
		return nil, fmt.Errorf("attempts of %s: %w", job, MapError(err))
	}
	out := make([]Attempt, len(rows))
	for i, r := range rows {
		a := Attempt{Attempt: int(r.Attempt), Outcome: Outcome(r.Outcome), ReservedAt: r.ReservedAt,
			StartedAt: r.StartedAt, FinishedAt: r.FinishedAt, Final: r.Final, RejectedCalls: r.RejectedCalls}
		if r.Worker != nil {
			a.Worker = *r.Worker
		}
		if r.Exception != nil {
			a.Exception = *r.Exception
		}
		a.Detail, a.Hint = deref(r.ExceptionDetail), deref(r.ExceptionHint)
		if r.Delay != nil {
			a.Delay = ptr(int(*r.Delay))
		}
		out[i] = a
	}
	return out, nil
}

// RetryFailed puts a failed job back on its queue with attempts reset (S20).
// ErrNotFound when there is no such failed job.
func (c *Client) RetryFailed(ctx context.Context, id uuid.UUID) error {
	ids, err := c.q.FailedJobRetry(ctx, dbsqlc.FailedJobRetryParams{Uuid: &id})
	if err != nil {
		return fmt.Errorf("retry failed %s: %w", id, MapError(err))
	}
	if len(ids) == 0 {
		return fmt.Errorf("retry failed %s: %w", id, ErrNotFound)
	}
	return nil
}

// FailedFilter selects failed jobs by queue, job name and age; each field left at its
// zero value matches any job, so the zero FailedFilter matches every failed job.
type FailedFilter struct {
	Queue     string        // only failed jobs of this queue
	Job       string        // only failed jobs of this name
	OlderThan time.Duration // only jobs that failed more than this long ago; must be >= 0
}

func (f FailedFilter) params() (queue, job *string, olderThan *time.Duration, err error) {
	if f.OlderThan < 0 {
		return nil, nil, nil, fmt.Errorf("%w: OlderThan must be >= 0, got %s", ErrInvalidArgument, f.OlderThan)
	}
	if f.Queue != "" {
		queue = &f.Queue
	}
	if f.Job != "" {
		job = &f.Job
	}
	if f.OlderThan > 0 {
		olderThan = &f.OlderThan
	}
	return queue, job, olderThan, nil
}

// RetryAllFailed puts every failed job matching f back on its queue with attempts reset
// (S20), oldest failure first, and returns how many. It is one statement, safe to run
// beside other retries and flushes: a job is requeued once, or not at all if another
// call deleted or requeued it first. Errors wrap ErrInvalidArgument for a negative
// OlderThan.
func (c *Client) RetryAllFailed(ctx context.Context, f FailedFilter) (int, error) {
	queue, job, olderThan, err := f.params()
	if err != nil {
		return 0, fmt.Errorf("retry all failed: %w", err)
	}
	ids, err := c.q.FailedJobRetry(ctx, dbsqlc.FailedJobRetryParams{Queue: queue, Job: job, OlderThan: olderThan})
	if err != nil {
		return 0, fmt.Errorf("retry all failed: %w", MapError(err))
	}
	return len(ids), nil
}

// ForgetFailed deletes one failed job. ErrNotFound when there was none.
func (c *Client) ForgetFailed(ctx context.Context, id uuid.UUID) error {
	ok, err := c.q.FailedJobForget(ctx, id)
	if err != nil {
		return fmt.Errorf("forget failed %s: %w", id, MapError(err))
	}
	if !ok {
		return fmt.Errorf("forget failed %s: %w", id, ErrNotFound)
	}
	return nil
}

// FlushFailed deletes the failed jobs matching f and returns how many. The zero
// FailedFilter deletes every failed job of every queue. It is one statement, safe to run
// beside other retries and flushes: a job is counted only by the call that deleted it.
// Errors wrap ErrInvalidArgument for a negative OlderThan.
func (c *Client) FlushFailed(ctx context.Context, f FailedFilter) (int64, error) {
	queue, job, olderThan, err := f.params()
	if err != nil {
		return 0, fmt.Errorf("flush failed: %w", err)
	}
	n, err := c.q.FailedJobFlush(ctx, dbsqlc.FailedJobFlushParams{OlderThan: olderThan, Queue: queue, Job: job})
	if err != nil {
		return 0, fmt.Errorf("flush failed: %w", MapError(err))
	}
	return n, nil
}

// QueueStatus is one queue's summary (pgq-worker status).
type QueueStatus struct {
	Queue                                       string
	Ready, Scheduled, Retrying, Running, Failed int64
	OldestWait                                  time.Duration
}

// Status summarises every queue (pgq.queue_stats): jobs ready, scheduled, retrying,
// running and failed, and how long the oldest ready job has waited.
func (c *Client) Status(ctx context.Context) ([]QueueStatus, error) {
	rows, err := c.q.QueueStatsList(ctx)
	if err != nil {
		return nil, fmt.Errorf("status: %w", MapError(err))
	}
	out := make([]QueueStatus, len(rows))
	for i, r := range rows {
		out[i] = QueueStatus{Queue: r.Queue, Ready: r.Ready, Scheduled: r.Scheduled, Retrying: r.Retrying,
			Running: r.Running, Failed: r.Failed, OldestWait: r.OldestWait}
	}
	return out, nil
}

// Finding is one problem the ordering linter found (pgq.check, S16).
type Finding struct {
	Object string `json:"object"`
	Rule   string `json:"rule"`
	Detail string `json:"detail"`
	Fix    string `json:"fix"`
}

// Check runs the ordering linter over every queue and job class, given the worker's
// --timeout and --tries, and returns one Finding per problem.
func (c *Client) Check(ctx context.Context, workerTimeout time.Duration, workerTries int) ([]Finding, error) {
	rows, err := c.q.CheckList(ctx, dbsqlc.CheckListParams{WorkerTimeout: int32(workerTimeout / time.Second), WorkerTries: int32(workerTries)})
	if err != nil {
		return nil, fmt.Errorf("check: %w", MapError(err))
	}
	out := make([]Finding, len(rows))
	for i, r := range rows {
		out[i] = Finding{Object: r.Object, Rule: r.Rule, Detail: r.Detail, Fix: r.Fix}
	}
	return out, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// Cancel cancels a job (pgq.cancel): a waiting job ends at once (CancelDone); a running
// one is cancelled by its worker within a second, or at its next pickup if the worker
// is gone (CancelRequested). A cancelled job is not retried and not failed; its attempt
// is recorded as cancelled, and the action in pgq.actions. ErrNotFound when no live job
// has that uuid.
func (c *Client) Cancel(ctx context.Context, id uuid.UUID) (CancelResult, error) {
	r, err := c.q.JobCancel(ctx, id)
	if err != nil {
		return "", fmt.Errorf("cancel %s: %w", id, MapError(err))
	}
	if r == "" {
		return "", fmt.Errorf("cancel %s: %w (no waiting or running job)", id, ErrNotFound)
	}
	return CancelResult(r), nil
}

// CancelResult says what Cancel did.
type CancelResult string

// What Cancel did.
const (
	CancelDone      CancelResult = "cancelled"  // the job was waiting: it is gone
	CancelRequested CancelResult = "cancelling" // the job runs: its worker cancels the handler
)

// PauseQueue stops workers from reserving the queue's jobs; running ones finish. It
// reports whether the queue was running. Recorded in pgq.actions.
func (c *Client) PauseQueue(ctx context.Context, queue string) (bool, error) {
	was, err := c.q.QueuePause(ctx, queue)
	if err != nil {
		return false, fmt.Errorf("pause queue %s: %w", queue, MapError(err))
	}
	return was, nil
}

// ResumeQueue lets workers reserve the queue's jobs again and wakes them. It reports
// whether the queue was paused. Recorded in pgq.actions.
func (c *Client) ResumeQueue(ctx context.Context, queue string) (bool, error) {
	was, err := c.q.QueueResume(ctx, queue)
	if err != nil {
		return false, fmt.Errorf("resume queue %s: %w", queue, MapError(err))
	}
	return was, nil
}
