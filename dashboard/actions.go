package dashboard

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/pgq-dev/pgq/internal/dbsqlc"
)

// The actions: POST only (the mux registers them so), past the cross-origin check and
// the read-only switch. Each runs the SQL function of its action in a transaction that
// first names the person it is taken for (pgq.actions.on_behalf_of), then redirects
// (303) to a page that says what happened. Forget, cancel, and bulk retry and flush
// first answer with a confirmation form, and act only when it comes back with
// confirm=yes.

// act runs fn in a transaction whose actions pgq.actions records on behalf of r's actor.
func (s *server) act(r *http.Request, fn func(ctx context.Context, q *dbsqlc.Queries) error) error {
	ctx := r.Context()
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // after Commit: a no-op
	q := dbsqlc.New(customPlans{tx})
	if err := q.DashboardActorSet(ctx, s.onBehalfOf(r)); err != nil {
		return err
	}
	if err := fn(ctx, q); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// confirmData is the confirmation form of a destructive or bulk action.
type confirmData struct {
	Question string
	Detail   string
	Action   string // the path the form posts to, below the base
	Button   string
	Fields   [][2]string // hidden fields, posted back with confirm=yes
	Back     string      // where "cancel" goes, below the base
}

func confirmed(r *http.Request) bool { return r.PostFormValue("confirm") == "yes" }

// confirm answers with the confirmation form: the request's own fields go back with it.
func confirm(r *http.Request, d confirmData) view {
	for k, vs := range r.PostForm {
		if k == "next" || k == "confirm" {
			continue
		}
		for _, v := range vs {
			d.Fields = append(d.Fields, [2]string{k, v})
		}
	}
	d.Back = nextPath(r, d.Back)
	d.Fields = append(d.Fields, [2]string{"next", d.Back})
	return view{name: "confirm", title: "Confirm", data: d}
}

// nextPath is where an action goes when done: the form's "next" field when it is a path
// of the dashboard, else fallback. Paths are below the base.
func nextPath(r *http.Request, fallback string) string {
	next := r.PostFormValue("next")
	if next == "" || !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.ContainsAny(next, "\\\r\n") {
		return fallback
	}
	return next
}

// done redirects to the action's next page with its flash message.
func done(r *http.Request, fallback, code string, n int64) view {
	u, err := url.Parse(nextPath(r, fallback))
	if err != nil {
		u, _ = url.Parse(fallback)
	}
	q := u.Query()
	q.Set("done", code)
	if n >= 0 {
		q.Set("n", strconv.FormatInt(n, 10))
	} else {
		q.Del("n")
	}
	u.RawQuery = q.Encode()
	return view{redirect: u.String()}
}

func pathUUID(r *http.Request) (uuid.UUID, error) {
	id, err := uuid.Parse(r.PathValue("uuid"))
	if err != nil {
		return uuid.Nil, badRequest("not a uuid: %q", r.PathValue("uuid"))
	}
	return id, nil
}

func conflict(format string, args ...any) error {
	return &httpError{status: http.StatusConflict, msg: fmt.Sprintf(format, args...)}
}

// runNow: POST /jobs/{uuid}/run-now. A job waiting a delay or backoff is available now
// (pgq.run_now).
func (s *server) runNow(r *http.Request) (view, error) {
	id, err := pathUUID(r)
	if err != nil {
		return view{}, err
	}
	err = s.act(r, func(ctx context.Context, q *dbsqlc.Queries) error {
		found, err := q.JobRunNow(ctx, id)
		if err == nil && !found {
			err = conflict("job %s is not waiting: it runs, finished or failed", id)
		}
		return err
	})
	if err != nil {
		return view{}, err
	}
	return done(r, "/jobs/"+id.String(), "run_now", -1), nil
}

// cancel: POST /jobs/{uuid}/cancel, confirmed. A waiting job ends at once, a running
// one through its worker (pgq.cancel).
func (s *server) cancel(r *http.Request) (view, error) {
	id, err := pathUUID(r)
	if err != nil {
		return view{}, err
	}
	if !confirmed(r) {
		return confirm(r, confirmData{
			Question: "Cancel job " + id.String() + "?",
			Detail:   "A waiting job is deleted at once; a running job's handler is cancelled by its worker. Either way it is recorded as cancelled, and neither retried nor failed.",
			Action:   "/jobs/" + id.String() + "/cancel", Button: "Cancel the job", Back: "/jobs/" + id.String(),
		}), nil
	}
	var result string
	err = s.act(r, func(ctx context.Context, q *dbsqlc.Queries) error {
		result, err = q.JobCancel(ctx, id)
		if err == nil && result == "" {
			err = conflict("job %s is neither waiting nor running", id)
		}
		return err
	})
	if err != nil {
		return view{}, err
	}
	return done(r, "/jobs/"+id.String(), result, -1), nil
}

// retryOne: POST /jobs/{uuid}/retry. The failed job goes back on its queue with
// attempts reset (pgq.retry_failed).
func (s *server) retryOne(r *http.Request) (view, error) {
	id, err := pathUUID(r)
	if err != nil {
		return view{}, err
	}
	err = s.act(r, func(ctx context.Context, q *dbsqlc.Queries) error {
		ids, err := q.FailedJobRetry(ctx, dbsqlc.FailedJobRetryParams{Uuid: &id})
		if err == nil && len(ids) == 0 {
			err = conflict("job %s is not failed (retried or forgotten already?)", id)
		}
		return err
	})
	if err != nil {
		return view{}, err
	}
	return done(r, "/jobs/"+id.String(), "retried", -1), nil
}

// forget: POST /jobs/{uuid}/forget, confirmed. The failed job is deleted
// (pgq.forget_failed); its history stays until pruned.
func (s *server) forget(r *http.Request) (view, error) {
	id, err := pathUUID(r)
	if err != nil {
		return view{}, err
	}
	if !confirmed(r) {
		return confirm(r, confirmData{
			Question: "Forget failed job " + id.String() + "?",
			Detail:   "The failed job and its payload are deleted: it can no longer be retried. Its attempt history stays until pruned.",
			Action:   "/jobs/" + id.String() + "/forget", Button: "Forget it", Back: "/jobs/" + id.String(),
		}), nil
	}
	err = s.act(r, func(ctx context.Context, q *dbsqlc.Queries) error {
		ok, err := q.FailedJobForget(ctx, id)
		if err == nil && !ok {
			err = conflict("job %s is not failed (retried or forgotten already?)", id)
		}
		return err
	})
	if err != nil {
		return view{}, err
	}
	return done(r, "/jobs?state=failed", "forgotten", -1), nil
}

// retrySelected: POST /failed/retry with one or more uuid fields. Each selected failed
// job goes back on its queue; those no longer failed are skipped.
func (s *server) retrySelected(r *http.Request) (view, error) {
	if err := r.ParseForm(); err != nil {
		return view{}, badRequest("bad form: %v", err)
	}
	var ids []uuid.UUID
	for _, v := range r.PostForm["uuid"] {
		id, err := uuid.Parse(v)
		if err != nil {
			return view{}, badRequest("not a uuid: %q", v)
		}
		ids = append(ids, id)
	}
	if len(ids) == 0 {
		return view{}, badRequest("no failed job selected")
	}
	var n int64
	err := s.act(r, func(ctx context.Context, q *dbsqlc.Queries) error {
		for _, id := range ids {
			got, err := q.FailedJobRetry(ctx, dbsqlc.FailedJobRetryParams{Uuid: &id})
			if err != nil {
				return err
			}
			n += int64(len(got))
		}
		return nil
	})
	if err != nil {
		return view{}, err
	}
	return done(r, "/jobs?state=failed", "retried_n", n), nil
}

// bulkFilter reads the filters of a bulk retry or flush, and how many failed jobs they
// select now.
func (s *server) bulkFilter(r *http.Request) (jobFilter, dbsqlc.DashboardFailedCountParams, int64, error) {
	if err := r.ParseForm(); err != nil {
		return jobFilter{}, dbsqlc.DashboardFailedCountParams{}, 0, badRequest("bad form: %v", err)
	}
	f := jobFilter{State: "failed", Queue: strings.TrimSpace(r.PostForm.Get("queue")),
		Job: strings.TrimSpace(r.PostForm.Get("job")), OlderThan: strings.TrimSpace(r.PostForm.Get("older_than_hours"))}
	older, err := f.olderThan()
	if err != nil {
		return f, dbsqlc.DashboardFailedCountParams{}, 0, err
	}
	p := dbsqlc.DashboardFailedCountParams{Queue: optional(f.Queue), Job: optional(f.Job), OlderThan: older}
	n, err := s.q.DashboardFailedCount(r.Context(), p)
	return f, p, n, err
}

// describe says which failed jobs a filter selects, for a confirmation.
func (f jobFilter) describe() string {
	var parts []string
	if f.Queue != "" {
		parts = append(parts, "of queue "+f.Queue)
	}
	if f.Job != "" {
		parts = append(parts, "of job "+f.Job)
	}
	if f.OlderThan != "" {
		parts = append(parts, "failed more than "+f.OlderThan+" hours ago")
	}
	if len(parts) == 0 {
		return "every failed job, of every queue"
	}
	return "the failed jobs " + strings.Join(parts, ", ")
}

// retryAll: POST /failed/retry-all, confirmed. Every failed job matching the filters
// goes back on its queue (pgq.retry_failed with uuid NULL).
func (s *server) retryAll(r *http.Request) (view, error) {
	f, p, n, err := s.bulkFilter(r)
	if err != nil {
		return view{}, err
	}
	back := "/jobs?" + f.values().Encode()
	if !confirmed(r) {
		return confirm(r, confirmData{
			Question: fmt.Sprintf("Retry %s failed jobs?", thousands(n)),
			Detail:   "This puts " + f.describe() + " back on their queues, attempts reset (" + thousands(n) + " now).",
			Action:   "/failed/retry-all", Button: "Retry " + thousands(n) + " jobs", Back: back,
		}), nil
	}
	var retried int64
	err = s.act(r, func(ctx context.Context, q *dbsqlc.Queries) error {
		ids, err := q.FailedJobRetry(ctx, dbsqlc.FailedJobRetryParams{Queue: p.Queue, Job: p.Job, OlderThan: p.OlderThan})
		retried = int64(len(ids))
		return err
	})
	if err != nil {
		return view{}, err
	}
	return done(r, back, "retried_n", retried), nil
}

// flush: POST /failed/flush, confirmed. Every failed job matching the filters is
// deleted (pgq.flush_failed).
func (s *server) flush(r *http.Request) (view, error) {
	f, p, n, err := s.bulkFilter(r)
	if err != nil {
		return view{}, err
	}
	back := "/jobs?" + f.values().Encode()
	if !confirmed(r) {
		return confirm(r, confirmData{
			Question: fmt.Sprintf("Delete %s failed jobs?", thousands(n)),
			Detail:   "This deletes " + f.describe() + " (" + thousands(n) + " now), payloads included: they can no longer be retried. Their attempt history stays until pruned.",
			Action:   "/failed/flush", Button: "Delete " + thousands(n) + " failed jobs", Back: back,
		}), nil
	}
	var flushed int64
	err = s.act(r, func(ctx context.Context, q *dbsqlc.Queries) error {
		flushed, err = q.FailedJobFlush(ctx, dbsqlc.FailedJobFlushParams{OlderThan: p.OlderThan, Queue: p.Queue, Job: p.Job})
		return err
	})
	if err != nil {
		return view{}, err
	}
	f.OlderThan = "" // the flushed jobs are gone: show what is left of the queue and job
	return done(r, "/jobs?"+f.values().Encode(), "flushed_n", flushed), nil
}

// pause: POST /queues/{queue}/pause. Workers stop reserving the queue's jobs
// (pgq.pause_queue); running ones finish.
func (s *server) pause(r *http.Request) (view, error) {
	queue := r.PathValue("queue")
	err := s.act(r, func(ctx context.Context, q *dbsqlc.Queries) error {
		_, err := q.QueuePause(ctx, queue)
		return err
	})
	if err != nil {
		return view{}, err
	}
	return done(r, "/", "paused", -1), nil
}

// resume: POST /queues/{queue}/resume. Workers reserve the queue's jobs again
// (pgq.resume_queue).
func (s *server) resume(r *http.Request) (view, error) {
	queue := r.PathValue("queue")
	err := s.act(r, func(ctx context.Context, q *dbsqlc.Queries) error {
		_, err := q.QueueResume(ctx, queue)
		return err
	})
	if err != nil {
		return view{}, err
	}
	return done(r, "/", "resumed", -1), nil
}
