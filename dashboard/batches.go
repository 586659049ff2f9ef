package dashboard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgq-dev/pgq/internal/dbsqlc"
)

// batchStates are the filters of GET /batches: pgq.batches's state, in the order of
// the tabs ("" is every batch).
var batchStates = []string{"running", "cancelling", "succeeded", "failed", "cancelled"}

// batchJobStates are the tabs of a batch's page: pgq.batch_jobs's states.
var batchJobStates = []string{"failed", "running", "ready", "retrying", "scheduled", "succeeded", "cancelled"}

// callbackKinds are a batch's callbacks, in the order they can run.
var callbackKinds = []string{"then", "catch", "finally"}

// callbackView is one callback of a batch or chain: the job it names and what became of it.
type callbackView struct {
	Kind  string
	Job   string
	Row   *dbsqlc.PgqCallback // nil: not queued (yet, or ever)
	State string              // not run, queued, not queued, succeeded, failed, cancelled
}

// callbackState says what became of a queued callback.
func callbackState(c *dbsqlc.PgqCallback) string {
	switch {
	case c == nil:
		return "not run"
	case c.JobUuid == nil:
		return "not queued"
	case c.Outcome != nil:
		return *c.Outcome
	default:
		return "queued"
	}
}

// batchOptions are pgq.batches.options.
type batchOptions struct {
	Then          string `json:"then_job"`
	Catch         string `json:"catch_job"`
	Finally       string `json:"finally_job"`
	AllowFailures bool   `json:"allow_failures"`
	Queue         string `json:"queue"`
}

func (o batchOptions) job(kind string) string {
	switch kind {
	case "then":
		return o.Then
	case "catch":
		return o.Catch
	default:
		return o.Finally
	}
}

// batchCallbacks lists a batch's callbacks: each one its options name, with the row of
// the callback queued for it, if any.
func batchCallbacks(b *dbsqlc.PgqBatch, rows []*dbsqlc.PgqCallback) []callbackView {
	var o batchOptions
	_ = json.Unmarshal(b.Options, &o)
	var out []callbackView
	for _, kind := range callbackKinds {
		if o.job(kind) == "" {
			continue
		}
		v := callbackView{Kind: kind, Job: o.job(kind)}
		for _, r := range rows {
			if r.BatchID != nil && *r.BatchID == b.ID && r.Kind == kind {
				v.Row = r
			}
		}
		v.State = callbackState(v.Row)
		if v.Row == nil && queuedAt(b, kind) != nil {
			v.State = "queued" // by a version of pgq that did not record callbacks yet
		}
		out = append(out, v)
	}
	return out
}

// queuedAt is when the batch's callback of kind was queued, nil if it was not.
func queuedAt(b *dbsqlc.PgqBatch, kind string) *time.Time {
	switch kind {
	case "then":
		return b.ThenAt
	case "catch":
		return b.CatchAt
	default:
		return b.FinallyAt
	}
}

// progressBar is a batch's members as a bar of 100 units: succeeded, failed and
// cancelled segments, the rest unfinished. An SVG, so that no inline style is needed
// (the pages' Content-Security-Policy allows none).
type progressBar struct {
	Segments []barSegment
	Title    string
}

type barSegment struct {
	X, W  float64
	Color string
}

func newProgressBar(b *dbsqlc.PgqBatch) progressBar {
	bar := progressBar{Title: fmt.Sprintf("%s of %s members finished: %s succeeded, %s failed, %s cancelled, %s unfinished",
		thousands(b.TotalJobs-b.UnfinishedJobs), thousands(b.TotalJobs), thousands(b.SucceededJobs), thousands(b.FailedJobs),
		thousands(b.CancelledJobs), thousands(b.UnfinishedJobs))}
	if b.TotalJobs <= 0 {
		return bar
	}
	x := 0.0
	for _, s := range []struct {
		n     int32
		color string
	}{{b.SucceededJobs, "#2e7d32"}, {b.FailedJobs, "#c62828"}, {b.CancelledJobs, "#9aa3ad"}} {
		if s.n <= 0 {
			continue
		}
		w := 100 * float64(s.n) / float64(b.TotalJobs)
		bar.Segments = append(bar.Segments, barSegment{X: x, W: w, Color: s.color})
		x += w
	}
	return bar
}

// batchRow is a batch of a list with its bar and callbacks.
type batchRow struct {
	*dbsqlc.PgqBatch
	Bar       progressBar
	Callbacks []callbackView
}

func (s *server) batchRows(ctx context.Context, batches []*dbsqlc.PgqBatch) ([]batchRow, error) {
	ids := make([]uuid.UUID, len(batches))
	for i, b := range batches {
		ids[i] = b.ID
	}
	var cbs []*dbsqlc.PgqCallback
	if len(ids) > 0 {
		var err error
		if cbs, err = s.q.DashboardCallbackListByBatches(ctx, ids); err != nil {
			return nil, err
		}
	}
	rows := make([]batchRow, len(batches))
	for i, b := range batches {
		rows[i] = batchRow{PgqBatch: b, Bar: newProgressBar(b), Callbacks: batchCallbacks(b, cbs)}
	}
	return rows, nil
}

type batchesData struct {
	State     string
	States    []string
	Batches   []batchRow
	First     bool
	Next      url.Values
	FirstPage url.Values
}

// batches: GET /batches. Batches newest first, of one state (?state=), a page at a time.
func (s *server) batches(r *http.Request) (view, error) {
	ctx := r.Context()
	q := r.URL.Query()
	state := q.Get("state")
	if state != "" && !contains(batchStates, state) {
		return view{}, badRequest("state must be one of %s, got %q", strings.Join(batchStates, ", "), state)
	}
	p := dbsqlc.DashboardBatchListParams{State: optional(state), UnfinishedOnly: state == "running" || state == "cancelling",
		Max: int32(s.opts.PageSize + 1)}
	if q.Get("after_at") != "" {
		at, err := time.Parse(time.RFC3339Nano, q.Get("after_at"))
		if err != nil {
			return view{}, badRequest("bad page cursor: after_at %q", q.Get("after_at"))
		}
		id, err := uuid.Parse(q.Get("after_id"))
		if err != nil {
			return view{}, badRequest("bad page cursor: after_id %q", q.Get("after_id"))
		}
		p.AfterAt, p.AfterID = &at, &id
	}
	rows, err := s.q.DashboardBatchList(ctx, p)
	if err != nil {
		return view{}, err
	}
	shown, n := trim(rows, s.opts.PageSize)
	d := batchesData{State: state, States: batchStates, First: p.AfterAt == nil, FirstPage: url.Values{}}
	if state != "" {
		d.FirstPage.Set("state", state)
	}
	if d.Batches, err = s.batchRows(ctx, shown); err != nil {
		return view{}, err
	}
	if n < len(rows) {
		last := shown[n-1]
		d.Next = url.Values{"after_at": {last.CreatedAt.UTC().Format(time.RFC3339Nano)}, "after_id": {last.ID.String()}}
		if state != "" {
			d.Next.Set("state", state)
		}
	}
	title := "Batches"
	if state != "" {
		title += ": " + state
	}
	return view{name: "batches", title: title, data: d}, nil
}

// stateTab is a tab of a batch's page: a state and how many of its jobs are in it.
type stateTab struct {
	State string
	Jobs  int64
}

type batchData struct {
	Batch     batchRow
	Options   batchOptions
	Chains    []*dbsqlc.DashboardChainListRow
	MoreChain bool
	Tabs      []stateTab
	State     string
	Jobs      []*dbsqlc.PgqBatchJob
	First     bool
	Next      url.Values
	FirstPage url.Values
	Failed    int64 // failed jobs that a retry would take
	CanRetry  bool
	CanCancel bool
	Stalled   *dbsqlc.DashboardStalledGetRow // nil unless the batch stalled (S95)
}

// stalledOf says whether the chain or batch id stalled (S95): its row of pgq.stalled, or nil.
func (s *server) stalledOf(ctx context.Context, id uuid.UUID) (*dbsqlc.DashboardStalledGetRow, error) {
	rows, err := s.q.DashboardStalledGet(ctx, id)
	if err != nil || len(rows) == 0 {
		return nil, err
	}
	return rows[0], nil
}

func pathID(r *http.Request, what string) (uuid.UUID, error) {
	id, err := uuid.Parse(r.PathValue("id"))
	if err != nil {
		return uuid.Nil, badRequest("not a %s id: %q", what, r.PathValue("id"))
	}
	return id, nil
}

// batch: GET /batches/{id}. The batch's figures and callbacks, its chains, and its jobs
// of one state (?state=, by default the first of failed, running, ready, ... that has
// any) a page at a time.
func (s *server) batch(r *http.Request) (view, error) {
	ctx := r.Context()
	id, err := pathID(r, "batch")
	if err != nil {
		return view{}, err
	}
	b, err := s.q.BatchGet(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return view{}, notFound("no batch %s (pruned, or never dispatched)", id)
	}
	if err != nil {
		return view{}, err
	}
	rows, err := s.batchRows(ctx, []*dbsqlc.PgqBatch{b})
	if err != nil {
		return view{}, err
	}
	d := batchData{Batch: rows[0]}
	_ = json.Unmarshal(b.Options, &d.Options)
	chains, err := s.q.DashboardChainList(ctx, dbsqlc.DashboardChainListParams{BatchID: &id, Max: int32(s.opts.PageSize + 1)})
	if err != nil {
		return view{}, err
	}
	d.Chains, _ = trim(chains, s.opts.PageSize)
	d.MoreChain = len(chains) > s.opts.PageSize

	counts, err := s.q.DashboardBatchJobCounts(ctx, id)
	if err != nil {
		return view{}, err
	}
	byState := map[string]int64{}
	for _, c := range counts {
		byState[c.State] += c.Jobs
	}
	q := r.URL.Query()
	d.State = q.Get("state")
	for _, st := range batchJobStates {
		d.Tabs = append(d.Tabs, stateTab{State: st, Jobs: byState[st]})
		if d.State == "" && byState[st] > 0 {
			d.State = st
		}
	}
	if d.State == "" {
		d.State = "failed"
	}
	if !contains(batchJobStates, d.State) {
		return view{}, badRequest("state must be one of %s, got %q", strings.Join(batchJobStates, ", "), d.State)
	}
	p := dbsqlc.DashboardBatchJobListParams{BatchID: id, State: d.State, Max: int32(s.opts.PageSize + 1)}
	if q.Get("after_at") != "" {
		at, err := time.Parse(time.RFC3339Nano, q.Get("after_at"))
		if err != nil {
			return view{}, badRequest("bad page cursor: after_at %q", q.Get("after_at"))
		}
		sort, err := strconv.ParseInt(q.Get("after_sort"), 10, 64)
		if err != nil {
			return view{}, badRequest("bad page cursor: after_sort %q", q.Get("after_sort"))
		}
		p.AfterAt, p.AfterSort = &at, &sort
	}
	jobs, err := s.q.DashboardBatchJobList(ctx, p)
	if err != nil {
		return view{}, err
	}
	var n int
	d.Jobs, n = trim(jobs, s.opts.PageSize)
	d.First = p.AfterAt == nil
	d.FirstPage = url.Values{"state": {d.State}}
	if n < len(jobs) {
		last := d.Jobs[n-1]
		d.Next = url.Values{"state": {d.State}, "after_at": {last.At.UTC().Format(time.RFC3339Nano)},
			"after_sort": {strconv.FormatInt(last.Sort, 10)}}
	}
	if d.Stalled, err = s.stalledOf(ctx, id); err != nil {
		return view{}, err
	}
	d.Failed = byState["failed"]
	d.CanRetry = d.Failed > 0 && b.CancelledAt == nil
	d.CanCancel = b.CancelledAt == nil && b.FinishedAt == nil
	name := "batch " + shortUUID(id)
	if b.Name != nil && *b.Name != "" {
		name = *b.Name
	}
	return view{name: "batch", title: name, data: d}, nil
}

// workflowError turns pgq's refusals of a batch action into what the user sees: no such
// batch (P0002) is 404, a cancelled or finished batch (PQ003) is 409 with pgq's message.
func workflowError(err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case "P0002":
			return notFound("%s", pgErr.Message)
		case "PQ003":
			return conflict("%s", pgErr.Message)
		}
	}
	return err
}

// batchName is how a confirmation names a batch.
func batchName(b *dbsqlc.PgqBatch) string {
	if b.Name != nil && *b.Name != "" {
		return fmt.Sprintf("%q (%s)", *b.Name, b.ID)
	}
	return b.ID.String()
}

// retryBatch: POST /batches/{id}/retry, confirmed. Every failed job of the batch goes
// back on its queue (pgq.retry_batch_failed, S96).
func (s *server) retryBatch(r *http.Request) (view, error) {
	id, err := pathID(r, "batch")
	if err != nil {
		return view{}, err
	}
	back := "/batches/" + id.String()
	if !confirmed(r) {
		b, err := s.q.BatchGet(r.Context(), id)
		if errors.Is(err, pgx.ErrNoRows) {
			return view{}, notFound("no batch %s", id)
		}
		if err != nil {
			return view{}, err
		}
		return confirm(r, confirmData{
			Question: fmt.Sprintf("Retry the %s failed jobs of batch %s?", thousands(b.FailedJobs), batchName(b)),
			Detail: "Each failed job of the batch, its chains' failed steps included, goes back on its queue with its attempts reset, " +
				"as a retry of a failed job does. The batch counts them pending again; its then job runs if they all succeed and it has not run.",
			Action: back + "/retry", Button: "Retry the failed jobs", Back: back,
		}), nil
	}
	var n int64
	err = s.act(r, func(ctx context.Context, q *dbsqlc.Queries) error {
		ids, err := q.BatchRetryFailed(ctx, id)
		n = int64(len(ids))
		return workflowError(err)
	})
	if err != nil {
		return view{}, err
	}
	return done(r, back, "batch_retried_n", n), nil
}

// cancelBatch: POST /batches/{id}/cancel, confirmed. The batch's waiting jobs are
// cancelled now, running ones finish, only its finally job still runs (pgq.cancel_batch).
func (s *server) cancelBatch(r *http.Request) (view, error) {
	id, err := pathID(r, "batch")
	if err != nil {
		return view{}, err
	}
	back := "/batches/" + id.String()
	if !confirmed(r) {
		b, err := s.q.BatchGet(r.Context(), id)
		if errors.Is(err, pgx.ErrNoRows) {
			return view{}, notFound("no batch %s", id)
		}
		if err != nil {
			return view{}, err
		}
		return confirm(r, confirmData{
			Question: "Cancel batch " + batchName(b) + "?",
			Detail: fmt.Sprintf("Its waiting jobs (%s unfinished members now) are cancelled at once, and any picked up later before it runs; "+
				"running jobs finish. Its then job will not run; its finally job runs once every member has finished. This cannot be undone.",
				thousands(b.UnfinishedJobs)),
			Action: back + "/cancel", Button: "Cancel the batch", Back: back,
		}), nil
	}
	var n int32
	err = s.act(r, func(ctx context.Context, q *dbsqlc.Queries) error {
		var err error
		n, err = q.BatchCancel(ctx, id)
		if err == nil && n < 0 {
			err = notFound("no batch %s", id)
		}
		return err
	})
	if err != nil {
		return view{}, err
	}
	return done(r, back, "batch_cancelled_n", int64(n)), nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
