package dashboard

import (
	"net/http"
	"time"

	"github.com/pgq-dev/pgq/internal/dbsqlc"
)

type overviewData struct {
	Queues   []*dbsqlc.PgqQueueOverview
	Totals   dbsqlc.PgqQueueOverview
	Chart    chart
	Actions  []*dbsqlc.PgqAction
	Findings int
	// Stuck are the findings about jobs that nothing will run: waiting in a queue no live
	// worker serves, or named so that nothing handles them (S87); Unserved the queues.
	Stuck    []*dbsqlc.PgqCheckFinding
	Unserved map[string]bool
	// FairBy is the payload field of each fair queue (S114).
	FairBy map[string]string
	Now    time.Time
	// Batches are the newest of the RunningBatches batches that have not finished.
	Batches        []batchRow
	RunningBatches int64
	// Stalled are the chains and batches that wait without moving (S95), the longest
	// waiting first; MoreStalled says there are more than shown.
	Stalled     []*dbsqlc.DashboardStalledListRow
	MoreStalled bool
}

// overviewBatches and overviewStalled are how many running batches and stalled chains
// and batches the overview shows.
const (
	overviewBatches = 5
	overviewStalled = 10
)

// overview: GET /. Per queue jobs by state (pgq.queue_overview: one pass over the live
// jobs), the last hour's attempts by outcome (outcomeCounts: the minutes not counted
// before, never the whole history), the running batches with their progress, the
// stalled chains and batches, the latest actions and the number of check findings.
func (s *server) overview(r *http.Request) (view, error) {
	ctx := r.Context()
	now := time.Now()
	queues, err := s.q.DashboardQueueList(ctx)
	if err != nil {
		return view{}, err
	}
	d := overviewData{Queues: queues, Now: now}
	for _, q := range queues {
		d.Totals.Ready += q.Ready
		d.Totals.Scheduled += q.Scheduled
		d.Totals.Retrying += q.Retrying
		d.Totals.Running += q.Running
		d.Totals.Failed += q.Failed
		d.Totals.OldestWait = max(d.Totals.OldestWait, q.OldestWait)
	}
	fair, err := s.q.DashboardFairQueueList(ctx)
	if err != nil {
		return view{}, err
	}
	d.FairBy = map[string]string{}
	for _, f := range fair {
		d.FairBy[f.Queue] = f.FairBy
	}
	outcomes, err := s.outcomes.since(ctx, s.q, chartStart(now), now)
	if err != nil {
		return view{}, err
	}
	d.Chart = newChart(outcomes, now)
	if d.Actions, err = s.q.DashboardActionList(ctx, dbsqlc.DashboardActionListParams{Max: 8}); err != nil {
		return view{}, err
	}
	findings, err := s.q.CheckList(ctx, dbsqlc.CheckListParams{
		WorkerTimeout: int32(s.opts.WorkerTimeout / time.Second), WorkerTries: int32(s.opts.WorkerTries)})
	if err != nil {
		return view{}, err
	}
	d.Findings = len(findings)
	d.Unserved = map[string]bool{}
	for _, f := range findings {
		switch f.Rule {
		case "queue_unserved":
			d.Unserved[deref(f.Queue).(string)] = true
			d.Stuck = append(d.Stuck, f)
		case "job_unhandled":
			d.Stuck = append(d.Stuck, f)
		}
	}
	batches, err := s.q.DashboardBatchList(ctx, dbsqlc.DashboardBatchListParams{UnfinishedOnly: true, Max: overviewBatches})
	if err != nil {
		return view{}, err
	}
	if d.Batches, err = s.batchRows(ctx, batches); err != nil {
		return view{}, err
	}
	if d.RunningBatches = int64(len(batches)); len(batches) == overviewBatches {
		if d.RunningBatches, err = s.q.DashboardBatchUnfinishedCount(ctx); err != nil {
			return view{}, err
		}
	}
	stalled, err := s.q.DashboardStalledList(ctx, overviewStalled+1)
	if err != nil {
		return view{}, err
	}
	d.Stalled, _ = trim(stalled, overviewStalled)
	d.MoreStalled = len(stalled) > overviewStalled
	return view{name: "overview", title: "Overview", data: d}, nil
}
