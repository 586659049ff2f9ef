package dashboard

import (
	"net/http"
	"time"

	"github.com/pgq-dev/pgq/internal/dbsqlc"
)

// workerWindow: a worker that finished an attempt this recently counts as live, even
// with nothing running now.
const workerWindow = 5 * time.Minute

// maxWorkerJobs caps the jobs listed under the workers.
const maxWorkerJobs = 1000

type workerRow struct {
	*dbsqlc.DashboardWorkerListRow
	Jobs []*dbsqlc.DashboardWorkerJobListRow
	More int64 // running jobs not listed
}

type workersData struct {
	Live    []*dbsqlc.PgqLiveWorker // the workers running now, as they record themselves (S87)
	Workers []workerRow
	Napping []*dbsqlc.DashboardNapListRow
	Window  time.Duration
	Capped  bool
}

// workers: GET /workers. The workers running now, with the queues each serves and its
// Go handlers (pgq.live_workers, S87); workers running jobs or seen finishing one
// lately, what each runs and when it last renewed a lease; and the idle sessions
// napping on each queue
// (a worker with nothing to do holds no job and finishes no attempt: its nap is the
// one trace it leaves).
func (s *server) workers(r *http.Request) (view, error) {
	ctx := r.Context()
	rows, err := s.q.DashboardWorkerList(ctx, time.Now().Add(-workerWindow))
	if err != nil {
		return view{}, err
	}
	jobs, err := s.q.DashboardWorkerJobList(ctx, maxWorkerJobs+1)
	if err != nil {
		return view{}, err
	}
	d := workersData{Window: workerWindow, Capped: len(jobs) > maxWorkerJobs}
	jobs, _ = trim(jobs, maxWorkerJobs)
	byWorker := map[string][]*dbsqlc.DashboardWorkerJobListRow{}
	for _, j := range jobs {
		w := deref(j.Worker).(string)
		byWorker[w] = append(byWorker[w], j)
	}
	for _, w := range rows {
		row := workerRow{DashboardWorkerListRow: w, Jobs: byWorker[w.Worker]}
		if w.Running != nil {
			row.More = *w.Running - int64(len(row.Jobs))
		}
		d.Workers = append(d.Workers, row)
	}
	if d.Napping, err = s.q.DashboardNapList(ctx); err != nil {
		return view{}, err
	}
	if d.Live, err = s.q.LiveWorkerList(ctx); err != nil {
		return view{}, err
	}
	return view{name: "workers", title: "Workers", data: d}, nil
}
