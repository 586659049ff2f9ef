package dashboard

import (
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/pgq-dev/pgq/internal/dbsqlc"
)

// maxTimeline is how many attempts the job page shows: the newest. A job turned away
// for days can have thousands.
const maxTimeline = 200

type jobData struct {
	UUID     uuid.UUID
	Live     *dbsqlc.DashboardJobGetRow  // the settings of a live job
	Failed   *dbsqlc.PgqFailedJobSetting // or of a failed one; both nil when the job finished
	Name     string                      // from the settings or the history
	Queue    string
	State    string // ready, scheduled, retrying, running, failed, or finished
	Payload  string // pretty JSON
	Hidden   bool   // the views hid the payload from this role
	Events   []event
	Attempts int64 // in the history, all of them
	Shown    int   // attempts in Events
	Last     *dbsqlc.PgqAttempt
	Backoff  string
	// UniqueUntil is the unique lock's release point: processed or processing.
	UniqueUntil string
	// Actions the state allows.
	CanRunNow, CanCancel, CanRetry bool
	// Workflow is the batch or chain the job belongs to, nil for a plain job.
	Workflow *workflowLink
}

// workflowLink says what the job is to a batch or a chain: a member of a batch, a step
// of a chain (that may be a member of a batch), or a callback of either.
type workflowLink struct {
	Callback  string // then, catch, finally or on_failure: the job is that callback
	BatchID   *uuid.UUID
	BatchName string
	ChainID   *uuid.UUID
	Step      int32
	Steps     int32
}

// event is a line of the job's timeline: an attempt or an operator's action.
type event struct {
	At      time.Time
	Attempt *dbsqlc.PgqAttempt
	Action  *dbsqlc.PgqAction
}

// Ran is how long the attempt's handler ran, or 0 when it never started.
func (e event) Ran() time.Duration {
	if e.Attempt == nil || e.Attempt.StartedAt == nil {
		return 0
	}
	return e.Attempt.FinishedAt.Sub(*e.Attempt.StartedAt)
}

// job: GET /jobs/{uuid}. The job's settings, payload and timeline; a job that finished
// (succeeded, cancelled, debounced) has only its history left.
func (s *server) job(r *http.Request) (view, error) {
	ctx := r.Context()
	id, err := uuid.Parse(r.PathValue("uuid"))
	if err != nil {
		return view{}, badRequest("not a uuid: %q", r.PathValue("uuid"))
	}
	d := jobData{UUID: id, State: "finished"}
	live, err := s.q.DashboardJobGet(ctx, id)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		failed, err := s.q.DashboardFailedJobGet(ctx, id)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
		case err != nil:
			return view{}, err
		default:
			d.Failed, d.State, d.Name, d.Queue = failed, "failed", failed.Job, failed.Queue
			d.Backoff, d.UniqueUntil = joinInts(failed.Backoff), deref(failed.UniqueUntil).(string)
		}
	case err != nil:
		return view{}, err
	default:
		d.Live, d.State, d.Name, d.Queue = live, live.State, live.Job, live.Queue
		d.Backoff, d.UniqueUntil = joinInts(live.Backoff), deref(live.UniqueUntil).(string)
	}
	payloads, err := s.q.DashboardJobPayload(ctx, id)
	if err != nil {
		return view{}, err
	}
	if len(payloads) > 0 {
		if payloads[0] == nil {
			d.Hidden = true
		} else {
			d.Payload = prettyJSON(json.RawMessage(payloads[0]))
		}
	}
	attempts, err := s.q.DashboardAttemptList(ctx, dbsqlc.DashboardAttemptListParams{JobUuid: id, Max: maxTimeline})
	if err != nil {
		return view{}, err
	}
	d.Shown, d.Attempts = len(attempts), int64(len(attempts))
	if len(attempts) == maxTimeline {
		if d.Attempts, err = s.q.DashboardAttemptCount(ctx, id); err != nil {
			return view{}, err
		}
	}
	actions, err := s.q.DashboardActionListByJob(ctx, id)
	if err != nil {
		return view{}, err
	}
	if d.Live == nil && d.Failed == nil && len(attempts) == 0 && len(actions) == 0 {
		return view{}, notFound("no job %s: not live, not failed, and no history (pruned, or never dispatched)", id)
	}
	if len(attempts) > 0 {
		d.Last = attempts[0]
		if d.Name == "" {
			d.Name, d.Queue = attempts[0].Job, attempts[0].Queue
		}
	}
	for _, a := range attempts {
		d.Events = append(d.Events, event{At: a.FinishedAt, Attempt: a})
	}
	for _, a := range actions {
		d.Events = append(d.Events, event{At: a.At, Action: a})
	}
	slices.SortStableFunc(d.Events, func(a, b event) int { return a.At.Compare(b.At) })
	if d.Workflow, err = s.workflowOf(r, &d); err != nil {
		return view{}, err
	}
	switch d.State {
	case "scheduled", "retrying":
		d.CanRunNow, d.CanCancel = true, true
	case "ready":
		d.CanCancel = true
	case "running":
		d.CanCancel = d.Live.CancelRequestedAt == nil
	case "failed":
		d.CanRetry = true
	}
	title := d.Name
	if title == "" {
		title = "Job"
	}
	return view{name: "job", title: title + " " + shortUUID(id), data: d}, nil
}

// workflowOf finds the batch or chain of a job: the callback it was queued as, else the
// columns of the live or failed job, else the end recorded for it (pgq.job_ends, S97).
// nil for a job of neither.
func (s *server) workflowOf(r *http.Request, d *jobData) (*workflowLink, error) {
	ctx := r.Context()
	var batch, chain *uuid.UUID
	var step *int32
	cb, err := s.q.DashboardCallbackGet(ctx, d.UUID)
	switch {
	case err == nil:
		return s.completeLink(r, &workflowLink{Callback: cb.Kind, BatchID: cb.BatchID, ChainID: cb.ChainID})
	case !errors.Is(err, pgx.ErrNoRows):
		return nil, err
	case d.Live != nil:
		batch, chain, step = d.Live.BatchID, d.Live.ChainID, d.Live.ChainStep
	case d.Failed != nil:
		batch, chain, step = d.Failed.BatchID, d.Failed.ChainID, d.Failed.ChainStep
	default:
		end, err := s.q.DashboardJobEndGet(ctx, d.UUID)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		batch, chain, step = end.BatchID, end.ChainID, end.ChainStep
	}
	if step != nil && *step == 0 {
		return nil, nil // a callback whose pgq.callbacks row went with its batch or chain
	}
	if batch == nil && chain == nil {
		return nil, nil
	}
	l := &workflowLink{BatchID: batch, ChainID: chain}
	if step != nil {
		l.Step = *step
	}
	return s.completeLink(r, l)
}

// completeLink adds the chain's number of steps (and its batch) and the batch's name.
func (s *server) completeLink(r *http.Request, l *workflowLink) (*workflowLink, error) {
	ctx := r.Context()
	if l.ChainID != nil {
		c, err := s.q.DashboardChainGet(ctx, *l.ChainID)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
		case err != nil:
			return nil, err
		default:
			l.Steps = c.TotalSteps
			if l.BatchID == nil {
				l.BatchID = c.BatchID
			}
		}
	}
	if l.BatchID != nil {
		b, err := s.q.BatchGet(ctx, *l.BatchID)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
		case err != nil:
			return nil, err
		case b.Name != nil:
			l.BatchName = *b.Name
		}
	}
	return l, nil
}
